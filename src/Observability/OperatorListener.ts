import { createServer, type Server, type ServerResponse } from "node:http"
import * as OtelMetrics from "@effect/opentelemetry/Metrics"
import * as OtelResource from "@effect/opentelemetry/Resource"
import type { SqlClient } from "@effect/sql"
import { PrometheusExporter } from "@opentelemetry/exporter-prometheus"
import { Config, Console, Context, Effect, Either, Layer, Option, Runtime } from "effect"
import { type AppConfig, ConfigInvalid } from "../Config.ts"
import { Health } from "../Health.ts"
import { describeListenFailure } from "../StartupChecks.ts"
import { collectGauges } from "./Collect.ts"
import { STATUS_HTML } from "./StatusPage.ts"
import { recentSettlements, relayerQueues } from "./StatusPageRepo.ts"

/**
 * The operator listener (DESIGN §8): operators' pages live on their own port, never on the public API.
 * `GET /metrics` answers Prometheus text (version 0.0.4): Effect's metrics (src/Observability/Metrics.ts),
 * read through @effect/opentelemetry's metric producer by OpenTelemetry's Prometheus exporter, whose own
 * HTTP server is not started (`preventServerStart`): its request handler answers on this listener, after
 * the gauges of persisted state were read (src/Observability/Collect.ts). `GET /status` is the operators'
 * status page (src/Observability/StatusPage.ts), which reads `GET /health` (the public route's body and
 * status: the Health service's answer, src/Health.ts) and `GET /status/data` (relayer queues, recent settlements).
 *
 * OPERATOR_HOST defaults to loopback; OPERATOR_PORT to a free port (as RUNNER_PORT does), announced in the
 * start-up output. Set OPERATOR_PORT for a Prometheus scrape target (e.g. 9464).
 */

/** Recent takes on the status page. */
const SETTLEMENTS_SHOWN = 20

export interface OperatorOptions {
  readonly host: string
  /** 0: a free port. */
  readonly port: number
}

const listen = (server: Server, options: OperatorOptions) =>
  Effect.async<number, ConfigInvalid>((resume) => {
    const onError = (e: NodeJS.ErrnoException) =>
      resume(
        Effect.fail(
          new ConfigInvalid({
            message: describeListenFailure({ port: "OPERATOR_PORT", host: "OPERATOR_HOST" }, options, e, "0 picks one"),
          }),
        ),
      )
    server.once("error", onError)
    server.listen(options.port, options.host, () => {
      server.off("error", onError)
      const address = server.address()
      resume(Effect.succeed(typeof address === "object" && address !== null ? address.port : options.port))
    })
  })

/** Where the operator listener listens (its port when OPERATOR_PORT picked a free one). */
export class OperatorListener extends Context.Tag("OperatorListener")<
  OperatorListener,
  { readonly host: string; readonly port: number; readonly url: string }
>() {}

/** The listener on `options`; announces its address. */
export const operatorLayer = (
  options: OperatorOptions,
): Layer.Layer<OperatorListener, ConfigInvalid, AppConfig | SqlClient.SqlClient> =>
  Layer.scoped(
    OperatorListener,
    Effect.gen(function* () {
      const exporter = new PrometheusExporter({ preventServerStart: true, withoutScopeInfo: true })
      yield* OtelMetrics.registerProducer(
        yield* OtelMetrics.makeProducer.pipe(Effect.provide(OtelResource.layer({ serviceName: "settlement-service" }))),
        () => exporter,
      )
      const health = yield* Health
      const runtime = yield* Effect.runtime<AppConfig | SqlClient.SqlClient>()
      const run = Runtime.runPromise(runtime)
      const json = (res: ServerResponse, status: number, body: unknown) =>
        res
          .writeHead(status, { "content-type": "application/json", "cache-control": "no-store" })
          .end(JSON.stringify(body))
      const failed = (res: ServerResponse) => () => {
        if (!res.headersSent) json(res, 500, { error: "the status could not be read; see the service log" })
      }
      const server = createServer((req, res) => {
        const path = (req.url ?? "").split("?")[0]
        if (req.method !== "GET" && req.method !== "HEAD") {
          res.writeHead(405, { allow: "GET, HEAD", "content-type": "text/plain; charset=utf-8" }).end("GET only\n")
          return
        }
        switch (path) {
          case "/metrics":
            run(collectGauges).then(
              () => exporter.getMetricsRequestHandler(req, res),
              () => exporter.getMetricsRequestHandler(req, res),
            )
            return
          case "/status":
            res
              .writeHead(200, {
                "content-type": "text/html; charset=utf-8",
                "cache-control": "no-store",
                // Inline style and script only: nothing is loaded from anywhere else.
                "content-security-policy":
                  "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; connect-src 'self'",
              })
              .end(STATUS_HTML)
            return
          case "/health":
            run(Effect.either(health.check)).then(
              (answer) => json(res, Either.isRight(answer) ? 200 : 503, Either.merge(answer)),
              failed(res),
            )
            return
          case "/status/data":
            run(
              Effect.all(
                { relayer: relayerQueues, settlements: recentSettlements(SETTLEMENTS_SHOWN) },
                { concurrency: 2 },
              ),
            ).then((body) => json(res, 200, body), failed(res))
            return
        }
        res
          .writeHead(404, { "content-type": "text/plain; charset=utf-8" })
          .end("not found: GET /metrics, /status, /health, /status/data\n")
      })
      server.keepAliveTimeout = 65_000
      const port = yield* Effect.acquireRelease(listen(server, options), () =>
        Effect.async<void>((resume) => {
          server.close(() => resume(Effect.void))
          server.closeAllConnections()
        }),
      )
      const url = `http://${options.host.includes(":") ? `[${options.host}]` : options.host}:${port}`
      yield* Console.log(`operator listener at ${url} (GET /metrics, Prometheus text; GET /status, the status page)`)
      return { host: options.host, port, url }
    }),
  ).pipe(Layer.provide(Health.Default))

/** OPERATOR_HOST (default 127.0.0.1) and OPERATOR_PORT (default: a free port). */
export const OperatorLive = Layer.unwrapEffect(
  Effect.gen(function* () {
    const host = yield* Config.string("OPERATOR_HOST").pipe(Config.withDefault("127.0.0.1"))
    const port = yield* Config.option(
      Config.integer("OPERATOR_PORT").pipe(
        Config.validate({ message: "a port number 0-65535 (0: a free one)", validation: (n) => n >= 0 && n <= 65535 }),
      ),
    )
    return operatorLayer({ host, port: Option.getOrElse(port, () => 0) })
  }),
)
