/**
 * Which relayer transitions of a settlement call wake its take (actors/Settlement.ts outcomeWakesTake). v1 acts on
 * a call's inclusion (its own claim included makes the secret public for its claimPayment); v2 acts only on a
 * call's end (decideV2 reads final, reverted and replaced), so an inclusion or a reorg would only cost it a pass
 * that waits. A transition still in flight wakes neither.
 */
import { describe, expect, it } from "vitest"
import { outcomeWakesTake } from "../../actors/Settlement.ts"

describe("settlement wake on a relayer outcome", () => {
  it("in flight: neither version", () => {
    for (const kind of ["tx.queued", "tx.pending", "tx.bumped"]) {
      expect([outcomeWakesTake(kind, 1), outcomeWakesTake(kind, 2)]).toEqual([false, false])
    }
  })

  it("included or reorged: v1 only", () => {
    for (const kind of ["tx.included", "tx.reorged"]) {
      expect([outcomeWakesTake(kind, 1), outcomeWakesTake(kind, 2)]).toEqual([true, false])
    }
  })

  it("a call's end: both", () => {
    for (const kind of ["tx.final", "tx.reverted", "tx.replaced"]) {
      expect([outcomeWakesTake(kind, 1), outcomeWakesTake(kind, 2)]).toEqual([true, true])
    }
  })
})
