import { RunnerAddress, ShardingConfig, SqlMessageStorage, SqlRunnerStorage } from "@effect/cluster"
import { NodeClusterSocket } from "@effect/platform-node"
import { SqlClient } from "@effect/sql"
import { Config, Effect, Layer, Option } from "effect"
import { freePort } from "./FreePort.ts"

export interface RunnerOptions {
  /** Address other runners use to reach this one. */
  readonly host: string
  readonly port: number
}

/**
 * The advisory lock (two-int form: its own key space, apart from the cluster's one-int shard
 * locks and the journal publisher's) held while the cluster's storage creates its tables.
 */
const STORAGE_LOCK_CLASS = 0x5e771e
const STORAGE_LOCK_ID = 1

/**
 * Builds `layer` while this process holds the storage lock on a dedicated connection.
 *
 * Why: @effect/cluster creates its tables (cluster_runners, cluster_messages, its migrations table,
 * ...) with `CREATE TABLE IF NOT EXISTS`, which PostgreSQL does not make atomic: two processes
 * starting at once on an empty database can both pass the existence check, and one fails with
 * `relation "cluster_runners" already exists` (or a duplicate pg_type key). Under the lock the
 * first process creates everything; the others wait, then find the tables there.
 *
 * The lock is session-level on a reserved connection and released as soon as the layer is built
 * (success or failure); if the process dies, its connection closes and PostgreSQL releases it.
 * The layer itself is built into the caller's scope, so it lives as long as the runner.
 */
const withStorageLock = <A, E, R>(layer: Layer.Layer<A, E, R>) =>
  Layer.scopedContext(
    Effect.gen(function* () {
      const outer = yield* Effect.scope
      const sql = yield* SqlClient.SqlClient
      return yield* Effect.scoped(
        Effect.gen(function* () {
          const conn = yield* sql.reserve
          yield* Effect.acquireRelease(
            conn.executeRaw(`select pg_advisory_lock(${STORAGE_LOCK_CLASS}, ${STORAGE_LOCK_ID})`, []),
            () =>
              conn
                .executeRaw(`select pg_advisory_unlock(${STORAGE_LOCK_CLASS}, ${STORAGE_LOCK_ID})`, [])
                .pipe(Effect.ignore),
          )
          return yield* Layer.buildWithScope(layer, outer)
        }),
      )
    }),
  )

/**
 * This process as one runner of the cluster, with message and runner storage in the same
 * PostgreSQL. Every option is passed explicitly: the cluster's own env reader would otherwise take
 * PORT and HOST, which mean something else here.
 */
export const clusterLayer = (runner: RunnerOptions) => {
  const shardingConfig = {
    runnerAddress: Option.some(RunnerAddress.make(runner.host, runner.port)),
    runnerListenAddress: Option.some(RunnerAddress.make(runner.host, runner.port)),
  }
  return NodeClusterSocket.layer({ storage: "byo", shardingConfig }).pipe(
    Layer.provideMerge(clusterStorage(shardingConfig)),
  )
}

/**
 * The same message and runner storage NodeClusterSocket builds for `storage: "sql"`, built under
 * the storage lock (see withStorageLock).
 */
export const clusterStorage = (shardingConfig: Partial<ShardingConfig.ShardingConfig["Type"]>) =>
  withStorageLock(
    Layer.mergeAll(Layer.orDie(SqlMessageStorage.layer), Layer.orDie(SqlRunnerStorage.layer)).pipe(
      Layer.provide(ShardingConfig.layerFromEnv(shardingConfig)),
    ),
  )

/** RUNNER_HOST (default 127.0.0.1) and RUNNER_PORT (default: a free port) name this runner. */
export const ClusterLive = Layer.unwrapEffect(
  Effect.gen(function* () {
    const host = yield* Config.string("RUNNER_HOST").pipe(Config.withDefault("127.0.0.1"))
    const configured = yield* Config.option(Config.port("RUNNER_PORT"))
    const port = Option.isSome(configured) ? configured.value : yield* Effect.orDie(freePort)
    return clusterLayer({ host, port })
  }),
)
