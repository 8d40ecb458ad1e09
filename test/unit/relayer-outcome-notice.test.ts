/**
 * What a relayer transition's notification carries (src/Relayer/Repo.ts RELAYER_OUTCOME_CHANNEL): its journal kind
 * and the idempotency key, so a listener can skip the transitions it never acts on (the settlement's wake skips
 * IN_FLIGHT_TRANSITIONS, close queues and order funding UNENDED_TRANSITIONS) while awaitOutcome routes on the key as
 * before.
 */
import { describe, expect, it } from "vitest"
import { nextTransition, type OpenClose } from "../../src/Escrow/Closes.ts"
import { IN_FLIGHT_TRANSITIONS, parseRelayerOutcome, UNENDED_TRANSITIONS } from "../../src/Relayer/Transitions.ts"

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

  it("unended: in flight, included or reorged; a close decides nothing on those statuses, only on a request's end", () => {
    expect([...UNENDED_TRANSITIONS].sort()).toEqual([
      "tx.bumped",
      "tx.included",
      "tx.pending",
      "tx.queued",
      "tx.reorged",
    ])
    // A closing close whose event the index already shows (the strongest case for moving on): it still waits
    // while its request is queued, pending or included, and moves once the request is final, reverted or replaced.
    const close = (tx_status: string) =>
      ({
        state: "closing",
        deadline: null,
        tx_status,
        r_tx_hash: "0xabc",
        tx_block: "10",
        tx_error: null,
        ev_refused: false,
        ev_amount: "5",
        indexed_block: "12",
      }) as unknown as OpenClose
    for (const status of ["queued", "pending", "included"]) expect(nextTransition(close(status), 0)).toBeUndefined()
    expect(nextTransition(close("final"), 0)?.to).toBe("final")
    expect(nextTransition(close("reverted"), 0)?.to).toBe("reverted")
    expect(nextTransition(close("replaced"), 0)?.to).toBe("reverted")
  })
})
