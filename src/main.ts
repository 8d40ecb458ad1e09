import { NodeContext, NodeRuntime } from "@effect/platform-node"
import { Cause, ConfigError, Console, Effect, Layer } from "effect"
import { ActorsLive } from "../actors/Actors.ts"
import { ChainLive } from "./ChainLive.ts"
import { ClusterLive } from "./Cluster.ts"
import { AppConfig } from "./Config.ts"
import { HttpLive } from "./Http/Server.ts"
import { LoggingLive, renderCause } from "./Observability/Log.ts"
import { OperatorLive } from "./Observability/OperatorListener.ts"
import { TracingLive } from "./Observability/Tracing.ts"
import { DatabaseLive } from "./Sql/Database.ts"
import { JournalFeed } from "./Sql/Journal.ts"

/** The composition root: the only module that imports actors/. */
export const MainLive = Layer.mergeAll(HttpLive, ActorsLive, OperatorLive).pipe(
  // One per process, shared by the journal publisher (actors) and the stream's tail (HTTP).
  Layer.provide(JournalFeed.Live),
  Layer.provide(ClusterLive),
  Layer.provide(ChainLive),
  Layer.provideMerge(DatabaseLive),
  Layer.provideMerge(AppConfig.fromEnv),
  Layer.provide(NodeContext.layer),
)

/** A start-up failure the operator fixes: one line naming the setting and the fix, no stack, exit 1. */
const refuseToStart = (line: string) => Console.error(line).pipe(Effect.zipRight(Effect.sync(() => process.exit(1))))

Layer.launch(MainLive).pipe(
  // LOG_FORMAT / LOG_LEVEL: one JSON object per line unless on a terminal (src/Observability/Log.ts).
  // OTEL_EXPORTER_OTLP_ENDPOINT: spans exported over OTLP (src/Observability/Tracing.ts); unset, none.
  Effect.provide(Layer.merge(LoggingLive, TracingLive)),
  Effect.catchTag("ConfigInvalid", (e) => refuseToStart(e.message)),
  // An environment variable Effect's Config could not read (PORT=abc): its own text names the variable.
  Effect.catchIf(ConfigError.isConfigError, (e) =>
    refuseToStart(
      `invalid environment: ${String(e)
        .replace(/^\((.*)\)$/s, "$1")
        .replace(/\s+/g, " ")}`,
    ),
  ),
  // Anything else that stops the service (a defect, a failure no layer named): one masked line, no stack, exit 1.
  // runMain's own report would print Cause.pretty with its frames through Effect's default logger.
  Effect.catchAllCause((cause) =>
    Cause.isInterruptedOnly(cause)
      ? Effect.failCause(cause)
      : refuseToStart(`the service stopped: ${renderCause(cause).replace(/\s+/g, " ")}`),
  ),
  // Without disablePrettyLogger runMain adds its pretty logger beside ours: every Effect log line printed twice,
  // once as text, so the log was not one JSON object per line (test/integration/demo.test.ts checks it).
  NodeRuntime.runMain({ disablePrettyLogger: true, disableErrorReporting: true }),
)
