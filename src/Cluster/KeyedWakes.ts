/**
 * How the settlement-side keyed actors (settlement per take, order funding per order, transfer desk per
 * transfer) are woken from outside, on top of actors/Keyed.ts's `wakeKeyed`:
 * - `wakeIfClustered`: an HTTP handler, after its transaction committed, wakes the entity that drives what it
 *   wrote. Without a cluster in the context (tests that build the HTTP stack alone) it does nothing: the
 *   entity's own cadence, the backstop tick and the start-up adoption (`pendingKeys`) cover the rows.
 * - `wakeOnNotify`: a per-runner listener of a `pg_notify` channel (relayer outcomes, committed escrow index
 *   pages). Every runner hears every notification, so each wakes only the entities whose shard it holds: one
 *   wake per event across the cluster, and no volatile send to a shard nobody owns.
 */
import { type Entity, EntityId, Sharding } from "@effect/cluster"
import type { Rpc } from "@effect/rpc"
import type { SqlError } from "@effect/sql"
import { PgClient } from "@effect/sql-pg"
import { Effect, Layer, Option, Schedule, Stream } from "effect"
import { wakeKeyed } from "./Keyed.ts"

/**
 * Wakes `id` of a keyed kind when this process runs a cluster; never fails (a lost wake costs the cadence). The
 * send runs detached: the request does not wait for it (a shard in hand-over holds a send for up to wakeKeyed's
 * bound, and a runner without that kind registered holds it until then).
 */
export const wakeIfClustered = <T extends string, Rpcs extends Rpc.Any>(entity: Entity.Entity<T, Rpcs>, id: string) =>
  Effect.flatMap(Effect.serviceOption(Sharding.Sharding), (sharding) =>
    Option.isNone(sharding)
      ? Effect.void
      : wakeKeyed(entity, id).pipe(
          Effect.provideService(Sharding.Sharding, sharding.value),
          Effect.forkDaemon,
          Effect.asVoid,
        ),
  )

/** Wakes those of `ids` whose shard this runner holds (the others' owners hear the same notification). */
export const wakeOwned = <T extends string, Rpcs extends Rpc.Any>(
  entity: Entity.Entity<T, Rpcs>,
  ids: Iterable<string>,
) =>
  Effect.flatMap(Sharding.Sharding, (sharding) =>
    Effect.forEach(
      new Set(ids),
      (id) => {
        const entityId = EntityId.make(id)
        const owned = sharding.hasShardId(sharding.getShardId(entityId, entity.getShardGroup(entityId)))
        return owned ? wakeKeyed(entity, id) : Effect.void
      },
      { concurrency: 8, discard: true },
    ),
  )

/**
 * A per-runner fiber: on each notification of `channel`, `route(payload)` wakes what the event touched (with
 * `wakeOwned`). A failed route is logged and the next notification tried; a lost connection re-listens.
 */
export const wakeOnNotify = <E, R>(
  name: string,
  channel: string,
  route: (payload: string) => Effect.Effect<void, E | SqlError.SqlError, R>,
) =>
  Layer.scopedDiscard(
    Effect.gen(function* () {
      const pg = yield* PgClient.PgClient
      yield* pg.listen(channel).pipe(
        Stream.runForEach((payload) =>
          route(payload).pipe(
            Effect.catchAllCause((cause) => Effect.logWarning(`${name}: waking on ${channel} failed`, cause)),
          ),
        ),
        Effect.retry(Schedule.spaced("1 second")),
        Effect.forkScoped,
      )
    }),
  )
