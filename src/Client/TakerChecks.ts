/**
 * The taker client's check of a proposed `to_sign` (settlement v2, DESIGN §10.2): the API's sign items are a
 * PROPOSAL, not a trust root. Every field of every item is compared with the taker's own intent and the client's
 * reviewed configuration (escrow and token addresses per chain); the digest the API claims for each Fill is
 * recomputed. Any problem → no CheckedTake → nothing is signed.
 *
 * On success the wallet signs the typed data REBUILT here from the parsed values (`CheckedTake`), never the API's
 * objects: what is signed is exactly what was checked, whatever else the proposal carried.
 *
 * Browser-safe: src/Domain and viem only.
 */
import { type Address, getAddress, type Hex, zeroAddress } from "viem"
import {
  type EscrowDomainV2,
  escrowDomainV2,
  type FillV2,
  fillDigest,
  fillV2TypedData,
  fillV2Types,
  orderKey,
} from "../Domain/EscrowTypedDataV2.ts"
import { permitTypedData, permitTypes, type TokenDomain } from "../Domain/Permit.ts"
import { TAKE_PARTS_MAX } from "../Domain/TakeRouter.ts"
import { parseWireFillV2 } from "../Domain/WireFillV2.ts"
import { wireAddress, wireBig, wireBytes32, wireUint } from "../Domain/WireValues.ts"

/** An escrow and token of one chain, from the client's reviewed configuration (never from the API). */
export interface ReviewedChain {
  readonly escrow: Address
  readonly token: Address
  /** The token's EIP-712 name and version, when the configuration pins them. */
  readonly tokenName?: string
  readonly tokenVersion?: string
}

export interface TakerConfig {
  readonly chains: Readonly<Record<number, ReviewedChain>>
  /** makerExpiry − takerExpiry at least this: time to claim the lock after a reveal at the last second. */
  readonly minClaimWindowSeconds: bigint
}

/** What the taker asked for (POST /v1/takes) and the key its client made. */
export interface TakerIntent {
  /** The `from` chain: where the payer pays (the taker escrow). */
  readonly takerChainId: number
  /** The `to` chain: where the recipient is paid (the maker escrow). */
  readonly makerChainId: number
  readonly payer: Address
  readonly recipient: Address
  readonly amountIn: bigint
  readonly minOut: bigint
  readonly maxParts: number
  /** The client's ephemeral pay key (its address). */
  readonly payKey: Address
  /** The latest `payBy` the client accepts (Unix seconds); the permit's deadline may not be later either. */
  readonly maxPayBy: bigint
  /**
   * The payer's EIP-2612 nonce on the taker token, read by the client from its own taker-chain endpoint. When given,
   * the permit must use exactly it: a later nonce would be a permit that turns valid only after others are spent.
   */
  readonly permitNonce?: bigint
  /** Where the recipient's funds land on the maker chain. */
  readonly dex: number
  readonly toMargin: boolean
}

/** One `to_sign` entry as the API proposes it (wire JSON). */
export interface ProposedSignItem {
  readonly kind: string
  readonly signer?: unknown
  readonly typed_data: unknown
  readonly fill_id?: unknown
  /** The Fill digest the API claims (margin_move). */
  readonly digest?: unknown
}

export type TakerProblemCode =
  | "config" // the intent names a chain the configuration does not review
  | "malformed" // not parseable as the pinned type
  | "unexpected_item" // a kind the client does not sign here
  | "signer" // the item asks another key than the payer's wallet
  | "typed_data" // primaryType, types or domain are not the pinned ones
  | "mismatch" // a field differs from the intent or the configuration
  | "digest" // the claimed digest is not the Fill's
  | "timing" // payBy / expiries out of bounds
  | "duplicate" // two fills share an id, digest, hashlock or hashlock slot
  | "count" // no fill, too many fills, not exactly one permit
  | "totals" // Σ amountIn above amount_in, Σ amountOut below min_out

export interface TakerProblem {
  readonly code: TakerProblemCode
  /** Index in `to_sign`, or null for the take as a whole. */
  readonly item: number | null
  readonly field: string | null
  readonly message: string
}

export interface CheckedFill {
  readonly fillId: string | null
  readonly fill: FillV2
  readonly digest: Hex
  /** What the payer's wallet signs (rebuilt, not the API's object). */
  readonly typedData: ReturnType<typeof fillV2TypedData>
}

export interface CheckedTake {
  readonly intent: TakerIntent
  readonly takerEscrow: Address
  readonly makerEscrow: Address
  readonly fills: ReadonlyArray<CheckedFill>
  readonly permit: ReturnType<typeof permitTypedData>
}

export type TakeCheck =
  | { readonly ok: true; readonly take: CheckedTake }
  | { readonly ok: false; readonly problems: ReadonlyArray<TakerProblem> }

