import { type Entity, Sharding, TestRunner } from "@effect/cluster"
import type { Rpc } from "@effect/rpc"
import { Effect, Layer } from "effect"
import { wakeKeyed } from "../../actors/Keyed.ts"
import { Supervision } from "../../src/Supervision.ts"

/**
 * Runs a keyed kind (actors/Keyed.ts) until interrupted, as the service runs it: its layer (entity, wakes,
 * adoption) registered on a cluster runner, after adopting the keys with work pending once (rows written before it
 * started), as a runner's adoption does.
 * - default: on the context's runner (TestHttpLive's in-memory one, which the HTTP handlers' wakes after their
 *   commits reach). A kind registers once per runner: run it once per test file on that runner.
 * - `ownRunner`: on a fresh in-memory runner of its own, as a service process that starts, stops and starts again
 *   (the handlers' wakes do not reach it: its adoption and wakes from notifications do).
 */
export const runKeyed = <T extends string, Rpcs extends Rpc.Any, E, R, E2, R2>(
  live: Layer.Layer<never, E, R>,
  entity: Entity.Entity<T, Rpcs>,
  pendingKeys: Effect.Effect<ReadonlyArray<string>, E2, R2>,
  options: { readonly ownRunner?: boolean } = {},
) => {
  const run = Effect.scoped(
    Effect.gen(function* () {
      yield* Layer.build(live)
      const ids = yield* pendingKeys
      yield* Effect.forEach(ids, (id) => wakeKeyed(entity, id), { discard: true })
      return yield* Effect.never
    }),
  )
  return options.ownRunner === true
    ? Effect.scoped(
        Effect.flatMap(Layer.build(Layer.merge(TestRunner.layer, Supervision.Live)), (context) =>
          run.pipe(Effect.provide(context)),
        ),
      )
    : Effect.flatMap(Sharding.Sharding, () => run)
}
