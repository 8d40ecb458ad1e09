import type { MakerState } from "./MakerState.ts"

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
  /**
   * How long each published quote set stays valid; undefined: chosen from the deployment's /v1/info (120 s when it
   * fits: more than the lock cutoff, at most quote_validity_seconds_max and, for v2, max_quote_life_seconds).
   */
  readonly validitySeconds: number | undefined
  /** Seconds between heartbeat lines (lease expiry, quote set, fills served); 0: none. */
  readonly heartbeatSeconds: number
  /** Stop after this many seconds (0: run until stopped). */
  readonly runSeconds: number
  /**
   * v2 only: run the reveal loop alone (no credential, lease or publication), e.g. after the credential was revoked
   * while payments to this maker are still open. Needs the v2 flags and the `--quote` venues and recipients.
   */
  readonly revealOnly: boolean
  /**
   * Settlement v2 (an order on the v2 escrow): set when `--escrow-v2` names the order's venue. The escrows are the
   * ones this maker reviewed (never read from the service); `rpc` are its own endpoints for the reveal loop.
   */
  readonly v2?: MakerV2Options
}

export interface MakerV2Options {
  /** The order's owner (the v2 escrow keys orders by owner and id; the QuoteSet signs it). */
  readonly owner: `0x${string}`
  /** Per venue id: its reviewed SettlementEscrowV2. */
  readonly escrows: Readonly<Record<string, `0x${string}`>>
  /** Per venue id: the maker's own JSON-RPC endpoint (the order's venue and every quoted venue). */
  readonly rpc: Readonly<Record<string, string>>
  /** Per venue id: the first block the reveal loop scans (e.g. the v2 escrow's deployment block); default 0. */
  readonly fromBlocks: Readonly<Record<string, bigint>>
  /** Hashlocks per quote set (each fill uses one; 800 × 69 bytes keeps the body under the 64 KiB limit). */
  readonly hashlockCount: number
  /** Reveal only with at least this many seconds left before takerExpiry (DESIGN §6 "Timing": C). */
  readonly revealCutoffSeconds: number
  /** The key that sends claimPayment on the taker chains (pays their gas): MAKER_PAYEE_KEY, else the signer key. */
  readonly payeeKey: `0x${string}`
  /**
   * Milliseconds between the reveal loop's polls of its endpoints (`--poll-ms`): for a reveal's receipt, and for a
   * new block that starts the next pass. About the chains' block time, or less (devnet: 250).
   */
  readonly pollMs: number
}

const USAGE = "see `npm run maker -- run --help`"

export class UsageError extends Error {}

/** The `run` command's flags as the CLI parsed them (numbers as text: their ranges are checked here). */
export interface RunFlags {
  readonly api?: string | undefined
  readonly identity?: string | undefined
  readonly order?: string | undefined
  readonly venue?: string | undefined
  readonly quote: ReadonlyArray<string>
  readonly "quote-size"?: string | undefined
  readonly ttl: string
  readonly renew: string
  readonly validity?: string | undefined
  readonly run: string
  readonly heartbeat: string
  readonly owner?: string | undefined
  readonly "escrow-v2": ReadonlyArray<string>
  readonly rpc: ReadonlyArray<string>
  readonly "from-block": ReadonlyArray<string>
  readonly hashlocks: string
  readonly "reveal-cutoff": string
  readonly "reveal-only": boolean
  readonly "poll-ms"?: string | undefined
}

const pairsOf = (record: Readonly<Record<string, string>> | undefined) =>
  Object.entries(record ?? {}).map(([k, v]) => `${k}=${v}`)

/**
 * The flags, with what the state file written by `setup` holds for those not given (flags win), and the two secrets
 * from the environment (MAKER_CREDENTIAL, MAKER_SIGNER_KEY) or else the state file: never from argv or logs.
 */
