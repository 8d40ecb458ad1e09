import { SqlClient } from "@effect/sql"
import { Effect, Layer } from "effect"

/**
 * Session-level advisory lock keys (two-int form: their own key space, apart from the cluster's
 * one-int shard locks and the journal publisher's).
 */
export const LOCK_CLASS = 0x5e771e
/** @effect/cluster's storage tables (src/Cluster.ts). */
export const CLUSTER_STORAGE_LOCK = 1
/** This service's migrations (src/Sql/Database.ts). */
export const MIGRATIONS_LOCK = 2
/** Stream admission (src/Stream/Slots.ts), taken per transaction. */
export const STREAM_SLOTS_LOCK = 3

/**
 * Builds `layer` while this process holds advisory lock (LOCK_CLASS, `id`) on a dedicated connection.
 *
 * Why: `CREATE TABLE IF NOT EXISTS` is not atomic in PostgreSQL: two processes starting at once on an
 * empty database can both pass the existence check, and one fails with `relation … already exists`
 * (or a duplicate pg_type key). Under the lock the first process creates everything; the others
 * wait, then find the tables there.
 *
 * The lock is released as soon as the layer is built (success or failure); if the process dies, its
 * connection closes and PostgreSQL releases it. The layer is built into the caller's scope, so its
 * resources live as long as the caller's.
 */
export const withAdvisoryLock = <A, E, R>(id: number, layer: Layer.Layer<A, E, R>) =>
  Layer.scopedContext(
    Effect.gen(function* () {
      const outer = yield* Effect.scope
      const sql = yield* SqlClient.SqlClient
      return yield* Effect.scoped(
        Effect.gen(function* () {
          const conn = yield* sql.reserve
          yield* Effect.acquireRelease(conn.executeRaw(`select pg_advisory_lock(${LOCK_CLASS}, ${id})`, []), () =>
            conn.executeRaw(`select pg_advisory_unlock(${LOCK_CLASS}, ${id})`, []).pipe(Effect.ignore),
          )
          return yield* Layer.buildWithScope(layer, outer)
        }),
      )
    }),
  )
