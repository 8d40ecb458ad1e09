/**
 * Hyperliquid `POST /info` reads (research/venues.md §3.4): the perp `withdrawable` balance and the non-funding
 * ledger updates used as evidence for a transfer whose outcome is unknown.
 *
 * Ledger entries carry the signer's nonce for `withdraw` (withdraw3) and `send` (sendAsset); `internalTransfer`
 * (usdSend) carries none, so it is matched by destination, amount and time. Nonces are unique per signer, so
 * (user, nonce) identifies a transfer; the amount is checked as well.
 */
import { Either } from "effect"
import type { Address } from "viem"
import { fromWholeTokens, fromWholeTokensFloor } from "./DecimalAmount.ts"
import { isRecord } from "./VenueHttp.ts"

export const clearinghouseStateRequest = (user: Address) => ({ type: "clearinghouseState", user: user.toLowerCase() })

/** `withdrawable` (whole USDC) → base units, rounded down. */
export const parseWithdrawable = (json: unknown, decimals: number): Either.Either<bigint, string> => {
  if (!isRecord(json) || typeof json.withdrawable !== "string") {
    return Either.left("clearinghouseState answer has no withdrawable string")
  }
  return Either.mapLeft(fromWholeTokensFloor(json.withdrawable, decimals), (e) => e.message)
}

/**
 * Time-ranged `/info` answers hold at most 500 elements; the next page starts at the last returned time
 * (inclusive, so entries of that millisecond repeat: matching is idempotent). Docs: info endpoint, Pagination.
 */
export const LEDGER_PAGE_SIZE = 500

/** The latest `time` in a ledger page, if any. */
export const lastLedgerTime = (json: unknown): number | undefined =>
  Array.isArray(json)
    ? json.reduce<number | undefined>(
        (max, e) => (isRecord(e) && typeof e.time === "number" && (max === undefined || e.time > max) ? e.time : max),
        undefined,
      )
    : undefined

export const ledgerUpdatesRequest = (user: Address, startTime: number) => ({
  type: "userNonFundingLedgerUpdates",
  user: user.toLowerCase(),
  startTime,
})

export interface LedgerMatch {
  readonly hash: string
  readonly time: number
}

export interface LedgerQuery {
  readonly user: Address
  readonly nonce: number
  readonly amountBaseUnits: bigint
  /** The wire destination (for sendAsset to EVM: the system address). */
  readonly destination: Address
  readonly decimals: number
}

/** An amount field equals the expected base units exactly (spelling-independent: "12.50" = "12.5"). */
const amountEquals = (text: unknown, expected: bigint, decimals: number): boolean =>
  typeof text === "string" && Either.getOrUndefined(fromWholeTokens(text, decimals)) === expected

/** `withdraw` may report the amount net of its fee: accept usdc = amount or usdc + fee = amount. */
const withdrawAmountMatches = (delta: Readonly<Record<string, unknown>>, q: LedgerQuery): boolean => {
  if (amountEquals(delta.usdc, q.amountBaseUnits, q.decimals)) return true
  const usdc =
    typeof delta.usdc === "string" ? Either.getOrUndefined(fromWholeTokens(delta.usdc, q.decimals)) : undefined
  const fee = typeof delta.fee === "string" ? Either.getOrUndefined(fromWholeTokens(delta.fee, q.decimals)) : undefined
  return usdc !== undefined && fee !== undefined && usdc + fee === q.amountBaseUnits
}

const sameAddress = (a: unknown, b: string): boolean => typeof a === "string" && a.toLowerCase() === b.toLowerCase()

/**
 * Finds the ledger entry of a transfer, or reports that the answer is not a ledger. `Right(undefined)` means the
 * ledger was read and holds no such entry.
 */
export const findLedgerEntry = (json: unknown, q: LedgerQuery): Either.Either<LedgerMatch | undefined, string> => {
  if (!Array.isArray(json)) return Either.left("userNonFundingLedgerUpdates answer is not an array")
  for (const entry of json) {
    if (!isRecord(entry) || !isRecord(entry.delta) || typeof entry.hash !== "string") continue
    const time = typeof entry.time === "number" ? entry.time : 0
    const d = entry.delta
    const found =
      (d.type === "withdraw" && d.nonce === q.nonce && withdrawAmountMatches(d, q)) ||
      (d.type === "send" &&
        d.nonce === q.nonce &&
        (d.user === undefined || sameAddress(d.user, q.user)) &&
        sameAddress(d.destination, q.destination) &&
        amountEquals(d.amount, q.amountBaseUnits, q.decimals)) ||
      (d.type === "internalTransfer" &&
        time >= q.nonce - 86_400_000 &&
        sameAddress(d.user, q.user) &&
        sameAddress(d.destination, q.destination) &&
        amountEquals(d.usdc, q.amountBaseUnits, q.decimals))
    if (found) return Either.right({ hash: entry.hash, time })
  }
  return Either.right(undefined)
}