export const resolveMakerOptions = (flags: RunFlags, env: NodeJS.ProcessEnv, state: MakerState = {}): MakerOptions => {
  const v2State = state.escrow_version === 2
  const values = {
    ...flags,
    api: flags.api ?? state.api,
    identity: flags.identity ?? state.identity_id,
    order: flags.order ?? state.order_id,
    venue: flags.venue ?? state.venue,
    quote: flags.quote.length > 0 ? flags.quote : (state.quotes ?? []),
    "quote-size": flags["quote-size"] ?? state.quote_size,
    owner: flags.owner ?? (v2State ? state.owner : undefined),
    "escrow-v2": flags["escrow-v2"].length > 0 ? flags["escrow-v2"] : v2State ? pairsOf(state.escrows_v2) : [],
    rpc: flags.rpc.length > 0 ? flags.rpc : v2State ? pairsOf(state.rpc) : [],
    "from-block": flags["from-block"].length > 0 ? flags["from-block"] : v2State ? pairsOf(state.from_blocks) : [],
  }
  const need = (name: string, value: string | undefined) => {
    if (!value) throw new UsageError(`missing ${name} (${USAGE})`)
    return value
  }
  const revealOnly = values["reveal-only"] === true
  const credential = revealOnly ? "" : need("MAKER_CREDENTIAL", env.MAKER_CREDENTIAL || state.credential)
  if (!revealOnly && !credential.startsWith("mk_")) throw new UsageError("MAKER_CREDENTIAL must be an mk_ credential")
  const signerKey = need("MAKER_SIGNER_KEY", env.MAKER_SIGNER_KEY || state.signer_key)
  if (!/^0x[0-9a-fA-F]{64}$/.test(signerKey)) throw new UsageError("MAKER_SIGNER_KEY must be a 32-byte hex key")
  const order = need("--order", values.order)
  if (!/^0x[0-9a-fA-F]{64}$/.test(order)) throw new UsageError("--order must be a 32-byte hex order id")
  const quotes = values.quote.map((q) => {
    const [venue, recipient, supply, receive, minFill, ...rest] = q.split(":")
    if (!venue || !recipient || !supply || !receive || !minFill || rest.length > 0) {
      throw new UsageError(`bad --quote ${q} (${USAGE})`)
    }
    return { venue, recipient, supply, receive, minFill }
  })
  if (quotes.length === 0) throw new UsageError(`at least one --quote (${USAGE})`)
  const int = (name: string, v: string, min: number, max: number) => {
    const n = Number(v)
    if (!Number.isInteger(n) || n < min || n > max) throw new UsageError(`${name} must be an integer in ${min}..${max}`)
    return n
  }
  const ttlSeconds = int("--ttl", values.ttl, 5, 120)
  const renewSeconds = int("--renew", values.renew, 1, 60)
  if (renewSeconds * 2 > ttlSeconds) throw new UsageError("--renew must be at most half of --ttl")
  const venue = need("--venue", values.venue)
  const v2 = parseV2(values, env, signerKey as `0x${string}`, venue, quotes, int)
  if (revealOnly && v2 === undefined) throw new UsageError("--reveal-only is for a v2 order (--escrow-v2 …)")
  return {
    api: need("--api", values.api).replace(/\/$/, ""),
    credential,
    identity: revealOnly ? "" : need("--identity", values.identity),
    signerKey: signerKey as `0x${string}`,
    order: order as `0x${string}`,
    venue,
    quotes,
    quoteSize: revealOnly ? "0" : need("--quote-size", values["quote-size"]),
    ttlSeconds,
    renewSeconds,
    validitySeconds: values.validity === undefined ? undefined : int("--validity", values.validity, 10, 3600),
    heartbeatSeconds: int("--heartbeat", values.heartbeat, 0, 3600),
    runSeconds: int("--run", values.run, 0, 86_400),
    revealOnly,
    ...(v2 === undefined ? {} : { v2 }),
  }
}

/**
 * The quote sets' validity: the asked one, checked against the deployment's limits, or else 120 s when it fits
 * (more than the lock cutoff, at most quote_validity_seconds_max and, for a v2 order, max_quote_life_seconds),
 * else the longest the deployment allows.
 */
export const chooseValidity = (
  asked: number | undefined,
  limits: { readonly lockCutoff: number; readonly validityMax: number; readonly maxQuoteLife?: number | undefined },
  v2: boolean,
): number => {
  const max =
    v2 && limits.maxQuoteLife !== undefined ? Math.min(limits.validityMax, limits.maxQuoteLife) : limits.validityMax
  if (asked !== undefined) {
    if (asked <= limits.lockCutoff || asked > limits.validityMax) {
      throw new UsageError(
        `--validity must be more than ${limits.lockCutoff} s (the lock cutoff) and at most ` +
          `${limits.validityMax} s (this deployment's limits)`,
      )
    }
    if (v2 && limits.maxQuoteLife !== undefined && asked > limits.maxQuoteLife) {
      throw new UsageError(
        `--validity must be at most ${limits.maxQuoteLife} s (max_quote_life_seconds) for a v2 order`,
      )
    }
    return asked
  }
  const chosen = Math.min(120, max) > limits.lockCutoff ? Math.min(120, max) : max
  if (chosen <= limits.lockCutoff) {
    throw new UsageError(`this deployment admits no quote validity (lock cutoff ${limits.lockCutoff} s, max ${max} s)`)
  }
  return chosen
}

