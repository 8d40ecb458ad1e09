/**
 * `npm run maker -- run`, the maker bot: holds an mk_ credential, renews its quote identity's lease every few seconds (the
 * dead-man switch: if this process stops, the lease lapses and its quotes stop being admitted),
 * and keeps a signed quote set published for one order, replaced while takes can still use it: the service offers a
 * set only while more than lock_cutoff_seconds of it is left, and the bot replaces it halfway through that part
 * (MakerOptions republishBeforeMs). The service being unreachable (a network fault, a 5xx,
 * 408 or 429) is retried with capped, jittered backoff (infra/maker/ServiceFaults.ts), one log line per change; a
 * lapsed lease is simply renewed again when the service answers (a new generation: the set is republished). Only a
 * permanent refusal (of the lease: any other 4xx; of a quote set: any 4xx but LEASE_EXPIRED and QUOTE_STALE, which a
 * renewal cures) stops quoting: its code and message are printed, and the process exits non-zero once the reveal
 * loop has nothing left it could reveal. Every `--heartbeat` seconds one line: the lease's generation and expiry,
 * the current quote set, and (v2) the fills served, i.e. the payments this process revealed.
 *
 * For an order on the v2 escrow (`--escrow-v2` names its venue; DESIGN §10) each set also carries the maker's
 * hashlocks: derived from secretKeyOf(signer key) over (maker chain, maker v2 escrow, owner, order id, sequence), so
 * only their hashes and root leave this process, never a secret. Beside the lease loop, the reveal loop
 * (src/Client/MakerRevealLoop.ts) watches its own endpoints (`--rpc`) and reveals by its own claimPayment from
 * MAKER_PAYEE_KEY; it keeps no state, so a restarted bot reveals what is still open. It never waits on the service:
 * it runs through an outage and after a refusal, until every payment it could still reveal is past its cutoff
 * (no lock under a set outlives valid_until + MAX_LOCK) or SIGINT/SIGTERM (a payment left unrevealed refunds to the
 * taker and counts as a fade).
 */

import type { Effect } from "effect"
import {
  createPublicClient,
  defineChain,
  encodeFunctionData,
  getAddress,
  type Hex,
  http,
  type TransactionSerializable,
} from "viem"
import { privateKeyToAccount } from "viem/accounts"
import { settlementEscrowV2Abi } from "../../src/Chain/artifacts/SettlementEscrowV2.ts"
import type { RawClient } from "../../src/Client/ApiClient.ts"
import { makeRevealLoop } from "../../src/Client/MakerRevealLoop.ts"
import { quoteSetTypedData } from "../../src/Domain/EscrowTypedData.ts"
import { type QuoteSetV2, quoteSetV2TypedData } from "../../src/Domain/EscrowTypedDataV2.ts"
import { deriveHashlockSet, secretKeyOf } from "../../src/Domain/Hashlocks.ts"
import { quoteFromWire, quoteV2FromWire } from "../../src/Domain/WireQuote.ts"
import { pinChainIds } from "./ChainPins.ts"
import { apiOf, errorName } from "./MakerHttp.ts"
import { chooseValidity, type MakerOptions, type MakerV2Options, republishBeforeMs } from "./MakerOptions.ts"
import { backoffMs, reachability, ServiceRefused, ServiceUnavailable, stopper } from "./ServiceFaults.ts"

interface Venue {
  readonly id: string
  readonly chain_id: number
  readonly token: string
  readonly escrow: string
}

export class MakerStop extends Error {}

/** Quote set refusals that a renewal cures (the set is made again under the current generation). */
const RETRIED_SET_REFUSALS: ReadonlySet<string> = new Set(["LEASE_EXPIRED", "QUOTE_STALE"])

/** A quote set the service will not admit as made (its code and message): quoting stops. */
class QuoteSetRefused extends Error {
  constructor(readonly error: ServiceRefused) {
    super(error.message)
  }
}

/** First backoff ceiling (ms); the cap is the renewal interval, so a returning service is seen within one renewal. */
const BACKOFF_BASE_MS = 250

/** How many of its own published v2 sets the bot remembers (the reveal loop's fallback to a lock's calldata). */
const KNOWN_SETS = 64

