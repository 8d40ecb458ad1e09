/** The watchers' wait between polls (src/Chain/HeadWake.ts): the next poll on the next block, at most poll_ms later. */
import { expect, it } from "@effect/vitest"
import { Effect, Fiber, TestClock } from "effect"
import type { PublicClient } from "viem"
import { awaitNewHead } from "../../src/Chain/HeadWake.ts"

/** A client whose head reads answer `heads` in turn (the last one again after that), or fail from `failAt`. */
const clientOf = (heads: ReadonlyArray<bigint>, failAt = Number.POSITIVE_INFINITY) => {
  let reads = 0
  const client = {
    getBlockNumber: async (options?: { cacheTime?: number }) => {
      if (options?.cacheTime !== 0) throw new Error("a cached head would hide the new block")
      const i = reads++
      if (i >= failAt) throw new Error("rpc down")
      return heads[Math.min(i, heads.length - 1)]!
    },
  }
  return { client: client as unknown as PublicClient, reads: () => reads }
}

/** Runs the wait on the test clock, advancing 50 ms at a time; answers the test-clock ms it took. */
const timed = (wait: Effect.Effect<void>) =>
  Effect.gen(function* () {
    const fiber = yield* Effect.fork(wait)
    let ms = 0
    while ((yield* Fiber.poll(fiber))._tag === "None") {
      yield* TestClock.adjust("50 millis")
      ms += 50
      if (ms > 10_000) throw new Error("the wait never ended")
    }
    return ms
  })

it.effect("a new block ends the wait at the first read that sees it", () =>
  Effect.gen(function* () {
    const { client, reads } = clientOf([5n, 5n, 6n])
    expect(yield* timed(awaitNewHead(client, 5n, 100, 1000))).toBe(300)
    expect(reads()).toBe(3)
  }),
)

it.effect("no new block: the wait ends after poll_ms", () =>
  Effect.gen(function* () {
    const { client, reads } = clientOf([5n])
    expect(yield* timed(awaitNewHead(client, 5n, 100, 1000))).toBe(1000)
    expect(reads()).toBe(9)
  }),
)

it.effect("a failing head read ends the wait: the poll meets the fault and reports it", () =>
  Effect.gen(function* () {
    const { client } = clientOf([5n], 1)
    expect(yield* timed(awaitNewHead(client, 5n, 100, 1000))).toBe(200)
  }),
)

it.effect("no head known yet, or head reads off (every >= within): a plain pause, no read", () =>
  Effect.gen(function* () {
    const first = clientOf([5n])
    expect(yield* timed(awaitNewHead(first.client, undefined, 100, 1000))).toBe(1000)
    const off = clientOf([5n])
    expect(yield* timed(awaitNewHead(off.client, 5n, 1000, 1000))).toBe(1000)
    expect(first.reads() + off.reads()).toBe(0)
  }),
)
