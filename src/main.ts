import { NodeContext, NodeRuntime } from "@effect/platform-node"
import { Console, Effect, Layer } from "effect"
import { ActorsLive } from "../actors/Actors.ts"
import { ChainLive } from "./Chain/ChainLive.ts"
import { ClusterLive } from "./Cluster.ts"
import { AppConfig } from "./Config.ts"
import { HttpLive } from "./Http/Server.ts"
import { DatabaseLive } from "./Store/Database.ts"

/** The composition root: the only module that imports actors/. */
export const MainLive = Layer.mergeAll(HttpLive, ActorsLive).pipe(
  Layer.provide(ClusterLive),
  Layer.provide(ChainLive),
  Layer.provideMerge(DatabaseLive),
  Layer.provideMerge(AppConfig.fromEnv),
  Layer.provide(NodeContext.layer),
)

Layer.launch(MainLive).pipe(
  Effect.catchTag("ConfigInvalid", (e) =>
    Console.error(e.message).pipe(Effect.zipRight(Effect.sync(() => process.exit(1)))),
  ),
  NodeRuntime.runMain,
)
