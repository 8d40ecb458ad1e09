import { type Entity, Sharding } from "@effect/cluster"
import type { Rpc } from "@effect/rpc"
import { Effect, Layer } from "effect"
import { wakeKeyed } from "../../src/Cluster/Keyed.ts"

/**
 * Runs a keyed kind (actors/Keyed.ts) until interrupted, as the service runs it: its layer (entity, wakes,
 * adoption) registered on the context's cluster runner (TestHttpLive's in-memory one, which the HTTP handlers' wakes
 * after their commits reach), after adopting the keys with work pending once (rows written before it started), as a
 * runner's adoption does. A kind registers once per runner (a second registration is ignored, and an interrupted one
 * answers no more messages): run it once per test file.
 */
export const runKeyed = <T extends string, Rpcs extends Rpc.Any, E, R, E2, R2>(
  live: Layer.Layer<never, E, R>,
  entity: Entity.Entity<T, Rpcs>,
  pendingKeys: Effect.Effect<ReadonlyArray<string>, E2, R2>,
) =>
  Effect.flatMap(Sharding.Sharding, () =>
    Effect.scoped(
      Effect.gen(function* () {
        yield* Layer.build(live)
        const ids = yield* pendingKeys
        yield* Effect.forEach(ids, (id) => wakeKeyed(entity, id), { discard: true })
        return yield* Effect.never
      }),
    ),
  )
