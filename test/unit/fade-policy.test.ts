import { describe, expect, it } from "vitest"
import { fadeFlagged } from "../../src/Domain/FadePolicy.ts"

describe("fade policy: fades over max_fade_rate × max(chances, fade_min_chances)", () => {
  const policy = { maxFadeRate: 0.2, minChances: 5 }
  it("a new identity is not flagged for its first miss; a second within the floor flags it", () => {
    expect(fadeFlagged(0, 0, policy)).toBe(false)
    expect(fadeFlagged(1, 1, policy)).toBe(false)
    expect(fadeFlagged(2, 2, policy)).toBe(true)
  })
  it("past the floor the rate decides", () => {
    expect(fadeFlagged(2, 10, policy)).toBe(false)
    expect(fadeFlagged(3, 10, policy)).toBe(true)
    expect(fadeFlagged(20, 100, policy)).toBe(false)
    expect(fadeFlagged(21, 100, policy)).toBe(true)
  })
  it("rate 0 flags at the first fade; rate 1 never", () => {
    expect(fadeFlagged(1, 1, { maxFadeRate: 0, minChances: 5 })).toBe(true)
    expect(fadeFlagged(0, 9, { maxFadeRate: 0, minChances: 5 })).toBe(false)
    expect(fadeFlagged(100, 100, { maxFadeRate: 1, minChances: 5 })).toBe(false)
  })
})
