import { RunnerServer, type SocketRunner } from "@effect/cluster"
import { SocketServer } from "@effect/platform"
import { RpcServer } from "@effect/rpc"
import { Effect, Layer } from "effect"

/**
 * The runner's start-up line. @effect/cluster's SocketRunner.layer logs `Listening on: 127.0.0.1:NNNNN`, which
 * reads like the API's address (the API's own line is `settlement service listening on http://…`); this says
 * what the address is, and avoids the words "listening on", which scripts and tests wait for in the API's line.
 */
export const runnerLine = (address: string) =>
  `cluster runner bound to ${address} (internal: entity messages between this service's processes; not the API)`

const announce = Layer.effectDiscard(
  Effect.gen(function* () {
    const server = yield* SocketServer.SocketServer
    const address =
      server.address._tag === "UnixAddress" ? server.address.path : `${server.address.hostname}:${server.address.port}`
    yield* Effect.annotateLogs(Effect.logInfo(runnerLine(address)), { package: "@effect/cluster", service: "Runner" })
  }),
)

/** SocketRunner.layer, built as the library builds it (RunnerServer with its clients over the socket server), with the line above instead of its own. */
export const socketRunnerLayer: typeof SocketRunner.layer = announce.pipe(
  Layer.provideMerge(RunnerServer.layerWithClients),
  Layer.provide(RpcServer.layerProtocolSocketServer),
)
