import { readdirSync, readFileSync, statSync } from "node:fs"
import { join, relative } from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Cause, Clock, Effect, Fiber, Ref, TestClock } from "effect"
import { UnknownException } from "effect/Cause"
import { type ActorRecord, publicFailureMessage, Supervision, supervised } from "../../src/Cluster/Supervision.ts"
import { scrubUrls } from "../../src/Observability/Log.ts"

const root = new URL("../..", import.meta.url).pathname
const files = (dir: string): string[] =>
  readdirSync(dir).flatMap((name) => {
    const path = join(dir, name)
    return statSync(path).isDirectory() ? files(path) : path.endsWith(".ts") ? [path] : []
  })

const recordOf = (name: string) =>
  Effect.flatMap(Supervision, (b) => b.snapshot).pipe(
    Effect.map((all) => all.find((r) => r.name === name) as ActorRecord),
  )

/** Moves the TestClock in `step` ms increments until `done` or `limit` ms. */
const advanceUntil = (done: Effect.Effect<boolean>, step: number, limit: number) =>
  Effect.gen(function* () {
    for (let t = 0; t <= limit && !(yield* done); t += step) yield* TestClock.adjust(step)
  })

/** Gaps between consecutive start times. */
const gaps = (times: ReadonlyArray<number>) => times.slice(1).map((t, i) => t - times[i]!)

/** The backoff's i-th delay (0-based) is 500 ms · 2^i capped at 30 s, within ±20 % (± one clock step). */
const expectBackoff = (observed: ReadonlyArray<number>, step: number) =>
  observed.forEach((gap, i) => {
    const base = Math.min(500 * 2 ** i, 30_000)
    expect(gap, `delay ${i}`).toBeGreaterThanOrEqual(0.8 * base - step)
    expect(gap, `delay ${i}`).toBeLessThanOrEqual(1.2 * base + step)
  })