// Only checkTakeProposal creates CheckedTakes; the lock check refuses anything else (a hand-made object is no proof).
const issued = new WeakSet<CheckedTake>()

/** Throws unless `take` came from checkTakeProposal. */
export const assertCheckedTake = (take: CheckedTake): void => {
  if (!issued.has(take)) throw new TypeError("not a CheckedTake from checkTakeProposal")
}

// ------------------------------------------------------------------ typed-data shape

const DOMAIN_FIELDS = [
  { name: "name", type: "string" },
  { name: "version", type: "string" },
  { name: "chainId", type: "uint256" },
  { name: "verifyingContract", type: "address" },
] as const

type Fields = ReadonlyArray<{ readonly name: string; readonly type: string }>

const sameFields = (actual: unknown, expected: Fields): boolean =>
  Array.isArray(actual) &&
  actual.length === expected.length &&
  actual.every((f, i) => {
    const e = expected[i]!
    return typeof f === "object" && f !== null && Object.keys(f).length === 2 && f.name === e.name && f.type === e.type
  })

/** The proposal's `types` are exactly ours (EIP712Domain may be listed, as the standard four fields). */
const sameTypes = (actual: unknown, expected: Readonly<Record<string, Fields>>): boolean => {
  if (typeof actual !== "object" || actual === null) return false
  const a = actual as Record<string, unknown>
  const keys = Object.keys(a).filter((k) => k !== "EIP712Domain")
  if ("EIP712Domain" in a && !sameFields(a.EIP712Domain, DOMAIN_FIELDS)) return false
  return (
    keys.length === Object.keys(expected).length && keys.every((k) => k in expected && sameFields(a[k], expected[k]!))
  )
}

/** The proposal's domain: exactly name, version, chainId, verifyingContract (no salt); throws when malformed. */
const parseDomain = (d: unknown): TokenDomain => {
  if (typeof d !== "object" || d === null) throw new TypeError("the domain is an object")
  const o = d as Record<string, unknown>
  const keys = Object.keys(o).sort().join(",")
  if (keys !== "chainId,name,verifyingContract,version") throw new TypeError(`domain fields: ${keys}`)
  if (typeof o.name !== "string" || typeof o.version !== "string") throw new TypeError("name and version are strings")
  const chainId = Number(wireBig(o.chainId))
  if (!Number.isSafeInteger(chainId)) throw new TypeError("chainId out of range")
  return { name: o.name, version: o.version, chainId, verifyingContract: wireAddress(o.verifyingContract) }
}

const sameDomain = (a: TokenDomain, e: EscrowDomainV2 | TokenDomain) =>
  a.name === e.name && a.version === e.version && a.chainId === e.chainId && a.verifyingContract === e.verifyingContract

const asTyped = (v: unknown) =>
  (typeof v === "object" && v !== null ? v : {}) as {
    readonly domain?: unknown
    readonly types?: unknown
    readonly primaryType?: unknown
    readonly message?: unknown
  }

const sameAddress = (a: unknown, b: Address) => {
  try {
    return wireAddress(a) === getAddress(b)
  } catch {
    return false
  }
}

// ------------------------------------------------------------------ the check

/**
 * Checks a proposed `to_sign` against the intent and the configuration. `now`: the client's clock (Unix seconds).
 * Returns every problem found (not only the first), or the take to sign.
 */
