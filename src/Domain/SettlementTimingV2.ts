/**
 * Settlement v2 time bounds (DESIGN §6 "Timing"): the inequalities every deployment's values must satisfy, and the
 * devnet's numbers. Pure: no chain, no clock.
 *
 * Symbols, per chain (m maker chain, t taker chain), in seconds:
 *   F  finality: how long until a transaction is "final" under the deployment's policy (default the `finalized` tag)
 *   D  inclusion delay: from broadcast to inclusion
 *   δ  timestamp drift of the chain's blocks against real time
 *   R  reaction time of a party (maker client, claimer, taker client's lock check)
 *
 * The inequalities (the contract enforces the last group itself, in its constructor and in `lock`):
 *   lock_cutoff        ≥ D_m + δ_m
 *   PAY_BY_MAX         ≥ F_m + client check + D_t
 *   reveal cutoff C    ≥ R_maker + D_t + F_t + 2δ_t
 *   TAKER_TIMEOUT_MIN  ≥ F_t + R_maker + C              (takerExpiry ≥ payBy + TAKER_TIMEOUT_MIN)
 *   CLAIM_WINDOW       ≥ δ_t + δ_m + R_claimer + D_m + F_m, and generous (minutes)
 *   PAY_BY_MAX + taker timeout + CLAIM_WINDOW ≤ MAX_LOCK   (taker timeout = takerExpiry − payBy ≥ TAKER_TIMEOUT_MIN)
 *   MAX_QUOTE_LIFE ≤ MAX_LOCK, and ≥ the longest quote validity the API accepts
 */

/** The v2 values: the escrow's constructor immutables plus the off-chain cutoffs and the taker timeout. */
export interface TimingV2 {
  readonly lockCutoff: number
  readonly revealCutoff: number
  /** takerExpiry − payBy the service chooses (≥ TAKER_TIMEOUT_MIN). */
  readonly takerTimeout: number
  readonly maxLock: number
  readonly payByMax: number
  readonly claimWindow: number
  readonly maxQuoteLife: number
  readonly takerTimeoutMin: number
  /** The API's longest quote-set validity (limits.quote_validity_seconds_max). */
  readonly quoteValidityMax: number
}

/** What the chains and parties need, per DESIGN §6's symbols (seconds). */
export interface ChainTimeParams {
  readonly finalityMaker: number
  readonly finalityTaker: number
  readonly inclusionMaker: number
  readonly inclusionTaker: number
  readonly driftMaker: number
  readonly driftTaker: number
  readonly makerReaction: number
  readonly claimerReaction: number
  /** The taker client's check of the locks (reads at a finalized block, signs PayTake). */
  readonly clientCheck: number
}

/** A generous claim window is at least this long ("minutes"). */
export const CLAIM_WINDOW_FLOOR = 300

/**
 * The devnet (`npm start`, test stacks): anvil, one block per second (interval mining; automine in tests), finalized
 * 4 blocks behind latest (`--slots-in-an-epoch 2`), both chains on the same machine clock. Reactions are the maker
 * client's and the watcher's polling plus a margin.
 */
export const DEVNET_CHAIN_PARAMS: ChainTimeParams = {
  finalityMaker: 4,
  finalityTaker: 4,
  inclusionMaker: 1,
  inclusionTaker: 1,
  driftMaker: 1,
  driftTaker: 1,
  makerReaction: 10,
  claimerReaction: 30,
  clientCheck: 30,
}

/**
 * The devnet's v2 values (also the config defaults). With DEVNET_CHAIN_PARAMS the lower bounds are: lock cutoff 2,
 * PAY_BY_MAX 35, reveal cutoff 17, TAKER_TIMEOUT_MIN 4 + 10 + 600 = 614, CLAIM_WINDOW 37 (and ≥ 300, generous);
 * PAY_BY_MAX + taker timeout + CLAIM_WINDOW = 120 + 3600 + 600 = 4320 ≤ MAX_LOCK 7200; MAX_QUOTE_LIFE 300 ≤ 7200
 * and = the API's quote validity limit. lock/reveal cutoffs and the taker timeout are the spec's existing
 * `settlement` values (60, 600, 3600).
 */
