import { describe, expect, it } from "@effect/vitest"
import { ACTOR_LOOP_WINDOW_SECONDS, ALERTS_PER_KIND, type AlertFacts, deriveAlerts } from "../../src/Domain/Alerts.ts"

const now = Date.parse("2026-11-25T12:00:00Z")
const facts = (over: Partial<AlertFacts>): AlertFacts => ({
  nowMs: now,
  fillsFailed: [],
  fillsOld: [],
  closesOld: [],
  chains: [],
  actors: [],
  singletons: [],
  aliveRunners: 1,
  shardsOwned: 300,
  shardsTotal: 300,
  ...over,
})

describe("deriveAlerts", () => {
  it("nothing wrong: no alert", () => {
    expect(deriveAlerts(facts({}))).toEqual([])
  })
  it("a restart loop only while the last failure is recent and restarts reach the threshold", () => {
    const actor = (restarts: number, agoS: number) => ({
      kind: "settlement",
      restarts,
      lastFailureAt: now - agoS * 1000,
      lastFailure: "boom",
    })
    expect(deriveAlerts(facts({ actors: [actor(3, 10)] })).map((a) => a.kind)).toEqual(["actor_restarting"])
    expect(deriveAlerts(facts({ actors: [actor(2, 10)] }))).toEqual([])
    expect(deriveAlerts(facts({ actors: [actor(9, ACTOR_LOOP_WINDOW_SECONDS + 1)] }))).toEqual([])
  })
  it("an unchecked chain is not out of gas (the watcher has not read it yet)", () => {
    const chain = { venue: "v", gas: 0n, minGas: 10n }
    expect(deriveAlerts(facts({ chains: [{ ...chain, checked: false }] }))).toEqual([])
    expect(deriveAlerts(facts({ chains: [{ ...chain, checked: true }] }))[0]).toMatchObject({
      kind: "relayer_out_of_gas",
      degrades: true,
    })
  })
  it("no live runner (a process without the cluster): no ownership alerts", () => {
    const f = facts({ aliveRunners: 0, shardsOwned: 0, singletons: [{ name: "settlement", owned: false }] })
    expect(deriveAlerts(f)).toEqual([])
  })
  it("a fill out of attempts is not also listed as stuck; long lists end with a count", () => {
    const old = Array.from({ length: ALERTS_PER_KIND + 5 }, (_, i) => ({
      id: `f${i}`,
      state: "paid",
      createdAt: now - 7200_000,
    }))
    const alerts = deriveAlerts(
      facts({ fillsFailed: [{ id: "f0", call: "pay", reason: "reverted", at: now }], fillsOld: old }),
    )
    const stuck = alerts.filter((a) => a.kind === "fill_stuck")
    expect(stuck.map((a) => a.subject)).not.toContain("f0")
    expect(stuck).toHaveLength(ALERTS_PER_KIND + 1)
    expect(stuck.at(-1)).toMatchObject({ subject: "+4", message: "4 more like these" })
  })
})