export const checkTakeProposal = (
  intent: TakerIntent,
  config: TakerConfig,
  toSign: ReadonlyArray<ProposedSignItem>,
  now: bigint,
): TakeCheck => {
  const problems: Array<TakerProblem> = []
  const problem = (code: TakerProblemCode, item: number | null, field: string | null, message: string) => {
    problems.push({ code, item, field, message })
  }
  const taker = config.chains[intent.takerChainId]
  const maker = config.chains[intent.makerChainId]
  if (taker === undefined || maker === undefined) {
    problem(
      "config",
      null,
      null,
      `no reviewed escrow for chain ${taker === undefined ? intent.takerChainId : intent.makerChainId}`,
    )
    return { ok: false, problems }
  }

  const fills: Array<CheckedFill> = []
  const permits: Array<number> = []
  toSign.forEach((item, i) => {
    if (item.kind === "permit") permits.push(i)
    else if (item.kind === "margin_move") {
      const checked = checkFillItem(intent, config, taker, maker, item, i, now, problem)
      if (checked !== undefined) fills.push(checked)
    } else problem("unexpected_item", i, "kind", `the client does not sign a ${String(item.kind)} item here`)
  })

  const moves = toSign.filter((x) => x.kind === "margin_move").length
  const maxParts = Math.min(intent.maxParts, TAKE_PARTS_MAX)
  if (moves === 0 || moves > maxParts) problem("count", null, null, `${moves} fills; expected 1..${maxParts}`)
  if (permits.length !== 1) problem("count", null, null, `${permits.length} permits; expected exactly one`)
  checkDistinct(fills, problem)

  const sumIn = fills.reduce((s, f) => s + f.fill.amountIn, 0n)
  const sumOut = fills.reduce((s, f) => s + f.fill.amountOut, 0n)
  if (sumIn > intent.amountIn) problem("totals", null, "amountIn", `Σ amountIn ${sumIn} > amount_in ${intent.amountIn}`)
  if (sumOut < intent.minOut) problem("totals", null, "amountOut", `Σ amountOut ${sumOut} < min_out ${intent.minOut}`)

  let lastPayBy = 0n
  for (const f of fills) if (f.fill.payBy > lastPayBy) lastPayBy = f.fill.payBy
  const permit =
    permits.length === 1
      ? checkPermitItem(intent, taker, toSign[permits[0]!]!, permits[0]!, sumIn, lastPayBy, problem)
      : undefined

  if (problems.length > 0 || permit === undefined) return { ok: false, problems }
  // Frozen: what was checked is what the lock check reads and the pay key signs (no edit in between).
  const take: CheckedTake = Object.freeze({
    intent: Object.freeze({ ...intent }),
    takerEscrow: getAddress(taker.escrow),
    makerEscrow: getAddress(maker.escrow),
    fills: Object.freeze(fills.map((f) => Object.freeze({ ...f, fill: Object.freeze(f.fill) }))),
    permit,
  })
  issued.add(take)
  return { ok: true, take }
}

type Report = (code: TakerProblemCode, item: number | null, field: string | null, message: string) => void

const checkFillItem = (
  intent: TakerIntent,
  config: TakerConfig,
  taker: ReviewedChain,
  maker: ReviewedChain,
  item: ProposedSignItem,
  i: number,
  now: bigint,
  problem: Report,
): CheckedFill | undefined => {
  const typed = asTyped(item.typed_data)
  if (typed.primaryType !== "Fill") problem("typed_data", i, "primaryType", `primaryType ${String(typed.primaryType)}`)
  if (!sameTypes(typed.types, fillV2Types)) problem("typed_data", i, "types", "types are not the pinned v2 Fill")
  let fill: FillV2
  try {
    fill = parseWireFillV2(typed.message)
  } catch (e) {
    problem("malformed", i, "message", e instanceof Error ? e.message : String(e))
    return undefined
  }
  const expected = escrowDomainV2(intent.takerChainId, taker.escrow)
  try {
    if (!sameDomain(parseDomain(typed.domain), expected)) {
      problem("typed_data", i, "domain", "the domain is not the reviewed taker escrow's (v2)")
    }
  } catch (e) {
    problem("typed_data", i, "domain", e instanceof Error ? e.message : String(e))
  }
  if (!sameAddress(item.signer, intent.payer)) problem("signer", i, "signer", "the signer is not the payer")

  const must = (field: keyof FillV2, ok: boolean, what: string) => {
    if (!ok) problem("mismatch", i, field, `Fill.${field} = ${String(fill[field])}: ${what}`)
  }
  must("owner", fill.owner !== zeroAddress, "names no owner")
  must("orderId", BigInt(fill.orderId) !== 0n, "is the zero id")
  must("makerChainId", fill.makerChainId === BigInt(intent.makerChainId), `expected ${intent.makerChainId}`)
  must("makerEscrow", fill.makerEscrow === getAddress(maker.escrow), `expected the reviewed ${maker.escrow}`)
  must("takerChainId", fill.takerChainId === BigInt(intent.takerChainId), `expected ${intent.takerChainId}`)
  must("takerEscrow", fill.takerEscrow === getAddress(taker.escrow), `expected the reviewed ${taker.escrow}`)
  must("payer", fill.payer === getAddress(intent.payer), `expected ${intent.payer}`)
  must("payee", fill.payee !== zeroAddress, "names no payee")
  must("amountIn", fill.amountIn > 0n, "must be positive")
  must("amountOut", fill.amountOut > 0n, "must be positive")
  must("recipient", fill.recipient === getAddress(intent.recipient), `expected ${intent.recipient}`)
  must("dex", fill.dex === intent.dex, `expected ${intent.dex}`)
  must("toMargin", fill.toMargin === intent.toMargin, `expected ${intent.toMargin}`)
  must("hashlock", BigInt(fill.hashlock) !== 0n, "is zero")
  must("payKey", fill.payKey === getAddress(intent.payKey), `expected this client's pay key ${intent.payKey}`)

  const time = (field: keyof FillV2, ok: boolean, what: string) => {
    if (!ok) problem("timing", i, field, `Fill.${field} = ${String(fill[field])}: ${what}`)
  }
  time("payBy", fill.payBy > now, `already passed (now ${now})`)
  time("payBy", fill.payBy <= intent.maxPayBy, `later than the client's bound ${intent.maxPayBy}`)
  time("takerExpiry", fill.takerExpiry > fill.payBy, "not after payBy")
  time(
    "makerExpiry",
    fill.makerExpiry >= fill.takerExpiry + config.minClaimWindowSeconds,
    `less than ${config.minClaimWindowSeconds} s after takerExpiry (no time to claim after a late reveal)`,
  )

  const digest = fillDigest(fill)
  let claimed: Hex | undefined
  try {
    claimed = wireBytes32(item.digest)
  } catch {
    claimed = undefined
  }
  if (claimed !== digest) problem("digest", i, "digest", `claimed ${String(item.digest)}, the Fill's is ${digest}`)
  return {
    fillId: typeof item.fill_id === "string" ? item.fill_id : null,
    fill,
    digest,
    typedData: fillV2TypedData(fill),
  }
}

