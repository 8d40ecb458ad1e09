/**
 * Take routing: how `amountIn` of venue `from`'s token is split over makers' quotes that pay out venue `to`'s
 * token. Pure: no services, no I/O, no clock; the caller loads admissible candidates (src/Takes/QuoteCandidates.ts)
 * and the limits (`limits.fill_max`, `max_parts`).
 *
 * A quote says "the maker supplies `supply` of the `to` token for `receive` of the `from` token"; its price for the
 * taker is supply / receive (higher is better). All amounts are base units of their own token, so tokens of
 * different decimals need no conversion: the quote's supply/receive carry the rate.
 *
 * The escrow's `lock` checks, per fill, with the quote (order, sequence, quoteIndex) it names:
 * `amountOut ≥ minFill`, `amountIn × supply ≥ amountOut × receive` (checked uint256 arithmetic: a product above
 * 2^256 − 1 reverts), and cumulative amountOut under (order, sequence) ≤ quoteSize; `amountIn`, `amountOut` > 0.
 * Every fill this router answers passes those checks by construction.
 */

/** The escrow computes with uint256; a product above this reverts the lock. */
const MAX_UINT256 = 2n ** 256n - 1n

/** The spec's bound on `max_parts`. */
export const TAKE_PARTS_MAX = 8

/** One quote of one active quote set, as the router sees it. */
export interface TakeCandidate {
  /** The maker's order (bytes32 hex, lowercase), on venue `to`. */
  readonly orderId: string
  /** The quote set's sequence (uint64). */
  readonly sequence: bigint
  /** The quote identity that published the set (carried for callers; routing does not use it). */
  readonly identityId: string
  /** The quote's index within the signed set (the escrow's `quoteIndex`). */
  readonly quoteIndex: number
  /** Maker-token base units (on `to`) supplied per `receive`. */
  readonly supply: bigint
  /** Taker-token base units (on `from`) asked per `supply`. */
  readonly receive: bigint
  /** Smallest amountOut of one fill, maker-token base units. */
  readonly minFill: bigint
  /** The order's remaining quotable (maker-token units); shared by every quote of the order. */
  readonly quotable: bigint
  /** The set's quote_size minus what is already reserved or filled under (order, sequence). */
  readonly setRemaining: bigint
  /**
   * Settlement v2: how many more fills the set can take, one per unused hashlock index (hashlock_count minus the
   * indexes already reserved). Absent: unbounded (v1). Shared by every quote of the set (the smallest given).
   */
  readonly hashlocksLeft?: number
}

export interface TakeFill {
  readonly orderId: string
  readonly sequence: bigint
  readonly quoteIndex: number
  /** Taker-token base units charged: the least amount the price check accepts for amountOut. */
  readonly amountIn: bigint
  /** Maker-token base units delivered. */
  readonly amountOut: bigint
}

export interface TakeRoute {
  readonly fills: ReadonlyArray<TakeFill>
  readonly totalIn: bigint
  readonly totalOut: bigint
}

export interface TakeRouteRequest {
  /** Taker-token base units the taker offers at most. */
  readonly amountIn: bigint
  readonly candidates: ReadonlyArray<TakeCandidate>
  /** At most this many fills, 1 to 8. */
  readonly maxParts: number
  /** The largest amountOut of one fill (`limits.fill_max`, maker-token base units). */
  readonly fillMax: bigint
}

const min = (a: bigint, b: bigint) => (a < b ? a : b)
const ceilDiv = (a: bigint, b: bigint) => (a + b - 1n) / b
const cmp = <T extends string | bigint | number>(a: T, b: T) => (a < b ? -1 : a > b ? 1 : 0)

/**
 * Best price first (supply/receive, compared exactly by cross-multiplication), then a total order on every field
 * so the route does not depend on the order of the input: orderId, sequence, quoteIndex, then the remaining fields.
 */
const compareCandidates = (a: TakeCandidate, b: TakeCandidate): number =>
  cmp(b.supply * a.receive, a.supply * b.receive) ||
  cmp(a.orderId, b.orderId) ||
  cmp(a.sequence, b.sequence) ||
  cmp(a.quoteIndex, b.quoteIndex) ||
  cmp(a.minFill, b.minFill) ||
  cmp(a.quotable, b.quotable) ||
  cmp(a.setRemaining, b.setRemaining) ||
  cmp(a.hashlocksLeft ?? -1, b.hashlocksLeft ?? -1) ||
  cmp(a.supply, b.supply) ||
  cmp(a.identityId, b.identityId)

const usable = (c: TakeCandidate) =>
  c.supply > 0n &&
  c.receive > 0n &&
  c.supply <= MAX_UINT256 &&
  c.receive <= MAX_UINT256 &&
  c.minFill >= 0n &&
  Number.isSafeInteger(c.quoteIndex) &&
  c.quoteIndex >= 0

