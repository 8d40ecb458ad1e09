/**
 * Whole-token decimal strings ↔ base units: exact round trips, the canonical spelling the venues sign, refusal of
 * what cannot be represented, and the floor used for venue-reported balances.
 */
import { describe, expect, it } from "@effect/vitest"
import { Either } from "effect"
import fc from "fast-check"
import {
  fromWholeTokens,
  fromWholeTokensFloor,
  isCanonicalWholeTokens,
  normalizeWholeTokens,
  roundUpTo,
  toWholeTokens,
  withdrawalAmount,
} from "../../src/Venues/DecimalAmount.ts"

const decimals = fc.integer({ min: 0, max: 36 })
const units = fc.bigInt({ min: 0n, max: 2n ** 256n - 1n })

/** The reference normaliser of nktkas/hyperliquid (`normalizeDecimalString`), for plain decimals. */
const nktkasNormalize = (value: string): string => {
  const match = value.match(/^(-?)([0-9]*)(?:\.([0-9]*))?$/)
  if (!match) return value
  const [, , intRaw = "", fracRaw = ""] = match
  const int = intRaw.replace(/^0+/, "") || "0"
  let end = fracRaw.length
  while (end > 0 && fracRaw[end - 1] === "0") end--
  const frac = fracRaw.slice(0, end)
  return frac === "" ? int : `${int}.${frac}`
}

const right = <A, E>(e: Either.Either<A, E>): A => Either.getOrThrow(e)

