import {
  RunnerAddress,
  RunnerHealth,
  Runners,
  ShardingConfig,
  SqlMessageStorage,
  SqlRunnerStorage,
} from "@effect/cluster"
import { NodeClusterSocket } from "@effect/platform-node"
import { RpcSerialization } from "@effect/rpc"
import { Config, Effect, Layer, Option } from "effect"
import { shardingConfig } from "./Cluster/Config.ts"
import { socketRunnerLayer } from "./Cluster/Runner.ts"
import { RunnerStatusLive } from "./Cluster/RunnerStatus.ts"
import { Supervision } from "./Cluster/Supervision.ts"
import { ConfigInvalid } from "./Config.ts"
import { freePort } from "./FreePort.ts"
import { CLUSTER_STORAGE_LOCK, withAdvisoryLock } from "./Sql/AdvisoryLock.ts"
import { describeListenFailure } from "./StartupChecks.ts"

export interface RunnerOptions {
  /** Address other runners use to reach this one. */
  readonly host: string
  readonly port: number
}

/**
 * Message and runner storage as NodeClusterSocket builds them for `storage: "sql"`, built under an
 * advisory lock: @effect/cluster creates its tables (cluster_runners, cluster_messages, …) with
 * `CREATE TABLE IF NOT EXISTS`, which races between two first-ever starts (see withAdvisoryLock).
 * Needs ShardingConfig and SqlClient.
 */
const storageLayer = withAdvisoryLock(
  CLUSTER_STORAGE_LOCK,
  Layer.mergeAll(Layer.orDie(SqlMessageStorage.layer), Layer.orDie(SqlRunnerStorage.layer)),
)

/** The storage alone with a config of its own (start-up tests build it without a runner). */
export const clusterStorage = (overrides: Partial<ShardingConfig.ShardingConfig["Type"]>) =>
  storageLayer.pipe(Layer.provide(ShardingConfig.layer(shardingConfig(overrides))))

/**
 * NodeClusterSocket.layer's socket runner with ping health checks, minus its own ShardingConfig, and with a
 * start-up line that names the runner's address as internal (Cluster/Runner.ts) instead of `Listening on: …`.
 */
const socketRunner = socketRunnerLayer.pipe(
  Layer.provide([NodeClusterSocket.layerSocketServer, NodeClusterSocket.layerClientProtocol]),
  Layer.provide(
    RunnerHealth.layerPing.pipe(Layer.provide(Runners.layerRpc), Layer.provide(NodeClusterSocket.layerClientProtocol)),
  ),
)

/**
 * This process as one runner of the cluster, with message and runner storage in the same
 * PostgreSQL, one ShardingConfig for all of it, the Supervision records of its singletons, and its
 * status row writer (which also removes dead runners' rows and old processed messages).
 */
export const clusterLayer = (runner: RunnerOptions) => {
  const address = RunnerAddress.make(runner.host, runner.port)
  const config = ShardingConfig.layer(
    shardingConfig({ runnerAddress: Option.some(address), runnerListenAddress: Option.some(address) }),
  )
  const sharding = socketRunner.pipe(
    Layer.provideMerge(storageLayer),
    Layer.provideMerge(config),
    Layer.provide(RpcSerialization.layerMsgPack),
  )
  return RunnerStatusLive.pipe(Layer.provideMerge(sharding), Layer.provideMerge(Supervision.Live))
}

/** RUNNER_HOST (default 127.0.0.1) and RUNNER_PORT (default: a free port) name this runner. */
export const ClusterLive = Layer.unwrapEffect(
  Effect.gen(function* () {
    const host = yield* Config.string("RUNNER_HOST").pipe(Config.withDefault("127.0.0.1"))
    const configured = yield* Config.option(Config.port("RUNNER_PORT"))
    const port = Option.isSome(configured) ? configured.value : yield* Effect.orDie(freePort)
    // The runner's socket not opening (port taken, host not local) stops the start with one line (main.ts);
    // left as the library's SocketServerError it was logged with a stack.
    return clusterLayer({ host, port }).pipe(
      Layer.catchAll((e) =>
        Layer.fail(
          e._tag === "SocketServerError"
            ? new ConfigInvalid({
                message: describeListenFailure({ port: "RUNNER_PORT", host: "RUNNER_HOST" }, { host, port }, e.cause),
              })
            : e,
        ),
      ),
    )
  }),
)
