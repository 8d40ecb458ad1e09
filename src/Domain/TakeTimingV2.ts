/**
 * The times a settlement-v2 take fixes at creation (one payBy for every fill of the take). Pure; seconds.
 *
 * The escrow checks at LOCK time (maker chain clock `tl`): tl < payBy ≤ tl + PAY_BY_MAX, makerExpiry ≤ tl + MAX_LOCK,
 * makerExpiry ≥ takerExpiry + CLAIM_WINDOW, takerExpiry ≥ payBy + TAKER_TIMEOUT_MIN; and payTake needs
 * now ≤ payBy on the taker chain. The take is created at `now` (the database clock, whole seconds), before any lock:
 *
 * - payBy = now + PAY_BY_MAX − slack: the latest payBy a lock made right after creation accepts, so every lock made
 *   from then until payBy accepts it too; `slack` (5 s, at most a quarter of PAY_BY_MAX) absorbs a maker chain
 *   whose block time runs behind the database clock (δ_m; devnet 1 s).
 * - payDeadline (signatures accepted until) = now + min(pay_window_seconds, (payBy − now) / 2): the payer's
 *   signatures and the lock must land in the first half of the window, which leaves at least the other half for
 *   the lock's finality, the client's own check and the payTake's inclusion (PAY_BY_MAX ≥ F_m + check + D_t, the
 *   DESIGN §6 bound: devnet 35 s of 57 s). limits.pay_window_seconds stays the ceiling.
 * - takerExpiry = payBy + taker timeout, where the taker timeout is settlement.taker_timeout_seconds raised to
 *   TAKER_TIMEOUT_MIN and lowered to MAX_LOCK − PAY_BY_MAX − CLAIM_WINDOW (never below TAKER_TIMEOUT_MIN; start-up
 *   refuses a config where those bounds cross). TAKER_TIMEOUT_MIN ≥ F_t + R_maker + the reveal cutoff, so a
 *   payment made at payBy still leaves the maker the reveal cutoff to reveal.
 * - makerExpiry = takerExpiry + CLAIM_WINDOW: the recipient's claim after a reveal at the last second; then
 *   makerExpiry ≤ now − slack + MAX_LOCK ≤ tl + MAX_LOCK for any lock at tl ≥ now − slack.
 * - The permit's deadline is payBy: it is spent only by payTake, which must come by payBy.
 */

export interface SettlementV2Seconds {
  readonly pay_by_max_seconds: number
  readonly claim_window_seconds: number
  readonly max_lock_seconds: number
  readonly taker_timeout_seconds: number
  readonly taker_timeout_min_seconds: number
}

export interface TakeTimesV2 {
  readonly payDeadline: bigint
  readonly payBy: bigint
  readonly takerExpiry: bigint
  readonly makerExpiry: bigint
}

/** At most this many seconds of PAY_BY_MAX are given up to a maker chain clock behind the database's. */
export const PAY_BY_CLOCK_SLACK = 5

export const takeTimesV2 = (now: bigint, s: SettlementV2Seconds, payWindowSeconds: number): TakeTimesV2 => {
  const slack = Math.min(PAY_BY_CLOCK_SLACK, Math.floor(s.pay_by_max_seconds / 4))
  const window = s.pay_by_max_seconds - slack
  const payBy = now + BigInt(window)
  const payDeadline = now + BigInt(Math.max(1, Math.min(payWindowSeconds, Math.floor(window / 2))))
  const ceiling = s.max_lock_seconds - s.pay_by_max_seconds - s.claim_window_seconds
  const takerTimeout = Math.max(
    s.taker_timeout_min_seconds,
    Math.min(Math.max(s.taker_timeout_seconds, s.taker_timeout_min_seconds), ceiling),
  )
  const takerExpiry = payBy + BigInt(takerTimeout)
  return { payDeadline, payBy, takerExpiry, makerExpiry: takerExpiry + BigInt(s.claim_window_seconds) }
}