describe("supervised singletons", () => {
  it.effect("a body that dies three times is restarted three times with growing delays, then runs", () =>
    Effect.gen(function* () {
      const starts = yield* Ref.make<number[]>([])
      const body = Effect.gen(function* () {
        const now = yield* Clock.currentTimeMillis
        const n = (yield* Ref.updateAndGet(starts, (s) => [...s, now])).length
        if (n <= 3) return yield* Effect.die(new Error(`boom ${n} at https://user:pw@rpc.example/v3/SECRETKEY?x=1`))
        yield* Effect.never
      })
      const fiber = yield* Effect.fork(supervised("venue-watcher:test", body))
      yield* TestClock.adjust(0)
      let r = yield* recordOf("venue-watcher:test")
      expect(r).toMatchObject({ kind: "venue-watcher", active: false, restarts: 0 })
      expect(r.lastFailure?.message).toBe("boom 1 at https://rpc.example")
      yield* advanceUntil(
        Effect.map(Ref.get(starts), (s) => s.length >= 4),
        10,
        10_000,
      )
      const times = yield* Ref.get(starts)
      expect(times.length).toBe(4)
      expectBackoff(gaps(times), 10)
      r = yield* recordOf("venue-watcher:test")
      expect(r).toMatchObject({ active: true, restarts: 3 })
      expect(r.lastFailure?.message).toBe("boom 3 at https://rpc.example")
      // It stays up: no fifth start.
      yield* TestClock.adjust(120_000)
      expect((yield* Ref.get(starts)).length).toBe(4)
      yield* Fiber.interrupt(fiber)
      r = yield* recordOf("venue-watcher:test")
      // Interruption (a shard moving away, a stop) is no failure.
      expect(r).toMatchObject({ active: false, restarts: 3 })
      expect(r.lastFailure?.message).toBe("boom 3 at https://rpc.example")
    }).pipe(Effect.provide(Supervision.Live)),
  )

  it.effect("a failing or returning body is restarted too; delays stop growing at 30 s", () =>
    Effect.gen(function* () {
      const starts = yield* Ref.make<number[]>([])
      const body = Effect.gen(function* () {
        const now = yield* Clock.currentTimeMillis
        const n = (yield* Ref.updateAndGet(starts, (s) => [...s, now])).length
        if (n % 2 === 0) return yield* Effect.fail("typed failure" as const)
      })
      const fiber = yield* Effect.fork(supervised("close-queue", body))
      yield* advanceUntil(
        Effect.map(Ref.get(starts), (s) => s.length >= 10),
        200,
        300_000,
      )
      const times = yield* Ref.get(starts)
      expect(times.length).toBe(10)
      // 0.5, 1, 2, 4, 8, 16, then 30, 30, 30 s (not 32, 64, 128).
      expectBackoff(gaps(times), 200)
      const r = yield* recordOf("close-queue")
      expect(r.restarts).toBe(9)
      expect(r.lastFailure?.message).toMatch(/^(typed failure|BodyReturned: close-queue returned)$/)
      yield* Fiber.interrupt(fiber)
    }).pipe(Effect.provide(Supervision.Live)),
  )

  it.effect("a body that interrupts itself is restarted; an interruption from outside ends it quietly", () =>
    Effect.gen(function* () {
      const starts = yield* Ref.make(0)
      const body = Effect.flatMap(
        Ref.updateAndGet(starts, (n) => n + 1),
        (n) => (n === 1 ? Effect.interrupt : Effect.never),
      )
      const fiber = yield* Effect.fork(supervised("journal-publisher", body))
      yield* TestClock.adjust(700)
      expect(yield* Ref.get(starts)).toBe(2)
      expect(yield* recordOf("journal-publisher")).toMatchObject({ active: true, restarts: 1 })
      yield* Fiber.interrupt(fiber)
      const r = yield* recordOf("journal-publisher")
      expect(r).toMatchObject({ active: false, restarts: 1 })
      expect(r.lastFailure?.message).toBe("interrupted")
    }).pipe(Effect.provide(Supervision.Live)),
  )

  it("scrubs credentials, paths and queries from URLs", () => {
    expect(
      scrubUrls("rpc eth_call: HTTP request failed. URL: https://arb.example.com/v2/abcdef?key=1 status 500"),
    ).toBe("rpc eth_call: HTTP request failed. URL: https://arb.example.com status 500")
    expect(scrubUrls("connect postgres://app:hunter2@db.internal:5432/settle failed")).toBe(
      "connect postgres://db.internal:5432 failed",
    )
  })

  it("a public failure message: the first line, masked; never viem's URL and request body lines", () => {
    // What an Effect.tryPromise around a viem read used to publish on /health (leak audit, finding 3).
    const calldata = `0x70a08231${"00".repeat(12)}${"ab".repeat(20)}`
    const viem = new Error(
      "HTTP request failed.\n\nStatus: 500\nURL: https://rpc.example.com/v2/KEY123\n" +
        `Request body: {"method":"eth_call","params":[{"data":"${calldata}"}]}`,
    )
    const unknown = Cause.fail(new UnknownException(viem))
    const message = publicFailureMessage(unknown)
    expect(message).not.toMatch(/Request body|KEY123|70a08231|\n/)
    expect(message).toMatch(/^UnknownException: /)
    // A bearer token or a signature in a message is masked as in the log.
    const leaky = Cause.fail(new Error(`refused st_${"q".repeat(40)} with 0x${"cd".repeat(65)}`))
    expect(publicFailureMessage(leaky)).not.toMatch(/q{40}|(cd){65}/)
  })

  // Every singleton goes through supervisedSingleton, so none can fail and sit idle unseen.
  it("no module registers a singleton except through supervisedSingleton", () => {
    const registering = [...files(join(root, "src")), ...files(join(root, "actors"))]
      .filter((path) => /Singleton\.make\(|registerSingleton\(/.test(readFileSync(path, "utf8")))
      .map((path) => relative(root, path))
    expect(registering).toEqual(["src/Cluster/Supervision.ts"])
  })
})
