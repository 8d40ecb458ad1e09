/**
 * When a maker identity's fades make it not routable (settlement v2, DESIGN §10; src/Settlement/RepoV2.ts keeps the
 * counts). A chance: a payment final on the identity's live lock with at least reveal_cutoff left before
 * takerExpiry; a fade: such a payment never claimed. Flagged once fades > maxFadeRate × max(chances, minChances):
 * the floor keeps a new identity from being flagged for its first miss, and a rate of 0 flags at the first fade.
 */
export interface FadePolicy {
  /** settlement.max_fade_rate, 0..1. */
  readonly maxFadeRate: number
  /** settlement.fade_min_chances, ≥ 1. */
  readonly minChances: number
}

export const fadeFlagged = (fades: number, chances: number, policy: FadePolicy): boolean =>
  fades > policy.maxFadeRate * Math.max(chances, policy.minChances)
