/**
 * Settlement v2 take pieces that need no chain: the router's hashlock budget per quote set (one fill per unused
 * hashlock index) and the times a v2 take fixes (src/Domain/TakeTimingV2.ts) against the escrow's lock rules.
 */
import fc from "fast-check"
import { type Hex, keccak256, toHex } from "viem"
import { describe, expect, it } from "vitest"
import { hashlockTree } from "../../src/Domain/Hashlocks.ts"
import { routeTake, type TakeCandidate } from "../../src/Domain/TakeRouter.ts"
import { takeTimesV2 } from "../../src/Domain/TakeTimingV2.ts"
import { cachedSet, rememberSet } from "../../src/Orders/HashlockTreeCache.ts"
import { audienceOf, visibleTo } from "../../src/Stream/EventFilter.ts"

const BIG = 10n ** 30n
const quote = (over: Partial<TakeCandidate>): TakeCandidate => ({
  orderId: "0xa",
  sequence: 1n,
  identityId: "identity",
  quoteIndex: 0,
  supply: 1n,
  receive: 1n,
  minFill: 0n,
  quotable: BIG,
  setRemaining: BIG,
  ...over,
})

describe("take router: hashlocks left per set", () => {
  it("a set makes at most as many fills as it has hashlock indexes left, shared by its quotes", () => {
    // fill_max 10 forces repeated fills of the same quote; the set has 2 indexes left for its two quotes.
    const r = routeTake({
      amountIn: 100n,
      candidates: [quote({ hashlocksLeft: 2 }), quote({ quoteIndex: 1, hashlocksLeft: 2 })],
      maxParts: 8,
      fillMax: 10n,
    })
    expect(r.fills.map((f) => [f.quoteIndex, f.amountOut])).toEqual([
      [0, 10n],
      [0, 10n],
    ])
  })

  it("a set with none left makes no fill; another order's set still does; v1 candidates are unbounded", () => {
    const r = routeTake({
      amountIn: 30n,
      candidates: [quote({ supply: 2n, hashlocksLeft: 0 }), quote({ orderId: "0xb", hashlocksLeft: 1 })],
      maxParts: 8,
      fillMax: 10n,
    })
    expect(r.fills.map((f) => f.orderId)).toEqual(["0xb"])
    expect(routeTake({ amountIn: 30n, candidates: [quote({})], maxParts: 8, fillMax: 10n }).fills).toHaveLength(3)
  })
})

describe("v2 take times", () => {
  const devnet = {
    pay_by_max_seconds: 120,
    claim_window_seconds: 600,
    max_lock_seconds: 7200,
    taker_timeout_seconds: 3600,
    taker_timeout_min_seconds: 900,
  }

  it("devnet values", () => {
    expect(takeTimesV2(1000n, devnet, 120)).toEqual({
      payBy: 1115n,
      payDeadline: 1057n,
      takerExpiry: 4715n,
      makerExpiry: 5315n,
    })
  })

  it("a lock at any chain time from now − slack until payBy passes every timing rule of the escrow", () => {
    fc.assert(
      fc.property(
        fc.record({
          pay_by_max_seconds: fc.integer({ min: 8, max: 3600 }),
          claim_window_seconds: fc.integer({ min: 1, max: 86_400 }),
          taker_timeout_min_seconds: fc.integer({ min: 1, max: 86_400 }),
          taker_timeout_seconds: fc.integer({ min: 1, max: 200_000 }),
          extra: fc.integer({ min: 0, max: 100_000 }),
        }),
        fc.integer({ min: 1, max: 10_000 }),
        fc.bigInt({ min: 1_000_000n, max: 2_000_000_000n }),
        fc.double({ min: 0, max: 1, noNaN: true }),
        (r, payWindow, now, at) => {
          // A consistent deployment (start-up refuses others): PAY_BY_MAX + TAKER_TIMEOUT_MIN + CLAIM_WINDOW ≤ MAX_LOCK.
          const s = {
            ...r,
            max_lock_seconds: r.pay_by_max_seconds + r.taker_timeout_min_seconds + r.claim_window_seconds + r.extra,
          }
          const t = takeTimesV2(now, s, payWindow)
          const slack = BigInt(Math.min(5, Math.floor(s.pay_by_max_seconds / 4)))
          const from = now - slack
          const lockAt = from + BigInt(Math.floor(Number(t.payBy - 1n - from) * at))
          expect(lockAt < t.payBy).toBe(true)
          expect(t.payBy <= lockAt + BigInt(s.pay_by_max_seconds)).toBe(true)
          expect(t.makerExpiry <= lockAt + BigInt(s.max_lock_seconds)).toBe(true)
          expect(t.makerExpiry >= t.takerExpiry + BigInt(s.claim_window_seconds)).toBe(true)
          expect(t.takerExpiry >= t.payBy + BigInt(s.taker_timeout_min_seconds)).toBe(true)
          // Signatures are due in the first half of the window, never after the pay window.
          expect(t.payDeadline > now && t.payDeadline <= now + BigInt(payWindow)).toBe(true)
          expect(t.payBy - t.payDeadline >= t.payDeadline - now - 1n).toBe(true)
        },
      ),
    )
  })
})

