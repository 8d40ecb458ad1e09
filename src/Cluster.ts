import { RunnerAddress } from "@effect/cluster"
import { NodeClusterSocket } from "@effect/platform-node"
import { Config, Effect, Layer, Option } from "effect"
import { freePort } from "./FreePort.ts"

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
export const clusterLayer = (runner: RunnerOptions) =>
  NodeClusterSocket.layer({
    storage: "sql",
    shardingConfig: {
      runnerAddress: Option.some(RunnerAddress.make(runner.host, runner.port)),
      runnerListenAddress: Option.some(RunnerAddress.make(runner.host, runner.port)),
    },
  })

/** RUNNER_HOST (default 127.0.0.1) and RUNNER_PORT (default: a free port) name this runner. */
export const ClusterLive = Layer.unwrapEffect(
  Effect.gen(function* () {
    const host = yield* Config.string("RUNNER_HOST").pipe(Config.withDefault("127.0.0.1"))
    const configured = yield* Config.option(Config.port("RUNNER_PORT"))
    const port = Option.isSome(configured) ? configured.value : yield* Effect.orDie(freePort)
    return clusterLayer({ host, port })
  }),
)
