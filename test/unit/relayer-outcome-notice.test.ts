/**
 * What a relayer transition's notification carries (src/Relayer/Repo.ts RELAYER_OUTCOME_CHANNEL): its journal kind
 * and the idempotency key, so a listener can skip the transitions it never acts on (the settlement's wake skips
 * IN_FLIGHT_TRANSITIONS) while awaitOutcome, close queues and order funding route on the key as before.
 */
import { describe, expect, it } from "vitest"
import { IN_FLIGHT_TRANSITIONS, parseRelayerOutcome } from "../../src/Relayer/Repo.ts"

describe("relayer outcome notifications", () => {
  it("split at the first space: the kind, then the key as it was stored (colons and spaces kept)", () => {
    expect(parseRelayerOutcome("tx.final settle:take:7f3c:payTake:2")).toEqual({
      kind: "tx.final",
      key: "settle:take:7f3c:payTake:2",
    })
    expect(parseRelayerOutcome("tx.included close:a key with spaces")).toEqual({
      kind: "tx.included",
      key: "close:a key with spaces",
    })
  })

  it("a payload without a kind (a notification from before the kind was added) is a key", () => {
    expect(parseRelayerOutcome("fund:0xabc")).toEqual({ kind: "", key: "fund:0xabc" })
  })

  it("in flight: recorded, sent, re-sent; never inclusion, finality, failure or a reorg", () => {
    expect([...IN_FLIGHT_TRANSITIONS].sort()).toEqual(["tx.bumped", "tx.pending", "tx.queued"])
    for (const kind of ["tx.included", "tx.final", "tx.reverted", "tx.replaced", "tx.reorged"]) {
      expect(IN_FLIGHT_TRANSITIONS).not.toContain(kind)
    }
  })
})