describe("stream: the pay key's prompt reaches the take's master", () => {
  it("take.pay_authorization_requested (journaled by Settlement for the master) is on that master's account channel only", () => {
    const master = "0x00000000000000000000000000000000000000a1"
    const event = {
      cursor: 1n,
      kind: "take.pay_authorization_requested",
      master,
      identityId: null,
      from: null,
      to: null,
      json: "{}",
    }
    const session = (m: string) => ({ _tag: "Session" as const, sessionId: "s", master: m, admin: false })
    expect(visibleTo(audienceOf(["account"], undefined, session(master)))(event)).toBe(true)
    expect(visibleTo(audienceOf(["account"], undefined, session(`${master.slice(0, -1)}2`)))(event)).toBe(false)
    expect(visibleTo(audienceOf(["trades", "account"], undefined, undefined))(event)).toBe(false)
  })
})

describe("hashlock tree cache", () => {
  const hashlocks = (label: string, n: number): Array<Hex> =>
    Array.from({ length: n }, (_, i) => keccak256(toHex(`${label}${i}`)))

  it("keeps a set only under its signed root, answers it again without a read, forgets the oldest past its budget", () => {
    const hs = hashlocks("a", 4)
    const root = hashlockTree(hs).root
    const key = { orderId: "0xA", sequence: "1", root }
    expect(rememberSet({ ...key, root: keccak256("0x01") }, hs)).toBeUndefined()
    expect(cachedSet(key)).toBeUndefined()
    const kept = rememberSet(key, hs)!
    expect(kept.tree.root).toBe(root)
    expect(cachedSet({ ...key, orderId: "0xa" })).toBe(kept)
    // A budget of 6 leaves: a set of 2 fits beside it; reading the first makes the new one the least recently used,
    // so a third set (4 + 2 + 2 > 6) pushes out the second; two more push out the third, then the first.
    rememberSet({ orderId: "0xb", sequence: "1", root: hashlockTree(hashlocks("b", 2)).root }, hashlocks("b", 2), 6)
    expect(cachedSet(key)).toBe(kept)
    rememberSet({ orderId: "0xc", sequence: "1", root: hashlockTree(hashlocks("c", 2)).root }, hashlocks("c", 2), 6)
    expect(cachedSet({ orderId: "0xb", sequence: "1", root: hashlockTree(hashlocks("b", 2)).root })).toBeUndefined()
    expect(cachedSet(key)).toBe(kept)
    for (const label of ["d", "e"]) {
      const hs2 = hashlocks(label, 2)
      rememberSet({ orderId: `0x${label}`, sequence: "1", root: hashlockTree(hs2).root }, hs2, 6)
    }
    expect(cachedSet(key)).toBeUndefined()
  })
})