const setKey = (orderId: string, sequence: bigint) => `${orderId}\u0000${sequence}`

/** The amountOut `amountIn` buys at a quote, rounded down (the maker's favour). */
export const amountOutFor = (amountIn: bigint, supply: bigint, receive: bigint) => (amountIn * supply) / receive

/** The least amountIn with `amountIn × supply ≥ amountOut × receive` (never charges the taker more). */
export const amountInFor = (amountOut: bigint, supply: bigint, receive: bigint) => ceilDiv(amountOut * receive, supply)

/**
 * Routes `amountIn` over `candidates`, greedily at the best price first:
 *
 * - candidates are taken in price order (ties: orderId, sequence, quoteIndex); a duplicate of an
 *   (orderId, sequence, quoteIndex) already seen is ignored, as is a quote with supply or receive 0;
 * - a fill's amountOut = min(floor(left × supply / receive), fillMax, the order's quotable left, the set's remaining
 *   left, the largest amountOut whose price check stays within uint256), and its amountIn = ceil(amountOut × receive /
 *   supply) ≤ left; a fill whose amountOut would be 0 or below minFill is not made and the next candidate is tried;
 * - when fillMax (not money or capacity) is what bounded a fill, the same quote is filled again (best price first),
 *   while parts remain;
 * - quotes of one order share its quotable (the smallest given for that order), quotes of one set share its
 *   remaining and its hashlocks left (the smallest given for that (order, sequence)); a set with no hashlock left
 *   makes no more fills;
 * - at most `maxParts` fills; Σ amountIn ≤ amountIn (the rest is not spent).
 *
 * Greedy by price is optimal for every unit routed when money or liquidity runs out first; when `maxParts` is what
 * binds, a small fill at a better price can use a part a larger one at a worse price would have used.
 *
 * Throws RangeError for a `maxParts` outside 1..8 (callers validate their input first).
 */
export const routeTake = (request: TakeRouteRequest): TakeRoute => {
  const { amountIn, maxParts, fillMax } = request
  if (!Number.isInteger(maxParts) || maxParts < 1 || maxParts > TAKE_PARTS_MAX) {
    throw new RangeError(`maxParts must be an integer from 1 to ${TAKE_PARTS_MAX}, got ${maxParts}`)
  }
  const ordered = request.candidates.filter(usable).sort(compareCandidates)
  const orderLeft = new Map<string, bigint>()
  const setLeft = new Map<string, bigint>()
  const locksLeft = new Map<string, number>()
  // Shared limits are the smallest given by any candidate, an unusable quote's too: a limit is the order's or the
  // set's, not the quote's.
  for (const c of request.candidates) {
    const q = c.quotable > 0n ? c.quotable : 0n
    const s = c.setRemaining > 0n ? c.setRemaining : 0n
    const key = setKey(c.orderId, c.sequence)
    orderLeft.set(c.orderId, min(orderLeft.get(c.orderId) ?? q, q))
    setLeft.set(key, min(setLeft.get(key) ?? s, s))
    if (c.hashlocksLeft !== undefined) {
      const h = Math.max(0, c.hashlocksLeft)
      locksLeft.set(key, Math.min(locksLeft.get(key) ?? h, h))
    }
  }
  const fills: Array<TakeFill> = []
  const seen = new Set<string>()
  let left = amountIn > 0n ? amountIn : 0n
  let totalOut = 0n
  for (const c of ordered) {
    if (fills.length >= maxParts || left === 0n) break
    const quoteKey = `${setKey(c.orderId, c.sequence)}\u0000${c.quoteIndex}`
    if (seen.has(quoteKey)) continue
    seen.add(quoteKey)
    const key = setKey(c.orderId, c.sequence)
    // in × supply < out × receive + supply ≤ MAX_UINT256 whenever out ≤ (MAX_UINT256 − supply) / receive.
    const arithmeticCap = (MAX_UINT256 - c.supply) / c.receive
    while (fills.length < maxParts && left > 0n && (locksLeft.get(key) ?? 1) > 0) {
      const cap = min(min(fillMax, arithmeticCap), min(orderLeft.get(c.orderId)!, setLeft.get(key)!))
      const out = min(amountOutFor(left, c.supply, c.receive), cap)
      if (out <= 0n || out < c.minFill) break
      const charged = amountInFor(out, c.supply, c.receive)
      fills.push({
        orderId: c.orderId,
        sequence: c.sequence,
        quoteIndex: c.quoteIndex,
        amountIn: charged,
        amountOut: out,
      })
      left -= charged
      totalOut += out
      orderLeft.set(c.orderId, orderLeft.get(c.orderId)! - out)
      setLeft.set(key, setLeft.get(key)! - out)
      if (locksLeft.has(key)) locksLeft.set(key, locksLeft.get(key)! - 1)
    }
  }
  return { fills, totalIn: (amountIn > 0n ? amountIn : 0n) - left, totalOut }
}