/**
 * How long before its valid_until (ms) the bot replaces its quote set. The service offers a set to takes only while
 * more than the lock cutoff of it is left, so a set is usable for `validity − cutoff` seconds: it is replaced halfway
 * through that part, leaving the other half as a margin for the renewal tick, a slow publish or a short outage.
 * (Replacing it at half its validity meant, at 120 s and the default 60 s cutoff, that the service stopped offering
 * it at the very moment the bot decided to replace it: every replacement left a gap with no live quote.)
 */
export const republishBeforeMs = (validitySeconds: number, lockCutoffSeconds: number): number =>
  (lockCutoffSeconds + (validitySeconds - lockCutoffSeconds) / 2) * 1000

const HEX_KEY = /^0x[0-9a-fA-F]{64}$/
const HEX_ADDRESS = /^0x[0-9a-fA-F]{40}$/

/** `VENUE=VALUE` pairs of a repeated flag, by venue. */
const pairs = (flag: string, list: ReadonlyArray<string> | undefined, valid: (v: string) => boolean) => {
  const out: Record<string, string> = {}
  for (const item of list ?? []) {
    const at = item.indexOf("=")
    const [venue, value] = [item.slice(0, at), item.slice(at + 1)]
    if (at <= 0 || !valid(value)) throw new UsageError(`bad ${flag} ${item} (${USAGE})`)
    out[venue] = value
  }
  return out
}

/** The v2 options: present exactly when `--escrow-v2` names the order's venue. */
const parseV2 = (
  values: {
    readonly owner?: string | undefined
    readonly "escrow-v2"?: ReadonlyArray<string> | undefined
    readonly rpc?: ReadonlyArray<string> | undefined
    readonly "from-block"?: ReadonlyArray<string> | undefined
    readonly hashlocks?: string | undefined
    readonly "reveal-cutoff"?: string | undefined
    readonly "poll-ms"?: string | undefined
  },
  env: NodeJS.ProcessEnv,
  signerKey: `0x${string}`,
  venue: string,
  quotes: ReadonlyArray<QuoteSpec>,
  int: (name: string, v: string, min: number, max: number) => number,
): MakerV2Options | undefined => {
  const escrows = pairs("--escrow-v2", values["escrow-v2"], (v) => HEX_ADDRESS.test(v)) as Record<string, `0x${string}`>
  if (escrows[venue] === undefined) {
    if (Object.keys(escrows).length > 0) throw new UsageError(`--escrow-v2 must name the order's venue ${venue}`)
    return undefined
  }
  const rpc = pairs("--rpc", values.rpc, (v) => /^https?:\/\/\S+$/.test(v))
  const involved = [venue, ...quotes.map((q) => q.venue)]
  for (const v of involved) {
    if (escrows[v] === undefined) throw new UsageError(`a v2 order needs --escrow-v2 ${v}=0x… (its reviewed v2 escrow)`)
  }
  for (const v of involved) {
    if (rpc[v] === undefined) throw new UsageError(`a v2 order needs --rpc ${v}=URL (your own endpoint for reveals)`)
  }
  for (const q of quotes) {
    if (quotes.some((o) => o.venue === q.venue && o.recipient.toLowerCase() !== q.recipient.toLowerCase())) {
      throw new UsageError(`the quotes on ${q.venue} must name one recipient (the payee that reveals there)`)
    }
  }
  const fromBlocks = Object.fromEntries(
    Object.entries(pairs("--from-block", values["from-block"], (v) => /^[0-9]{1,20}$/.test(v))).map(([k, v]) => [
      k,
      BigInt(v),
    ]),
  )
  const owner = values.owner
  if (owner === undefined || !HEX_ADDRESS.test(owner)) throw new UsageError("a v2 order needs --owner 0x… (its owner)")
  const payeeKey = env.MAKER_PAYEE_KEY ?? signerKey
  if (!HEX_KEY.test(payeeKey)) throw new UsageError("MAKER_PAYEE_KEY must be a 32-byte hex key")
  return {
    owner: owner as `0x${string}`,
    escrows,
    rpc,
    fromBlocks,
    hashlockCount: int("--hashlocks", values.hashlocks!, 1, 800),
    revealCutoffSeconds: int("--reveal-cutoff", values["reveal-cutoff"]!, 1, 86_400),
    payeeKey: payeeKey as `0x${string}`,
    pollMs: int("--poll-ms", values["poll-ms"] ?? "1000", 50, 60_000),
  }
}