export const DEVNET_TIMING_V2: TimingV2 = {
  lockCutoff: 60,
  revealCutoff: 600,
  takerTimeout: 3600,
  maxLock: 7200,
  payByMax: 120,
  claimWindow: 600,
  maxQuoteLife: 300,
  takerTimeoutMin: 900,
  quoteValidityMax: 300,
}

/**
 * The inequalities that hold whatever the chains are: the contract's constructor checks (all positive,
 * payByMax + takerTimeoutMin + claimWindow ≤ maxLock ≤ 30 days, maxQuoteLife ≤ maxLock) and the service's own
 * (taker timeout within the bounds, quote validity within MAX_QUOTE_LIFE). Empty: consistent.
 */
export const timingProblems = (t: TimingV2): Array<string> => {
  const problems: Array<string> = []
  const need = (ok: boolean, text: string) => {
    if (!ok) problems.push(text)
  }
  for (const [name, v] of Object.entries(t)) need(Number.isInteger(v) && v > 0, `${name} must be a positive integer`)
  need(t.maxLock <= 30 * 86_400, `max_lock_seconds ${t.maxLock} > 30 days (the escrow's MAX_LOCK_LIMIT)`)
  need(
    t.payByMax + t.takerTimeoutMin + t.claimWindow <= t.maxLock,
    `pay_by_max ${t.payByMax} + taker_timeout_min ${t.takerTimeoutMin} + claim_window ${t.claimWindow} > max_lock ${t.maxLock}`,
  )
  need(t.maxQuoteLife <= t.maxLock, `max_quote_life ${t.maxQuoteLife} > max_lock ${t.maxLock}`)
  need(t.takerTimeout >= t.takerTimeoutMin, `taker_timeout ${t.takerTimeout} < taker_timeout_min ${t.takerTimeoutMin}`)
  need(
    t.payByMax + t.takerTimeout + t.claimWindow <= t.maxLock,
    `pay_by_max ${t.payByMax} + taker_timeout ${t.takerTimeout} + claim_window ${t.claimWindow} > max_lock ${t.maxLock}`,
  )
  need(
    t.quoteValidityMax <= t.maxQuoteLife,
    `quote_validity_seconds_max ${t.quoteValidityMax} > max_quote_life ${t.maxQuoteLife}`,
  )
  need(t.revealCutoff < t.takerTimeoutMin, `reveal_cutoff ${t.revealCutoff} ≥ taker_timeout_min ${t.takerTimeoutMin}`)
  return problems
}

/** The lower bounds DESIGN §6 derives from the chains' parameters. */
export const timingLowerBounds = (p: ChainTimeParams, revealCutoff: number) => ({
  lockCutoff: p.inclusionMaker + p.driftMaker,
  payByMax: p.finalityMaker + p.clientCheck + p.inclusionTaker,
  revealCutoff: p.makerReaction + p.inclusionTaker + p.finalityTaker + 2 * p.driftTaker,
  takerTimeoutMin: p.finalityTaker + p.makerReaction + revealCutoff,
  claimWindow: Math.max(
    CLAIM_WINDOW_FLOOR,
    p.driftTaker + p.driftMaker + p.claimerReaction + p.inclusionMaker + p.finalityMaker,
  ),
})

/** Every inequality of DESIGN §6 for `t` on chains with parameters `p`. Empty: all hold. */
export const timingViolations = (t: TimingV2, p: ChainTimeParams): Array<string> => {
  const lb = timingLowerBounds(p, t.revealCutoff)
  const problems = timingProblems(t)
  const atLeast = (name: string, value: number, bound: number) => {
    if (value < bound) problems.push(`${name} ${value} < ${bound}`)
  }
  atLeast("lock_cutoff", t.lockCutoff, lb.lockCutoff)
  atLeast("pay_by_max", t.payByMax, lb.payByMax)
  atLeast("reveal_cutoff", t.revealCutoff, lb.revealCutoff)
  atLeast("taker_timeout_min", t.takerTimeoutMin, lb.takerTimeoutMin)
  atLeast("claim_window", t.claimWindow, lb.claimWindow)
  return problems
}

/** The escrow's constructor arguments after token and router, in order. */
export const constructorTimings = (t: TimingV2) =>
  [
    BigInt(t.maxLock),
    BigInt(t.payByMax),
    BigInt(t.claimWindow),
    BigInt(t.maxQuoteLife),
    BigInt(t.takerTimeoutMin),
  ] as const