/** The v2 reveal loop on the maker's own endpoints, its claimPayment sent from the payee key. */
const revealLoop = (
  o: MakerOptions,
  v2: MakerV2Options,
  venues: ReadonlyArray<Venue>,
  known: () => ReadonlyArray<QuoteSetV2>,
  log: (line: string) => void,
) => {
  const venue = (id: string) => {
    const v = venues.find((x) => x.id === id)
    if (!v) throw new MakerStop(`unknown venue ${id}`)
    const url = v2.rpc[id]!
    const chain = defineChain({
      id: v.chain_id,
      name: v.id,
      nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 },
      rpcUrls: { default: { http: [url] } },
    })
    // pollingInterval: how often a reveal's receipt is looked for (viem's default without a chain block time is 4 s).
    return { v, chain, reader: createPublicClient({ chain, transport: http(url), pollingInterval: v2.pollMs }) }
  }
  const maker = venue(o.venue)
  const readers = [maker.reader]
  const payee = privateKeyToAccount(v2.payeeKey)
  const fromBlocks: Record<number, bigint> = {}
  const takerChains: Record<number, { escrow: `0x${string}`; payee: `0x${string}` }> = {}
  const takers: Parameters<typeof makeRevealLoop>[1]["takers"] = {}
  for (const q of o.quotes) {
    const t = venue(q.venue)
    const escrow = getAddress(v2.escrows[q.venue]!)
    takerChains[t.v.chain_id] = { escrow, payee: getAddress(q.recipient) }
    if (v2.fromBlocks[q.venue] !== undefined) fromBlocks[t.v.chain_id] = v2.fromBlocks[q.venue]!
    readers.push(t.reader)
    const oneAtATime = serial()
    Object.assign(takers, {
      [t.v.chain_id]: {
        reader: t.reader,
        claimPayment: async (digest: Hex, secret: Hex) => {
          const data = encodeFunctionData({
            abi: settlementEscrowV2Abi,
            functionName: "claimPayment",
            args: [digest, secret],
          })
          // Gas and fees are asked for all reveals at once (a revert, e.g. a payment no longer held, fails here).
          const request = await t.reader.prepareTransactionRequest({
            account: payee,
            chain: t.chain,
            to: escrow,
            data,
            parameters: ["chainId", "fees", "gas", "type"],
          })
          // The nonce and the send, one reveal at a time on this chain: each send reads the key's pending nonce from
          // the endpoint after the previous one entered its pool, so concurrent reveals never share a nonce, and a
          // send that fails leaves no gap (no local counter to drift, as viem's nonceManager's would after a failed or
          // dropped send; nothing to restore after a restart). The loop awaits the receipts together (`included`).
          return oneAtATime(async () => {
            const nonce = await t.reader.getTransactionCount({ address: payee.address, blockTag: "pending" })
            // The prepared request is a serializable transaction but for its typing (optional blob fields).
            const serializedTransaction = await payee.signTransaction({ ...request, nonce } as TransactionSerializable)
            return t.reader.sendRawTransaction({ serializedTransaction })
          })
        },
        included: async (hash: Hex) => {
          const receipt = await t.reader.waitForTransactionReceipt({ hash })
          if (receipt.status !== "success") throw new Error(`claimPayment ${hash} reverted`)
        },
      },
    })
  }
  const loop = makeRevealLoop(
    {
      makerChainId: maker.v.chain_id,
      makerEscrow: getAddress(v2.escrows[o.venue]!),
      takerChains,
      revealCutoffSeconds: BigInt(v2.revealCutoffSeconds),
      orders: [{ owner: getAddress(v2.owner), orderId: o.order }],
      fromBlocks: {
        ...fromBlocks,
        ...(v2.fromBlocks[o.venue] === undefined ? {} : { [maker.v.chain_id]: v2.fromBlocks[o.venue]! }),
      },
    },
    {
      maker: maker.reader,
      takers,
      key: secretKeyOf(o.signerKey),
      nowSeconds: () => BigInt(Math.floor(Date.now() / 1000)),
      log: (line) => log(`reveal loop: ${line}`),
      knownSets: known,
    },
  )
  return { ...loop, ...blockWatch(readers, v2.pollMs) }
}

/** `f`s run one after another, in call order (a failed one does not stop the next). */
const serial = () => {
  let tail: Promise<unknown> = Promise.resolve()
  return <A>(f: () => Promise<A>): Promise<A> => {
    const run = tail.then(f, f)
    tail = run.catch(() => undefined)
    return run
  }
}

