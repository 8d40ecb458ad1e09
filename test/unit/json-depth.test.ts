import fc from "fast-check"
import { describe, expect, it } from "vitest"
import { exceedsJsonDepth, MAX_JSON_DEPTH } from "../../src/Domain/JsonDepth.ts"

/** The nesting depth of a parsed value, computed the obvious (recursive) way: the reference. */
const depthOf = (v: unknown): number =>
  Array.isArray(v)
    ? 1 + Math.max(0, ...v.map(depthOf))
    : v !== null && typeof v === "object"
      ? 1 + Math.max(0, ...Object.values(v).map(depthOf))
      : 0

describe("exceedsJsonDepth", () => {
  it("counts arrays and objects, up to and past the limit", () => {
    expect(exceedsJsonDepth("1")).toBe(false)
    expect(exceedsJsonDepth("{}")).toBe(false)
    expect(exceedsJsonDepth(`${"[".repeat(MAX_JSON_DEPTH)}${"]".repeat(MAX_JSON_DEPTH)}`)).toBe(false)
    expect(exceedsJsonDepth(`${"[".repeat(MAX_JSON_DEPTH + 1)}${"]".repeat(MAX_JSON_DEPTH + 1)}`)).toBe(true)
    expect(exceedsJsonDepth(`${'{"a":'.repeat(MAX_JSON_DEPTH + 1)}1${"}".repeat(MAX_JSON_DEPTH + 1)}`)).toBe(true)
    // Siblings do not add up: depth, not count.
    expect(exceedsJsonDepth(`[${"[],".repeat(10_000)}[]]`, 2)).toBe(false)
    // Unclosed openers count as they come.
    expect(exceedsJsonDepth("[".repeat(30_000))).toBe(true)
  })

  it("ignores brackets inside strings, honouring escapes", () => {
    expect(exceedsJsonDepth(`["${"[".repeat(1000)}"]`)).toBe(false)
    expect(exceedsJsonDepth(`{"${"{".repeat(1000)}":1}`)).toBe(false)
    // An escaped quote does not end the string; an escaped backslash before a quote does.
    expect(exceedsJsonDepth(`["\\"${"[".repeat(1000)}"]`)).toBe(false)
    expect(exceedsJsonDepth(`["\\\\", ${"[".repeat(100)}${"]".repeat(100)}]`)).toBe(true)
    expect(exceedsJsonDepth(`["\\u005b\\\\\\"[[[", []]`, 1)).toBe(true)
    expect(exceedsJsonDepth(`["\\u005b\\\\\\"[[["]`, 1)).toBe(false)
  })

  it("agrees with the depth of the parsed value for any JSON text", () => {
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 12 }), fc.integer({ min: 0, max: 14 }), (value, limit) => {
        const text = JSON.stringify(value)
        expect(exceedsJsonDepth(text, limit)).toBe(depthOf(value) > limit)
      }),
      { numRuns: 2000 },
    )
  })

  it("is linear: megabytes of brackets are judged in milliseconds, without recursion", () => {
    const flat = `[${"[1,2,3],".repeat(500_000)}[]]`
    const deep = `${"[".repeat(2_000_000)}${"]".repeat(2_000_000)}`
    const t0 = performance.now()
    expect(exceedsJsonDepth(flat)).toBe(false)
    expect(exceedsJsonDepth(deep, Number.POSITIVE_INFINITY)).toBe(false)
    expect(performance.now() - t0).toBeLessThan(1000)
  })
})
