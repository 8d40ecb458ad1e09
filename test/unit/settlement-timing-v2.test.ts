import { describe, expect, it } from "vitest"
import { settlementTimingV2 } from "../../src/Chain/EscrowV2Check.ts"
import { DeploymentConfig } from "../../src/Config.ts"
import {
  constructorTimings,
  DEVNET_CHAIN_PARAMS,
  DEVNET_TIMING_V2,
  timingLowerBounds,
  timingProblems,
  timingViolations,
} from "../../src/Domain/SettlementTimingV2.ts"
import { testDeployment } from "../support/TestConfig.ts"

describe("settlement v2 timing (DESIGN §6)", () => {
  it("the devnet numbers satisfy every inequality on the devnet's chains", () => {
    expect(timingViolations(DEVNET_TIMING_V2, DEVNET_CHAIN_PARAMS)).toEqual([])
    const lb = timingLowerBounds(DEVNET_CHAIN_PARAMS, DEVNET_TIMING_V2.revealCutoff)
    // The documented bounds (README "Settlement v2 timing").
    expect(lb).toEqual({ lockCutoff: 2, payByMax: 35, revealCutoff: 17, takerTimeoutMin: 614, claimWindow: 300 })
    const t = DEVNET_TIMING_V2
    expect(t.payByMax + t.takerTimeoutMin + t.claimWindow).toBeLessThanOrEqual(t.maxLock)
    expect(t.payByMax + t.takerTimeout + t.claimWindow).toBeLessThanOrEqual(t.maxLock)
    expect(constructorTimings(t)).toEqual([7200n, 120n, 600n, 300n, 900n])
  })

  it("the config defaults are the devnet numbers, consistent with the spec's four values", () => {
    const d = testDeployment()
    expect(settlementTimingV2(d)).toEqual(DEVNET_TIMING_V2)
    expect(timingProblems(settlementTimingV2(d))).toEqual([])
  })

  it("each broken inequality is named", () => {
    const t = DEVNET_TIMING_V2
    const broken = (patch: Partial<typeof t>) => timingViolations({ ...t, ...patch }, DEVNET_CHAIN_PARAMS)
    expect(broken({ maxLock: 1000 }).join()).toMatch(
      /pay_by_max 120 \+ taker_timeout_min 900 \+ claim_window 600 > max_lock 1000/,
    )
    expect(broken({ takerTimeout: 600 }).join()).toMatch(/taker_timeout 600 < taker_timeout_min 900/)
    expect(broken({ maxQuoteLife: 100 }).join()).toMatch(/quote_validity_seconds_max 300 > max_quote_life 100/)
    expect(broken({ payByMax: 20 }).join()).toMatch(/pay_by_max 20 < 35/)
    expect(broken({ claimWindow: 60 }).join()).toMatch(/claim_window 60 < 300/)
    expect(broken({ takerTimeoutMin: 610 }).join()).toMatch(/taker_timeout_min 610 < 614/)
    expect(broken({ revealCutoff: 10 }).join()).toMatch(/reveal_cutoff 10 < 17/)
    expect(broken({ lockCutoff: 1 }).join()).toMatch(/lock_cutoff 1 < 2/)
    expect(broken({ maxLock: 40 * 86_400 }).join()).toMatch(/30 days/)
  })

  it("existing configs stay valid: escrow_v2 is optional, the v2 values have defaults", () => {
    const d = testDeployment()
    expect(d.venues[0]!.escrow_v2).toBeUndefined()
    expect(d.settlement.claim_window_seconds).toBe(600)
    expect(d.settlement.pay_by_max_seconds).toBe(120)
    expect(d.settlement.max_lock_seconds).toBe(7200)
    expect(DeploymentConfig.fields.settlement).toBeDefined()
  })
})