const checkDistinct = (fills: ReadonlyArray<CheckedFill>, problem: Report) => {
  const keys = {
    fillId: (f: FillV2) => f.fillId,
    hashlock: (f: FillV2) => f.hashlock,
    hashlockIndex: (f: FillV2) => `${orderKey(f.owner, f.orderId)}/${f.sequence}/${f.hashlockIndex}`,
  }
  for (const [field, key] of Object.entries(keys)) {
    const seen = new Set(fills.map((f) => key(f.fill)))
    if (seen.size !== fills.length) problem("duplicate", null, field, `two fills share a ${field}`)
  }
  if (new Set(fills.map((f) => f.digest)).size !== fills.length)
    problem("duplicate", null, "digest", "two fills are one")
}

const checkPermitItem = (
  intent: TakerIntent,
  taker: ReviewedChain,
  item: ProposedSignItem,
  i: number,
  value: bigint,
  lastPayBy: bigint,
  problem: Report,
) => {
  const typed = asTyped(item.typed_data)
  if (typed.primaryType !== "Permit")
    problem("typed_data", i, "primaryType", `primaryType ${String(typed.primaryType)}`)
  if (!sameTypes(typed.types, permitTypes)) problem("typed_data", i, "types", "types are not EIP-2612 Permit")
  if (!sameAddress(item.signer, intent.payer)) problem("signer", i, "signer", "the signer is not the payer")
  let domain: TokenDomain
  let m: { owner: Address; spender: Address; value: bigint; nonce: bigint; deadline: bigint }
  try {
    domain = parseDomain(typed.domain)
    const msg = (typed.message ?? {}) as Record<string, unknown>
    const keys = Object.keys(msg).sort().join(",")
    if (keys !== "deadline,nonce,owner,spender,value") throw new TypeError(`permit fields: ${keys}`)
    m = {
      owner: wireAddress(msg.owner),
      spender: wireAddress(msg.spender),
      value: wireUint(msg.value, 256),
      nonce: wireUint(msg.nonce, 256),
      deadline: wireUint(msg.deadline, 256),
    }
  } catch (e) {
    problem("malformed", i, "permit", e instanceof Error ? e.message : String(e))
    return undefined
  }
  const must = (field: string, ok: boolean, what: string) => {
    if (!ok) problem("mismatch", i, field, `permit ${field}: ${what}`)
  }
  must("domain.chainId", domain.chainId === intent.takerChainId, `expected ${intent.takerChainId}`)
  must("domain.verifyingContract", domain.verifyingContract === getAddress(taker.token), "not the reviewed token")
  must("domain.name", taker.tokenName === undefined || domain.name === taker.tokenName, "not the token's name")
  must("domain.version", taker.tokenVersion === undefined || domain.version === taker.tokenVersion, "not the token's")
  must("owner", m.owner === getAddress(intent.payer), "not the payer")
  must("spender", m.spender === getAddress(taker.escrow), "not the reviewed taker escrow")
  must("value", m.value === value, `${m.value} ≠ Σ amountIn ${value}`)
  if (m.deadline < lastPayBy) problem("timing", i, "deadline", `the permit ends before payBy ${lastPayBy}`)
  // Spent only by payTake, which must come by payBy: an allowance outliving the client's bound serves nothing.
  if (m.deadline > intent.maxPayBy)
    problem("timing", i, "deadline", `the permit outlives the client's bound ${intent.maxPayBy}`)
  if (intent.permitNonce !== undefined) must("nonce", m.nonce === intent.permitNonce, `not ${intent.permitNonce}`)
  // Rebuilt from the parsed values; the caller returns it only when no problem was found anywhere.
  return permitTypedData(domain, m)
}
