/**
 * Which relayer transitions of a settlement call wake its take (src/Settlement/OutcomeWake.ts). v1 acts on a call's
 * inclusion (its own claim included makes the secret public for its claimPayment); v2 acts only on a call's end
 * (decideV2 reads final, reverted and replaced), so an inclusion or a reorg would only cost it a pass that waits. A
 * transition still in flight wakes neither. A fill's take is read once per runner, not once per outcome.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Ref, TestClock } from "effect"
import { type FillTake, fillTakeCache, outcomeWakesTake, takeToWake } from "../../src/Settlement/OutcomeWake.ts"

const FILL = "6f1c2a54-1111-4c3e-9a55-0123456789ab"
const TAKE = "0b7d9e10-2222-4f00-8a11-fedcba987654"

/** A lookup over a fixed map that counts its reads; `failing` ids fail. */
const countingLookup = (takes: Record<string, FillTake>, failing: ReadonlyArray<string> = []) =>
  Effect.map(Ref.make(0), (reads) => ({
    reads,
    lookup: (fillId: string) =>
      Ref.update(reads, (n) => n + 1).pipe(
        Effect.zipRight(failing.includes(fillId) ? Effect.fail("read failed" as const) : Effect.succeed(takes[fillId])),
      ),
  }))

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

  it.effect("a fill's key wakes its take; a payTake key names its take; in flight or other keys read nothing", () =>
    Effect.gen(function* () {
      const { reads, lookup } = yield* countingLookup({
        [FILL]: { take_id: TAKE, escrow_version: 1 },
      })
      expect(yield* takeToWake(`tx.final settle:${FILL}:lock`, lookup)).toBe(TAKE)
      expect(yield* takeToWake(`tx.included settle:${FILL}:claim`, lookup)).toBe(TAKE)
      expect(yield* takeToWake(`tx.final settle:take:${TAKE}:payTake`, lookup)).toBe(TAKE)
      expect(yield* takeToWake(`tx.included settle:take:${TAKE}:payTake`, lookup)).toBeUndefined()
      expect(yield* takeToWake(`tx.pending settle:${FILL}:lock`, lookup)).toBeUndefined()
      expect(yield* takeToWake("tx.final close:abc", lookup)).toBeUndefined()
      expect(yield* takeToWake("tx.final settle:00000000-0000-4000-8000-000000000000:lock", lookup)).toBeUndefined()
      expect(yield* Ref.get(reads)).toBe(3)
    }),
  )

  it.effect("cached: a found take is read once; no fill is read again after a minute; a failed read is not kept", () =>
    Effect.gen(function* () {
      const missing = "00000000-0000-4000-8000-000000000000"
      const broken = "not-a-uuid"
      const { reads, lookup } = yield* countingLookup({ [FILL]: { take_id: TAKE, escrow_version: 2 } }, [broken])
      const takes = yield* fillTakeCache(lookup)
      for (let i = 0; i < 5; i++)
        expect(yield* takeToWake(`tx.final settle:${FILL}:lock`, (id) => takes.get(id))).toBe(TAKE)
      expect(yield* Ref.get(reads)).toBe(1)
      yield* takes.get(missing)
      yield* takes.get(missing)
      expect(yield* Ref.get(reads)).toBe(2)
      yield* TestClock.adjust("61 seconds")
      expect(yield* takes.get(missing)).toBeUndefined()
      expect(yield* Ref.get(reads)).toBe(3)
      expect(yield* Effect.flip(takes.get(broken))).toBe("read failed")
      // A failure is shared by the reads of its own millisecond only (Cache expires an entry after its time).
      yield* TestClock.adjust("1 millis")
      expect(yield* Effect.flip(takes.get(broken))).toBe("read failed")
      expect(yield* Ref.get(reads)).toBe(5)
      // The found take outlives the minute.
      yield* takes.get(FILL)
      expect(yield* Ref.get(reads)).toBe(5)
    }),
  )
})
