/**
 * A maker bot: holds an mk_ credential, renews its quote identity's lease every few seconds (the
 * dead-man switch: if this process stops, the lease lapses and its quotes stop being admitted),
 * and keeps a signed quote set published for one order. Exits non-zero with a clear message when
 * the lease cannot be kept.
 */
import { getAddress } from "viem"
import { privateKeyToAccount } from "viem/accounts"
import { quoteSetTypedData } from "../../src/Domain/EscrowTypedData.ts"
import { quoteFromWire } from "../../src/Domain/WireQuote.ts"
import { type MakerOptions, parseMakerOptions, UsageError } from "./MakerOptions.ts"

interface Venue {
  readonly id: string
  readonly chain_id: number
  readonly token: string
  readonly escrow: string
}

class MakerStop extends Error {}

const call = async (o: MakerOptions, method: string, path: string, body?: unknown) => {
  const res = await fetch(`${o.api}${path}`, {
    method,
    headers: { authorization: `Bearer ${o.credential}`, ...(body ? { "content-type": "application/json" } : {}) },
    ...(body ? { body: JSON.stringify(body) } : {}),
    signal: AbortSignal.timeout(5000),
  })
  const json = (await res.json().catch(() => ({}))) as Record<string, unknown>
  return { status: res.status, json }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

export const runMaker = async (o: MakerOptions, log: (line: string) => void = console.log) => {
  const signer = privateKeyToAccount(o.signerKey)
  const venues = ((await (await fetch(`${o.api}/v1/venues`)).json()) as { data: Array<Venue> }).data
  const info = (await (await fetch(`${o.api}/v1/info`)).json()) as {
    limits: { quote_validity_seconds_max: number }
    settlement: { lock_cutoff_seconds: number }
  }
  if (
    o.validitySeconds <= info.settlement.lock_cutoff_seconds ||
    o.validitySeconds > info.limits.quote_validity_seconds_max
  ) {
    throw new UsageError(
      `--validity must be more than ${info.settlement.lock_cutoff_seconds} s (the lock cutoff) and at most ` +
        `${info.limits.quote_validity_seconds_max} s (this deployment's limits)`,
    )
  }
  const started = Date.now()
  let leaseExpiresAt = 0
  let generation = ""
  let published = { generation: "", validUntil: 0, sequence: 0 }
  const renew = async () => {
    const res = await call(o, "PUT", `/v1/quote-identities/${o.identity}/lease`, { ttl_seconds: o.ttlSeconds })
    if (res.status !== 200) {
      const error = (res.json.error ?? {}) as { code?: string; message?: string }
      // A revoked or unknown credential never comes back: stop at once.
      if (res.status === 401 || res.status === 403 || res.status === 404 || res.status === 409) {
        throw new MakerStop(`lease refused (${res.status} ${error.code ?? ""}: ${error.message ?? ""})`)
      }
      return false
    }
    leaseExpiresAt = Date.parse(String(res.json.expires_at))
    generation = String(res.json.generation)
    return true
  }
  const publish = async () => {
    const makerVenue = venues.find((v) => v.id === o.venue)
    if (!makerVenue) throw new MakerStop(`unknown venue ${o.venue}`)
    // Unix milliseconds: strictly increasing across restarts without asking the service.
    const sequence = Math.max(published.sequence + 1, Date.now())
    const validUntil = Math.floor(Date.now() / 1000) + o.validitySeconds
    const quotes = o.quotes.map((q) => {
      const v = venues.find((x) => x.id === q.venue)
      if (!v) throw new MakerStop(`unknown venue ${q.venue}`)
      return {
        venue: v.id,
        chain_id: v.chain_id,
        token: v.token,
        recipient: q.recipient,
        supply: q.supply,
        receive: q.receive,
        min_fill: q.minFill,
      }
    })
    const signature = await signer.signTypedData(
      quoteSetTypedData(makerVenue.chain_id, getAddress(makerVenue.escrow), {
        orderId: o.order,
        sequence: BigInt(sequence),
        generation: BigInt(generation),
        quoteSize: BigInt(o.quoteSize),
        validUntil: BigInt(validUntil),
        quotes: quotes.map(quoteFromWire),
      }),
    )
    const res = await call(o, "PUT", `/v1/orders/${o.order}/quotes`, {
      sequence,
      valid_until: validUntil,
      quote_size: o.quoteSize,
      identity_generation: generation,
      quotes,
      signature,
    })
    if (res.status !== 200) {
      const error = (res.json.error ?? {}) as { code?: string; message?: string }
      log(`quote set ${sequence} refused: ${error.code} ${error.message}`)
      return
    }
    published = { generation, validUntil, sequence }
    log(
      `published quote set ${sequence} (generation ${generation}, valid until ${new Date(validUntil * 1000).toISOString()})`,
    )
  }
  while (o.runSeconds === 0 || Date.now() - started < o.runSeconds * 1000) {
    let renewed = false
    try {
      renewed = await renew()
    } catch (e) {
      if (e instanceof MakerStop) throw e
    }
    if (!renewed && Date.now() >= leaseExpiresAt - o.renewSeconds * 1000) {
      throw new MakerStop("the lease could not be renewed before it expires")
    }
    const stale =
      published.generation !== generation || published.validUntil * 1000 - Date.now() < (o.validitySeconds * 1000) / 2
    if (renewed && stale) await publish()
    await sleep(o.renewSeconds * 1000)
  }
}

const main = async () => {
  try {
    const options = parseMakerOptions(process.argv.slice(2), process.env)
    await runMaker(options)
  } catch (e) {
    const message = e instanceof Error ? e.message : String(e)
    console.error(`maker: ${message}`)
    process.exit(e instanceof UsageError ? 64 : 2)
  }
}

if (import.meta.url === `file://${process.argv[1]}`) void main()