/**
 * The endpoints' heads, and a wait until any of them shows a block other than `since` (asked every `pollMs`), at
 * most `maxMs`, or the stop: the reveal loop reads the heads before a pass and waits from those, so a block mined
 * during the pass (a payment that turned final meanwhile) starts the next pass without a poll's delay, and
 * otherwise the next pass starts as soon as a payment or a lock may have turned final, not a whole renewal later.
 * Passes start at most once per `pollMs` (from `startedAt`, when the last one began): on a chain with blocks faster
 * than a pass, the maker's endpoints see no more reads than before.
 */
const blockWatch = (
  readers: ReadonlyArray<{ getBlockNumber: (a: { cacheTime: number }) => Promise<bigint> }>,
  pollMs: number,
) => {
  const heads = () =>
    Promise.all(readers.map((r) => r.getBlockNumber({ cacheTime: 0 }).catch(() => undefined))).then((h) => h.join())
  const newBlock = async (since: string, startedAt: number, maxMs: number, stop: ReturnType<typeof stopper>) => {
    const end = Date.now() + maxMs
    if ((await heads()) !== since) return stop.sleep(Math.max(0, startedAt + pollMs - Date.now()))
    while (!stop.stopped() && Date.now() < end) {
      await stop.sleep(Math.min(pollMs, end - Date.now()))
      if ((await heads()) !== since) return
    }
  }
  return { heads, newBlock }
}

