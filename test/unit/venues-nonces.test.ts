/**
 * Nonce rules: the adapters' helpers (Hyperliquid window and replay horizon, Aster microsecond nonces, agent
 * expiry, the strictly increasing request-nonce source) and the simulators' nonce books (Hyperliquid's 100 highest,
 * Aster's 100 most recent).
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, TestClock } from "effect"
import { HighestNonceSet, RecentNonceList } from "../../infra/devnet/venues/SimNonces.ts"
import {
  agentExpiryMs,
  isFreshNonce,
  makeMicrosNonceSource,
  microsFromMillis,
  withdrawalReplayableUntilMs,
} from "../../src/Venues/AsterNonce.ts"
import { earliestAcceptanceMs, isWithinNonceWindow, replayableUntilMs } from "../../src/Venues/HyperliquidNonce.ts"

const T = 1_700_000_000_000
const DAY = 86_400_000

describe("Hyperliquid nonce window (T − 2 days, T + 1 day)", () => {
  it("accepts strictly inside the window only", () => {
    expect(isWithinNonceWindow(T, T)).toBe(true)
    expect(isWithinNonceWindow(T - 2 * DAY + 1, T)).toBe(true)
    expect(isWithinNonceWindow(T - 2 * DAY, T)).toBe(false)
    expect(isWithinNonceWindow(T + DAY - 1, T)).toBe(true)
    expect(isWithinNonceWindow(T + DAY, T)).toBe(false)
  })
  it("a nonce is dead once T reaches nonce + 2 days; its entry is no older than nonce − 1 day", () => {
    const nonce = T
    expect(replayableUntilMs(nonce)).toBe(nonce + 2 * DAY)
    expect(isWithinNonceWindow(nonce, replayableUntilMs(nonce))).toBe(false)
    expect(isWithinNonceWindow(nonce, replayableUntilMs(nonce) - 1)).toBe(true)
    expect(earliestAcceptanceMs(nonce)).toBe(nonce - DAY)
    expect(isWithinNonceWindow(nonce, earliestAcceptanceMs(nonce))).toBe(false)
    expect(isWithinNonceWindow(nonce, earliestAcceptanceMs(nonce) + 1)).toBe(true)
  })
})

describe("Aster nonces", () => {
  it("microseconds, 10 s freshness, 365-day agents in milliseconds, withdrawal replay horizon", () => {
    expect(microsFromMillis(T)).toBe(1_700_000_000_000_000)
    expect(isFreshNonce(T * 1000, T * 1000 + 10_000_000)).toBe(true)
    expect(isFreshNonce(T * 1000, T * 1000 + 10_000_001)).toBe(false)
    expect(isFreshNonce(T * 1000 + 10_000_001, T * 1000)).toBe(false)
    expect(agentExpiryMs(1_700_000_000_000_000, 365)).toBe(1_731_536_000_000)
    expect(withdrawalReplayableUntilMs(T * 1000)).toBe(T + 3_600_000 + 10_000)
  })

  it.effect("the request-nonce source follows the Clock in µs and never repeats", () =>
    Effect.gen(function* () {
      yield* TestClock.setTime(T)
      const next = yield* makeMicrosNonceSource
      expect(yield* next).toBe(T * 1000)
      expect(yield* next).toBe(T * 1000 + 1)
      expect(yield* next).toBe(T * 1000 + 2)
      yield* TestClock.adjust("1 second")
      expect(yield* next).toBe((T + 1000) * 1000)
    }),
  )
})

describe("simulator nonce books", () => {
  it("Hyperliquid keeps the highest N: duplicates and nonces at or below the smallest kept are refused", () => {
    const set = new HighestNonceSet(3)
    for (const n of [10n, 30n, 20n]) expect(set.use("a", n).ok).toBe(true)
    expect(set.use("a", 20n)).toMatchObject({ ok: false, reason: "duplicate" })
    expect(set.use("a", 5n)).toMatchObject({ ok: false, reason: "too_low", least: 10n })
    expect(set.use("a", 15n).ok).toBe(true) // evicts 10
    expect(set.use("a", 12n)).toMatchObject({ ok: false, reason: "too_low", least: 15n })
    expect(set.use("b", 1n).ok).toBe(true) // per signer
    // Not full yet: any unused nonce is fine.
    const fresh = new HighestNonceSet(100)
    expect(fresh.use("a", 50n).ok).toBe(true)
    expect(fresh.use("a", 40n).ok).toBe(true)
  })

  it("Aster keeps the most recent N: the oldest inserted is dropped; below the minimum of a full list is expired", () => {
    const list = new RecentNonceList(3)
    for (const n of [10n, 30n, 20n]) expect(list.use("u", n).ok).toBe(true)
    expect(list.use("u", 30n)).toMatchObject({ ok: false, reason: "duplicate" })
    expect(list.use("u", 5n)).toMatchObject({ ok: false, reason: "too_low", least: 10n })
    expect(list.use("u", 15n).ok).toBe(true) // drops 10 (first inserted), keeps 30, 20, 15
    expect(list.use("u", 10n)).toMatchObject({ ok: false, reason: "too_low", least: 15n })
    expect(list.use("u", 25n).ok).toBe(true) // drops 30
    expect(list.use("u", 30n).ok).toBe(true) // 30 was forgotten: accepted again (the 10 s window guards time)
  })
})
