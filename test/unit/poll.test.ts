/**
 * The tests' one poll helper (test/support/Poll.ts): it yields the read that satisfied the condition, and a poll
 * that gives up says which one it was (the caller's file and line) and what it read last, so a flaky wait in CI
 * names the condition that never held.
 */
import { expect, it } from "@effect/vitest"
import { Effect, Fiber, Ref, TestClock } from "effect"
import { pollUntil } from "../support/Poll.ts"

it.effect("yields the first read that satisfies the condition", () =>
  Effect.gen(function* () {
    const n = yield* Ref.make(0)
    const fiber = yield* Effect.fork(
      pollUntil(
        Ref.updateAndGet(n, (x) => x + 1),
        (x) => x === 3,
        { every: "1 second", within: "1 minute" },
      ),
    )
    yield* TestClock.adjust("5 seconds")
    expect(yield* Fiber.join(fiber)).toBe(3)
  }),
)

it.effect("a timeout names the poll's caller and its last read", () =>
  Effect.gen(function* () {
    const n = yield* Ref.make(0)
    const fiber = yield* Effect.fork(
      pollUntil(
        Ref.updateAndGet(n, (x) => x + 1).pipe(Effect.map((x) => ({ locked: BigInt(x) }))),
        (r) => r.locked === 0n,
        { every: "1 second", within: "10 seconds" },
      ).pipe(Effect.flip),
    )
    yield* TestClock.adjust("11 seconds")
    const error = yield* Fiber.join(fiber)
    expect(error.message).toMatch(/^pollUntil: condition not reached within 10s \(.*poll\.test\.ts:\d+:\d+\)\)?; /)
    expect(error.message).toMatch(/last read: \{"locked":"(10|11)"\}$/)
  }),
)