describe("whole-token amounts", () => {
  it("formats the examples the venues use", () => {
    expect(right(toWholeTokens(12_500_000n, 6))).toBe("12.5")
    expect(right(toWholeTokens(1_000_000n, 6))).toBe("1")
    expect(right(toWholeTokens(10_000_000n, 6))).toBe("10")
    expect(right(toWholeTokens(500_000n, 6))).toBe("0.5")
    expect(right(toWholeTokens(1n, 6))).toBe("0.000001")
    expect(right(toWholeTokens(0n, 6))).toBe("0")
    expect(right(toWholeTokens(123n, 0))).toBe("123")
    expect(right(toWholeTokens(10n ** 18n + 1n, 18))).toBe("1.000000000000000001")
  })

  it("parses exactly, accepting non-canonical spellings of exact values", () => {
    expect(right(fromWholeTokens("12.5", 6))).toBe(12_500_000n)
    expect(right(fromWholeTokens("12.50", 6))).toBe(12_500_000n)
    expect(right(fromWholeTokens("012.500000000", 6))).toBe(12_500_000n)
    expect(right(fromWholeTokens("0.000001", 6))).toBe(1n)
    expect(right(fromWholeTokens("7", 0))).toBe(7n)
  })

  it("refuses what is not a plain decimal or needs more places than the token has", () => {
    for (const bad of ["", ".5", "5.", "1e6", "-1", "+1", " 1", "1,5", "0x10", "1.2.3", "١"]) {
      expect(Either.getLeft(fromWholeTokens(bad, 6)).pipe((o) => o._tag === "Some" && o.value.problem)).toBe("syntax")
    }
    const tooPrecise = fromWholeTokens("0.0000001", 6)
    expect(Either.isLeft(tooPrecise) && tooPrecise.left.problem).toBe("precision")
    expect(Either.isLeft(fromWholeTokens("1.5", 0))).toBe(true)
    expect(Either.isLeft(toWholeTokens(-1n, 6))).toBe(true)
    expect(Either.isLeft(toWholeTokens(1n, 78))).toBe(true)
  })

  it("refuses amounts finer than the venue's precision instead of rounding them", () => {
    // An 18-decimal token on a venue that keeps 6 places: 1e12 base units is 0.000001, 1e11 is not representable.
    expect(right(toWholeTokens(10n ** 12n, 18, 6))).toBe("0.000001")
    const r = toWholeTokens(10n ** 11n, 18, 6)
    expect(Either.isLeft(r) && r.left.problem).toBe("precision")
    expect(right(toWholeTokens(12n * 10n ** 17n, 18, 6))).toBe("1.2")
  })

  it("a withdrawal amount must be positive", () => {
    const r = withdrawalAmount(0n, 6)
    expect(Either.isLeft(r) && r.left.problem).toBe("zero")
    expect(right(withdrawalAmount(5n, 6))).toBe("0.000005")
  })

  it("floors venue balances with extra places and reads negatives as zero", () => {
    expect(right(fromWholeTokensFloor("23.72469206", 6))).toBe(23_724_692n)
    expect(right(fromWholeTokensFloor("13104.514502", 6))).toBe(13_104_514_502n)
    expect(right(fromWholeTokensFloor("0.0", 6))).toBe(0n)
    expect(right(fromWholeTokensFloor("-3.5", 6))).toBe(0n)
    expect(Either.isLeft(fromWholeTokensFloor("NaN", 6))).toBe(true)
  })

  it("property: base units → string → base units is the identity, and the string is canonical", () => {
    fc.assert(
      fc.property(units, decimals, (u, d) => {
        const text = right(toWholeTokens(u, d))
        expect(isCanonicalWholeTokens(text)).toBe(true)
        expect(right(fromWholeTokens(text, d))).toBe(u)
        expect(nktkasNormalize(text)).toBe(text)
      }),
      { numRuns: 2000 },
    )
  })

  it("property: every spelling of a value parses to it and normalises to the one canonical string", () => {
    const spelled = fc
      .tuple(units, decimals, fc.nat({ max: 5 }), fc.nat({ max: 5 }))
      .map(([u, d, leadingZeros, trailingZeros]) => {
        const canonical = right(toWholeTokens(u, d))
        const [int = "0", frac = ""] = canonical.split(".")
        const padded = `${"0".repeat(leadingZeros)}${int}${frac !== "" || trailingZeros > 0 ? `.${frac}${"0".repeat(trailingZeros)}` : ""}`
        return { u, d, canonical, padded }
      })
    fc.assert(
      fc.property(spelled, ({ u, d, canonical, padded }) => {
        expect(right(fromWholeTokens(padded, d))).toBe(u)
        expect(right(normalizeWholeTokens(padded))).toBe(canonical)
        expect(nktkasNormalize(padded)).toBe(canonical)
        expect(isCanonicalWholeTokens(padded)).toBe(padded === canonical)
      }),
      { numRuns: 2000 },
    )
  })

  it("property: formatting preserves order (no rounding anywhere)", () => {
    fc.assert(
      fc.property(units, units, decimals, (a, b, d) => {
        const x = right(fromWholeTokens(right(toWholeTokens(a, d)), d))
        const y = right(fromWholeTokens(right(toWholeTokens(b, d)), d))
        expect(a < b).toBe(x < y)
      }),
    )
  })

  it("property: the floor never exceeds the exact value and is exact when representable", () => {
    fc.assert(
      fc.property(units, fc.integer({ min: 0, max: 12 }), fc.integer({ min: 0, max: 12 }), (u, venuePlaces, d) => {
        const text = right(toWholeTokens(u, venuePlaces))
        const floored = right(fromWholeTokensFloor(text, d))
        // u / 10^venuePlaces tokens, expressed in 10^-d units, rounded down:
        const exact = (u * 10n ** BigInt(d)) / 10n ** BigInt(venuePlaces)
        expect(floored).toBe(exact)
      }),
    )
  })

  it("property: with a venue precision p, exactly the multiples of 10^(d-p) are representable", () => {
    fc.assert(
      fc.property(units, fc.integer({ min: 6, max: 30 }), fc.integer({ min: 0, max: 6 }), (u, d, p) => {
        const r = toWholeTokens(u, d, p)
        expect(Either.isRight(r)).toBe(u % 10n ** BigInt(d - p) === 0n)
      }),
    )
  })

  it("property: roundUpTo gives the least multiple of step at or above the amount", () => {
    fc.assert(
      fc.property(units, fc.bigInt({ min: 1n, max: 10n ** 30n }), (u, step) => {
        const r = roundUpTo(u, step)
        expect(r % step).toBe(0n)
        expect(r >= u && r - u < step).toBe(true)
      }),
    )
  })
})