export const runMaker = async (
  o: MakerOptions,
  log: (line: string) => void = console.log,
  stop: ReturnType<typeof stopper> = stopper(),
) => {
  const signer = privateKeyToAccount(o.signerKey)
  // The typed client: public reads without a bearer, the lease and quote routes with the credential.
  const publicApi = apiOf(o.api)
  const api = apiOf(o.api, o.credential)
  const service = reachability(log)
  const started = Date.now()
  const running = () => !stop.stopped() && (o.runSeconds === 0 || Date.now() - started < o.runSeconds * 1000)
  /** A public read, retried through an outage (it is needed before anything else can start). */
  const read = async <A, E>(f: (c: RawClient) => Effect.Effect<A, E>): Promise<A | undefined> => {
    for (let attempt = 0; running(); attempt++) {
      try {
        const json = await publicApi(f)
        service.ok()
        return json
      } catch (e) {
        if (!(e instanceof ServiceUnavailable)) throw e
        service.fault(e.reason)
        await stop.sleep(backoffMs(attempt, BACKOFF_BASE_MS, o.renewSeconds * 1000, e.retryAfterMs))
      }
    }
    return undefined
  }
  const listed = (await read((c) => c.info.venues()))?.data
  if (listed === undefined) return
  // v2: every chain id this bot signs for (quote sets, hashlocks, reveals) is its own endpoint's (ChainPins.ts).
  const venues =
    o.v2 === undefined ? listed : await pinChainIds(listed, o.v2.rpc, [o.venue, ...o.quotes.map((q) => q.venue)])
  if (o.revealOnly && o.v2 !== undefined) return runRevealOnly(o, o.v2, venues, log, stop)
  const info = await read((c) => c.info.info())
  if (info === undefined) return
  // A v2 set lives at most MAX_QUOTE_LIFE (valid_until − issued_at); checked when the deployment shows it.
  const validitySeconds = chooseValidity(
    o.validitySeconds,
    {
      lockCutoff: info.settlement.lock_cutoff_seconds,
      validityMax: info.limits.quote_validity_seconds_max,
      maxQuoteLife: info.settlement.max_quote_life_seconds,
    },
    o.v2 !== undefined,
  )
  // Replaced while takes can still use it (more than the lock cutoff left), with a margin: see republishBeforeMs.
  const republishBefore = republishBeforeMs(validitySeconds, info.settlement.lock_cutoff_seconds)
  log(
    `maker: quoting order ${o.order} on ${o.venue} (settlement v${o.v2 === undefined ? 1 : 2}) for identity ` +
      `${o.identity}: ${o.quotes.map((q) => `${q.venue} supply ${q.supply} per receive ${q.receive}, min fill ${q.minFill}`).join("; ")}` +
      `; quote size ${o.quoteSize}, sets valid ${validitySeconds} s and replaced when less than ${republishBefore / 1000} s ` +
      `is left (lock cutoff ${info.settlement.lock_cutoff_seconds} s), lease ttl ${o.ttlSeconds} s renewed every ${o.renewSeconds} s`,
  )
  const known: Array<QuoteSetV2> = []
  const reveals = o.v2 === undefined ? undefined : revealLoop(o, o.v2, venues, () => known, log)
  let generation = ""
  let published = { generation: "", validUntil: 0, sequence: 0 }
  // Set once the lease or a quote set is refused for good (a revoked or unknown credential or identity, a set the
  // service will never admit): printed at exit.
  let refused: { readonly what: string; readonly error: ServiceRefused } | undefined
  let leaseExpiresAt = ""
  let served = 0
  const renew = async () => {
    const json = await api((c) =>
      c.quoteIdentities.renewLease({ path: { id: o.identity }, payload: { ttl_seconds: o.ttlSeconds } }),
    )
    generation = String(json.generation)
    leaseExpiresAt = String(json.expires_at)
  }
  const publish = async () => {
    const makerVenue = venues.find((v) => v.id === o.venue)
    if (!makerVenue) throw new MakerStop(`unknown venue ${o.venue}`)
    // Unix milliseconds: strictly increasing across restarts without asking the service.
    const sequence = Math.max(published.sequence + 1, Date.now())
    const validUntil = Math.floor(Date.now() / 1000) + validitySeconds
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
    const common = {
      sequence,
      valid_until: validUntil,
      quote_size: o.quoteSize,
      identity_generation: generation,
    }
    let body: Record<string, unknown>
    let v2Set: QuoteSetV2 | undefined
    if (o.v2 === undefined) {
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
      body = { ...common, quotes, signature }
    } else {
      // The escrows are the maker's reviewed ones (flags), not the service's word.
      const makerEscrow = getAddress(o.v2.escrows[o.venue]!)
      const v2Quotes = quotes.map((q) => ({ ...q, escrow: getAddress(o.v2!.escrows[q.venue]!) }))
      const owner = getAddress(o.v2.owner)
      const hashlocks = deriveHashlockSet(
        secretKeyOf(o.signerKey),
        { chainId: BigInt(makerVenue.chain_id), makerEscrow, owner, orderId: o.order, sequence: BigInt(sequence) },
        o.v2.hashlockCount,
      )
      const issuedAt = Math.floor(Date.now() / 1000)
      v2Set = {
        owner,
        orderId: o.order,
        sequence: BigInt(sequence),
        generation: BigInt(generation),
        quoteSize: BigInt(o.quoteSize),
        issuedAt: BigInt(issuedAt),
        validUntil: BigInt(validUntil),
        hashlockRoot: hashlocks.root,
        hashlockCount: hashlocks.count,
        quotes: v2Quotes.map(quoteV2FromWire),
      }
      const signature = await signer.signTypedData(quoteSetV2TypedData(makerVenue.chain_id, makerEscrow, v2Set))
      // Only the hashlocks (hashes) and their root leave the process; the secrets stay derivable from the key.
      body = {
        ...common,
        quotes: v2Quotes,
        issued_at: issuedAt,
        hashlock_root: hashlocks.root,
        hashlock_count: hashlocks.count,
        hashlocks: hashlocks.hashlocks,
        signature,
      }
    }
    // The set may reach the service even when its answer is lost: the reveal loop keeps it either way.
    if (v2Set !== undefined) known.splice(0, Math.max(0, known.push(v2Set) - KNOWN_SETS))
    try {
      await api((c) => c.orders.publishQuotes({ path: { id: o.order }, payload: body as never }))
    } catch (e) {
      if (!(e instanceof ServiceRefused)) throw e
      log(`quote set ${sequence} refused: ${e.code} ${e.detail}`)
      // A generation the lease has moved past, or a sequence overtaken: made again at the next renewal. Anything
      // else (a bad quote, min_fill > supply, quote_size over the order's quotable, a closed order) would be refused
      // again: quoting stops with its code and message.
      if (RETRIED_SET_REFUSALS.has(e.code)) return
      throw new QuoteSetRefused(e)
    }
    published = { generation, validUntil, sequence }
    log(
      `published quote set ${sequence} (generation ${generation}, valid until ${new Date(validUntil * 1000).toISOString()})`,
    )
  }
  // The reveal loop runs beside the lease loop (a slow chain never delays a renewal) and never waits on the service.
  // After a refusal it runs on until no payment can still be revealed: a lock is made under a set before its
  // valid_until and holds at most MAX_LOCK, so past the last set's valid_until + MAX_LOCK, with nothing under watch,
  // every payment this maker could reveal is past its cutoff.
  const maxLockMs = (info.settlement.max_lock_seconds ?? validitySeconds) * 1000
  const revealHorizon = () => Math.max(published.validUntil * 1000, started + validitySeconds * 1000) + maxLockMs
  const revealing = (async () => {
    while (reveals !== undefined && running()) {
      const startedAt = Date.now()
      const before = await reveals.heads()
      const outcomes = await reveals.tick().catch((e) => {
        log(`reveal loop: pass failed (${errorName(e)}); retrying`)
        return []
      })
      served += outcomes.filter((x) => x.kind === "revealed").length
      if (refused !== undefined && reveals.watching().length === 0 && Date.now() > revealHorizon()) return
      await reveals.newBlock(before, startedAt, o.renewSeconds * 1000, stop)
    }
  })()
  // Heartbeat lines until the loops end (its own stopper: a sleep the end of the loops cuts short).
  const beats = stopper()
  const heartbeat = (async () => {
    if (o.heartbeatSeconds === 0) return
    for (;;) {
      await beats.sleep(o.heartbeatSeconds * 1000)
      if (!running() || refused !== undefined) return
      const left = Math.round((Date.parse(leaseExpiresAt) - Date.now()) / 1000)
      log(
        `heartbeat: lease generation ${generation || "-"} until ${leaseExpiresAt || "-"} (${Number.isFinite(left) ? left : "?"} s left)` +
          `, quote set ${published.sequence || "-"} valid until ${published.validUntil === 0 ? "-" : new Date(published.validUntil * 1000).toISOString()}` +
          (reveals === undefined ? "" : `, fills served ${served} (payments revealed)`) +
          (service.isDown() ? ", service unreachable" : ""),
      )
    }
  })()
  await leaseLoop()
  await revealing
  beats.stop()
  await heartbeat
  if (refused !== undefined) throw new MakerStop(`${refused.what} refused (${refused.error.message})`)
  async function leaseLoop() {
    let attempt = 0
    while (running()) {
      try {
        await renew()
        service.ok()
        attempt = 0
        // A lease that lapsed during an outage comes back with a new generation: the set is made again under it.
        const stale = published.generation !== generation || published.validUntil * 1000 - Date.now() < republishBefore
        if (stale) await publish()
        await stop.sleep(o.renewSeconds * 1000)
      } catch (e) {
        if (e instanceof ServiceRefused || e instanceof QuoteSetRefused) {
          refused = e instanceof QuoteSetRefused ? { what: "quote set", error: e.error } : { what: "lease", error: e }
          if (reveals !== undefined) {
            log(
              `quoting stopped: ${refused.what} refused (${refused.error.message}); revealing until open payments are past their cutoff`,
            )
          }
          return
        }
        if (!(e instanceof ServiceUnavailable)) throw e
        service.fault(e.reason)
        await stop.sleep(backoffMs(attempt++, BACKOFF_BASE_MS, o.renewSeconds * 1000, e.retryAfterMs))
      }
    }
  }
}

/**
 * The reveal loop alone (`--reveal-only`): no credential, lease or publication. The venues' chain ids come from the
 * public /v1/venues; a wrong one only makes every read refuse (each read names the chain id its endpoint reports).
 */
const runRevealOnly = async (
  o: MakerOptions,
  v2: MakerV2Options,
  venues: ReadonlyArray<Venue>,
  log: (line: string) => void,
  stop: ReturnType<typeof stopper>,
) => {
  const loop = revealLoop(o, v2, venues, () => [], log)
  const started = Date.now()
  log("reveal loop only: watching payments to this maker")
  while (!stop.stopped() && (o.runSeconds === 0 || Date.now() - started < o.runSeconds * 1000)) {
    const startedAt = Date.now()
    const before = await loop.heads()
    await loop.tick().catch((e) => log(`reveal loop: pass failed (${errorName(e)}); retrying`))
    await loop.newBlock(before, startedAt, o.renewSeconds * 1000, stop)
  }
}
