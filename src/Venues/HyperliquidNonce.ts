/**
 * Hyperliquid nonce rules (research/venues.md §3.3, docs "nonces and API wallets"):
 *
 * - a user-signed action's nonce is a Unix millisecond time and equals `time`/`nonce` inside the action;
 * - nonces are tracked per signer: the 100 highest are kept, a new one must exceed the smallest of them and
 *   never have been used;
 * - it must lie within (T − 2 days, T + 1 day), T being the block time of the transaction.
 *
 * Consequences used here: a signed transfer can land only while T < nonce + 2 days (after that it is dead for
 * good), and its ledger entry cannot be older than nonce − 1 day.
 */
export interface HyperliquidNonceWindow {
  /** How far in the past (relative to block time) a nonce may be. */
  readonly pastMs: number
  /** How far in the future a nonce may be. */
  readonly futureMs: number
}

export const HYPERLIQUID_NONCE_WINDOW: HyperliquidNonceWindow = { pastMs: 2 * 86_400_000, futureMs: 86_400_000 }

/** The venue's acceptance test for one nonce at block time `blockTimeMs` (open interval). */
export const isWithinNonceWindow = (nonce: number, blockTimeMs: number, w = HYPERLIQUID_NONCE_WINDOW): boolean =>
  nonce > blockTimeMs - w.pastMs && nonce < blockTimeMs + w.futureMs

/** The last instant at which a transfer signed with `nonce` could still be accepted. */
export const replayableUntilMs = (nonce: number, w = HYPERLIQUID_NONCE_WINDOW): number => nonce + w.pastMs

/** The earliest block time at which a transfer signed with `nonce` could have been accepted (ledger search start). */
export const earliestAcceptanceMs = (nonce: number, w = HYPERLIQUID_NONCE_WINDOW): number =>
  Math.max(0, nonce - w.futureMs)

/** A usable nonce: a positive safe integer of milliseconds. */
export const isValidHyperliquidNonce = (nowMs: number): boolean => Number.isSafeInteger(nowMs) && nowMs > 0
