import { parseArgs } from "node:util"

export interface QuoteSpec {
  readonly venue: string
  readonly recipient: string
  readonly supply: string
  readonly receive: string
  readonly minFill: string
}

export interface MakerOptions {
  readonly api: string
  readonly credential: string
  readonly identity: string
  readonly signerKey: `0x${string}`
  readonly order: `0x${string}`
  /** The order's venue (its escrow's domain signs the quote sets). */
  readonly venue: string
  readonly quotes: ReadonlyArray<QuoteSpec>
  readonly quoteSize: string
  /** Lease time-to-live requested at each renewal (5–120 s). */
  readonly ttlSeconds: number
  /** Renewal period; a few seconds, well inside the ttl (BitMEX/Kraken cancel-after style). */
  readonly renewSeconds: number
  /** How long each published quote set stays valid. */
  readonly validitySeconds: number
  /** Stop after this many seconds (0: run until stopped). */
  readonly runSeconds: number
}

const USAGE = `usage: npm run maker -- --api URL --identity UUID --order 0x… --venue VENUE --quote VENUE:RECIPIENT:SUPPLY:RECEIVE:MIN_FILL
       [--quote …] --quote-size AMOUNT [--ttl 30] [--renew 5] [--validity 60] [--run 0]
  env: MAKER_CREDENTIAL (mk_…), MAKER_SIGNER_KEY (0x… private key of the identity's signer)`

export class UsageError extends Error {}

/** Reads flags and the two secrets (from the environment only, never from argv or logs). */
export const parseMakerOptions = (argv: ReadonlyArray<string>, env: NodeJS.ProcessEnv): MakerOptions => {
  const { values } = parseArgs({
    args: [...argv],
    options: {
      api: { type: "string" },
      identity: { type: "string" },
      order: { type: "string" },
      venue: { type: "string" },
      quote: { type: "string", multiple: true },
      "quote-size": { type: "string" },
      ttl: { type: "string", default: "30" },
      renew: { type: "string", default: "5" },
      validity: { type: "string", default: "60" },
      run: { type: "string", default: "0" },
    },
  })
  const need = (name: string, value: string | undefined) => {
    if (!value) throw new UsageError(`missing ${name}\n${USAGE}`)
    return value
  }
  const credential = need("MAKER_CREDENTIAL", env.MAKER_CREDENTIAL)
  if (!credential.startsWith("mk_")) throw new UsageError("MAKER_CREDENTIAL must be an mk_ credential")
  const signerKey = need("MAKER_SIGNER_KEY", env.MAKER_SIGNER_KEY)
  if (!/^0x[0-9a-fA-F]{64}$/.test(signerKey)) throw new UsageError("MAKER_SIGNER_KEY must be a 32-byte hex key")
  const order = need("--order", values.order)
  if (!/^0x[0-9a-fA-F]{64}$/.test(order)) throw new UsageError("--order must be a 32-byte hex order id")
  const quotes = (values.quote ?? []).map((q) => {
    const [venue, recipient, supply, receive, minFill, ...rest] = q.split(":")
    if (!venue || !recipient || !supply || !receive || !minFill || rest.length > 0) {
      throw new UsageError(`bad --quote ${q}\n${USAGE}`)
    }
    return { venue, recipient, supply, receive, minFill }
  })
  if (quotes.length === 0) throw new UsageError(`at least one --quote\n${USAGE}`)
  const int = (name: string, v: string, min: number, max: number) => {
    const n = Number(v)
    if (!Number.isInteger(n) || n < min || n > max) throw new UsageError(`${name} must be an integer in ${min}..${max}`)
    return n
  }
  const ttlSeconds = int("--ttl", values.ttl!, 5, 120)
  const renewSeconds = int("--renew", values.renew!, 1, 60)
  if (renewSeconds * 2 > ttlSeconds) throw new UsageError("--renew must be at most half of --ttl")
  return {
    api: need("--api", values.api).replace(/\/$/, ""),
    credential,
    identity: need("--identity", values.identity),
    signerKey: signerKey as `0x${string}`,
    order: order as `0x${string}`,
    venue: need("--venue", values.venue),
    quotes,
    quoteSize: need("--quote-size", values["quote-size"]),
    ttlSeconds,
    renewSeconds,
    validitySeconds: int("--validity", values.validity!, 10, 3600),
    runSeconds: int("--run", values.run!, 0, 86_400),
  }
}
