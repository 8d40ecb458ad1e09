import { Either } from "effect"
import fc from "fast-check"
import { describe, expect, it } from "vitest"
import { TRADE_CURSOR_MAX } from "../../src/Domain/CursorLimits.ts"
import {
  decodeTradeCursor,
  encodeTradeCursor,
  type TradeFilters,
  tradeCursorKey,
} from "../../src/Domain/TradeCursor.ts"

const key = tradeCursorKey(new Uint8Array(32).fill(7))
const all: TradeFilters = { scope: "all", master: null, pair: null }
const mine: TradeFilters = { scope: "mine", master: "0x00000000000000000000000000000000000000aa", pair: null }
const pair: TradeFilters = { scope: "all", master: null, pair: ["aster", "hyperliquid"] }
const position = { settledMicros: 1_763_778_000_123_456n, id: "7d4f2a3e-1b2c-4d5e-8f90-123456789abc" }

const uuid = fc.uuid().map((u) => u.toLowerCase())
const micros = fc.bigInt({ min: 0n, max: 10n ** 17n })
const filters = fc.record({
  scope: fc.constantFrom("all" as const, "mine" as const),
  master: fc.option(
    fc.stringMatching(/^[0-9a-f]{40}$/).map((h) => `0x${h}`),
    { nil: null },
  ),
  pair: fc.option(
    fc.constantFrom(["aster", "hyperliquid"] as const, ["hyperliquid", "aster"] as const, ["a", "b"] as const),
    {
      nil: null,
    },
  ),
})

describe("trade history cursor", () => {
  it("round-trips any position under the same filters, within 512 characters", () => {
    fc.assert(
      fc.property(micros, uuid, filters, (t, id, f) => {
        const cursor = encodeTradeCursor(key, f, { settledMicros: t, id })
        expect(cursor.length).toBeLessThanOrEqual(TRADE_CURSOR_MAX)
        expect(cursor).toMatch(/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/)
        expect(decodeTradeCursor(key, f, cursor)).toEqual(Either.right({ settledMicros: t, id }))
      }),
    )
  })

  it("is refused under other filters: scope, account, pair, every pair vs one", () => {
    const cursor = encodeTradeCursor(key, all, position)
    expect(Either.isLeft(decodeTradeCursor(key, mine, cursor))).toBe(true)
    expect(Either.isLeft(decodeTradeCursor(key, pair, cursor))).toBe(true)
    const mineCursor = encodeTradeCursor(key, mine, position)
    const other = { ...mine, master: "0x00000000000000000000000000000000000000bb" }
    expect(Either.isLeft(decodeTradeCursor(key, other, mineCursor))).toBe(true)
    expect(Either.isLeft(decodeTradeCursor(key, all, mineCursor))).toBe(true)
    const onePair = encodeTradeCursor(key, pair, position)
    expect(Either.isLeft(decodeTradeCursor(key, { ...pair, pair: ["aster", "other"] }, onePair))).toBe(true)
    expect(Either.isLeft(decodeTradeCursor(tradeCursorKey(new Uint8Array(32)), pair, onePair))).toBe(true)
  })

  it("a pair is unordered: a=x&b=y and a=y&b=x share cursors", () => {
    const cursor = encodeTradeCursor(key, pair, position)
    const swapped: TradeFilters = { ...pair, pair: ["hyperliquid", "aster"] }
    expect(decodeTradeCursor(key, swapped, cursor)).toEqual(Either.right(position))
  })

  it("refuses every single-character edit and junk", () => {
    const cursor = encodeTradeCursor(key, all, position)
    for (let i = 0; i < cursor.length; i++) {
      for (const c of ["A", "z", "_", "."]) {
        if (cursor[i] === c) continue
        const edited = cursor.slice(0, i) + c + cursor.slice(i + 1)
        expect(Either.isLeft(decodeTradeCursor(key, all, edited)), edited).toBe(true)
      }
    }
    for (const junk of ["", ".", "a.b", "x".repeat(513), `${cursor}.x`, "eyJ0IjoiMSJ9.AAAA", "%%%.%%%"]) {
      expect(Either.isLeft(decodeTradeCursor(key, all, junk)), junk).toBe(true)
    }
  })

  it("refuses random strings", () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 600 }), (s) => {
        expect(Either.isLeft(decodeTradeCursor(key, all, s))).toBe(true)
      }),
    )
  })
})
