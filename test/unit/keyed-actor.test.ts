import { Entity, TestRunner } from "@effect/cluster"
import { Rpc } from "@effect/rpc"
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Layer, Ref, Schema } from "effect"
import { again, idle, keyedAdoption, keyedDriver, keyedEntityOptions } from "../../actors/Keyed.ts"
import { Tick, Wake, wakeKeyed } from "../../src/Cluster/Keyed.ts"
import { Supervision } from "../../src/Cluster/Supervision.ts"
import { pollUntil } from "../support/Poll.ts"

/**
 * The keyed-actor loop on the cluster's in-memory runner: an intent's rows are driven to their end by
 * passes, a wake from outside starts a pass, a failed pass is retried and counted against the kind, and
 * the kind's running entities are counted. The "rows" are a Ref standing in for the database.
 */
const Add = Rpc.make("Add", { payload: { n: Schema.Number } })
const Counter = Entity.make("keyed-test", [Wake, Tick, Add])

interface Rows {
  readonly pending: Record<string, number>
  readonly done: Record<string, number>
  readonly passes: number
  readonly failNext: number
}
const emptyRows: Rows = { pending: {}, done: {}, passes: 0, failNext: 0 }

class Store extends Context.Tag("KeyedTestStore")<Store, Ref.Ref<Rows>>() {}

/** One pass: moves one pending unit of this key to done; pending left → look again in 10 ms. */
const step = (id: string) =>
  Effect.gen(function* () {
    const rows = yield* Store
    const before = yield* Ref.getAndUpdate(rows, (r) => ({ ...r, passes: r.passes + 1 }))
    if (before.failNext > 0) {
      yield* Ref.update(rows, (r) => ({ ...r, failNext: r.failNext - 1 }))
      return yield* Effect.die(new Error("injected pass failure"))
    }
    const left = before.pending[id] ?? 0
    if (left === 0) return idle
    yield* Ref.update(rows, (r) => ({
      ...r,
      pending: { ...r.pending, [id]: left - 1 },
      done: { ...r.done, [id]: (r.done[id] ?? 0) + 1 },
    }))
    return left - 1 > 0 ? again("10 millis") : idle
  })

const CounterLive = Counter.toLayer(
  Effect.gen(function* () {
    const drive = yield* keyedDriver(Counter, step)
    const rows = yield* Store
    return {
      Wake: drive.onWake,
      Tick: drive.onTick,
      Add: ({ payload }) =>
        Ref.update(rows, (r) => ({
          ...r,
          pending: { ...r.pending, [drive.id]: (r.pending[drive.id] ?? 0) + payload.n },
        })).pipe(Effect.zipRight(drive.wake)),
    }
  }),
  keyedEntityOptions,
)

/** Keys with pending rows, as a kind's `pendingKeys` reads them. */
const pendingKeys = Effect.flatMap(Store, (rows) =>
  Effect.map(Ref.get(rows), (r) => Object.keys(r.pending).filter((id) => (r.pending[id] ?? 0) > 0)),
)

const makeLayer = (rows: Ref.Ref<Rows>) =>
  Layer.merge(CounterLive, keyedAdoption(Counter, pendingKeys, "100 millis")).pipe(
    Layer.provideMerge(TestRunner.layer),
    Layer.provideMerge(Supervision.Live),
    Layer.provide(Layer.succeed(Store, rows)),
  )

const doneOf = (rows: Ref.Ref<Rows>, id: string) => Effect.map(Ref.get(rows), (r) => r.done[id] ?? 0)

describe("keyed actors (actors/Keyed.ts)", () => {
  it.live("an intent's work is driven to its end by passes; the kind counts its entities", () =>
    Effect.gen(function* () {
      const rows = yield* Ref.make(emptyRows)
      yield* Effect.gen(function* () {
        const client = yield* Counter.client
        yield* client("a").Add({ n: 3 })
        yield* client("b").Add({ n: 1 })
        yield* pollUntil(doneOf(rows, "a"), (n) => n === 3, { every: "10 millis", within: "5 seconds" })
        yield* pollUntil(doneOf(rows, "b"), (n) => n === 1, { every: "10 millis", within: "5 seconds" })
        const record = (yield* Effect.flatMap(Supervision, (b) => b.snapshot)).find((r) => r.kind === "keyed-test")
        expect(record).toMatchObject({ instances: 2, active: true, restarts: 0 })
      }).pipe(Effect.provide(makeLayer(rows)))
    }),
  )

  it.live("a wake from outside starts a pass; rows written without an intent are found by it", () =>
    Effect.gen(function* () {
      const rows = yield* Ref.make(emptyRows)
      yield* Effect.gen(function* () {
        const client = yield* Counter.client
        yield* client("c").Add({ n: 0 }) // the entity runs, finds nothing, waits
        yield* Ref.update(rows, (r) => ({ ...r, pending: { ...r.pending, c: 2 } }))
        yield* wakeKeyed(Counter, "c")
        yield* pollUntil(doneOf(rows, "c"), (n) => n === 2, { every: "10 millis", within: "5 seconds" })
      }).pipe(Effect.provide(makeLayer(rows)))
    }),
  )

  it.live("rows whose wake was lost are adopted: the runner owning their key starts its entity", () =>
    Effect.gen(function* () {
      const rows = yield* Ref.make<Rows>({ ...emptyRows, pending: { e: 2, f: 1 } })
      yield* Effect.gen(function* () {
        yield* pollUntil(doneOf(rows, "e"), (n) => n === 2, { every: "20 millis", within: "5 seconds" })
        yield* pollUntil(doneOf(rows, "f"), (n) => n === 1, { every: "20 millis", within: "5 seconds" })
      }).pipe(Effect.provide(makeLayer(rows)))
    }),
  )

  it.live("a failed pass is retried after the backoff and counted as a restart of the kind", () =>
    Effect.gen(function* () {
      const rows = yield* Ref.make({ ...emptyRows, failNext: 1 })
      yield* Effect.gen(function* () {
        const client = yield* Counter.client
        yield* client("d").Add({ n: 1 })
        yield* pollUntil(doneOf(rows, "d"), (n) => n === 1, { every: "20 millis", within: "10 seconds" })
        const record = (yield* Effect.flatMap(Supervision, (b) => b.snapshot)).find((r) => r.kind === "keyed-test")
        expect(record?.restarts).toBe(1)
        expect(record?.lastFailure?.message).toContain("injected pass failure")
      }).pipe(Effect.provide(makeLayer(rows)))
    }),
  )
})
