import { RunnerAddress, ShardingConfig, SqlMessageStorage, SqlRunnerStorage } from "@effect/cluster"
import { NodeClusterSocket } from "@effect/platform-node"
import { Config, Effect, Layer, Option } from "effect"
import { freePort } from "./FreePort.ts"
import { CLUSTER_STORAGE_LOCK, withAdvisoryLock } from "./Store/AdvisoryLock.ts"

export interface RunnerOptions {
  /** Address other runners use to reach this one. */
  readonly host: string
  readonly port: number
}

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
 * an advisory lock: @effect/cluster creates its tables (cluster_runners, cluster_messages, …) with
 * `CREATE TABLE IF NOT EXISTS`, which races between two first-ever starts (see withAdvisoryLock).
 */
export const clusterStorage = (shardingConfig: Partial<ShardingConfig.ShardingConfig["Type"]>) =>
  withAdvisoryLock(
    CLUSTER_STORAGE_LOCK,
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
