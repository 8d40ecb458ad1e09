/**
 * GET /v1/info on the real service stack (through the framework, as every route) vs a bare node:http
 * server answering the same bytes, measured in the same run with the same client. Prints both and the
 * throughput ratio (target >= 0.9). A second service stack on the same database, with the request metrics
 * and the JSON access line off, gives the cost of observing (issue 17: the ratio on/off stays >= 0.8). A third
 * baseline is the platform's floor: @effect/platform's router on its node server answering the same bytes, with
 * no middleware, no HttpApi and no span, i.e. the most any route served by the framework can reach. Each path first
 * runs WARMUP_SECONDS unmeasured (Summary.ts).
 */
import { createServer, request } from "node:http"
import { loadavg } from "node:os"
import { HttpMiddleware, HttpRouter, HttpServer, HttpServerResponse } from "@effect/platform"
import { NodeHttpServer } from "@effect/platform-node"
import { Context, Effect, Layer } from "effect"
import { ChainStatusBoard } from "../../src/Health/ChainStatusBoard.ts"
import { Api } from "../../src/Http/Api.ts"
import { routesOf } from "../../src/Http/RouteTable.ts"
import { ApiLive, httpLayer } from "../../src/Http/Server.ts"
import { TracingLive } from "../../src/Observability/Tracing.ts"
import { Relayer } from "../../src/Relayer.ts"
import { TestDatabaseLive } from "../support/Database.ts"
import { testAppConfig } from "../support/TestConfig.ts"
import { TestHttpLive } from "../support/TestServer.ts"
import { benchLogging } from "./Logging.ts"
import { format, type LoadResult, load } from "./load.ts"
import { summarize, WARMUP_SECONDS, whole } from "./Summary.ts"

const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 32)
const SECONDS = Number(process.env.BENCH_SECONDS ?? 5)

const fetchOnce = (url: string) =>
  new Promise<{ body: Buffer; headers: Record<string, string> }>((resolve, reject) => {
    request(url, (res) => {
      const chunks: Array<Buffer> = []
      res.on("data", (c: Buffer) => chunks.push(c))
      res.on("end", () => resolve({ body: Buffer.concat(chunks), headers: res.headers as Record<string, string> }))
    })
      .on("error", reject)
      .end()
  })

/** Two halves of one measurement: throughput over both, latency percentiles averaged. */
const merge = (a: LoadResult, b: LoadResult): LoadResult => ({
  requests: a.requests + b.requests,
  errors: a.errors + b.errors,
  seconds: a.seconds + b.seconds,
  rps: (a.requests + b.requests) / (a.seconds + b.seconds),
  p50ms: (a.p50ms + b.p50ms) / 2,
  p99ms: (a.p99ms + b.p99ms) / 2,
})

const program = Effect.gen(function* () {
  const server = yield* HttpServer.HttpServer
  const port = server.address._tag === "TcpAddress" ? server.address.port : 0
  const ours = `http://127.0.0.1:${port}/v1/info`
  const sample = yield* Effect.promise(() => fetchOnce(ours))
  const bare = createServer((_req, res) => {
    res.writeHead(200, {
      "content-type": "application/json",
      "content-length": sample.body.length,
      "x-request-id": sample.headers["x-request-id"] ?? "",
      "x-server-time": sample.headers["x-server-time"] ?? "",
    })
    res.end(sample.body)
  })
  yield* Effect.promise(() => new Promise<void>((r) => bare.listen(0, "127.0.0.1", r)))
  const barePort = (bare.address() as { port: number }).port
  const baseline = `http://127.0.0.1:${barePort}/v1/info`
  // The same stack without metrics and access line (same database, config and process).
  const quietServer = Context.get(
    yield* Layer.build(
      httpLayer({ port: 0, host: "127.0.0.1", api: { layer: ApiLive, routes: routesOf(Api) }, observe: false }).pipe(
        Layer.provide(Layer.mergeAll(ChainStatusBoard.Live, Relayer.Live)),
      ),
    ),
    HttpServer.HttpServer,
  )
  const quiet = `http://127.0.0.1:${quietServer.address._tag === "TcpAddress" ? quietServer.address.port : 0}/v1/info`
  // The platform's floor: its router and node server alone, answering the same bytes.
  const floorServer = Context.get(
    yield* Layer.build(
      HttpServer.serve(
        HttpRouter.empty.pipe(
          HttpRouter.get(
            "/v1/info",
            Effect.succeed(HttpServerResponse.uint8Array(sample.body, { contentType: "application/json" })),
          ),
        ),
      ).pipe(
        HttpMiddleware.withTracerDisabledWhen(() => true),
        Layer.provideMerge(NodeHttpServer.layer(createServer, { port: 0, host: "127.0.0.1" })),
      ),
    ),
    HttpServer.HttpServer,
  )
  const floor = `http://127.0.0.1:${floorServer.address._tag === "TcpAddress" ? floorServer.address.port : 0}/v1/info`
  // Warm-up (WARMUP_SECONDS each): the JIT settles on every path before anything is measured.
  yield* Effect.promise(() => load(ours, CONCURRENCY, WARMUP_SECONDS))
  yield* Effect.promise(() => load(quiet, CONCURRENCY, WARMUP_SECONDS))
  yield* Effect.promise(() => load(baseline, CONCURRENCY, WARMUP_SECONDS))
  yield* Effect.promise(() => load(floor, CONCURRENCY, WARMUP_SECONDS))
  const base = yield* Effect.promise(() => load(baseline, CONCURRENCY, SECONDS))
  const platform = yield* Effect.promise(() => load(floor, CONCURRENCY, SECONDS))
  // On, off, off, on (half the time each): neither side gains from running later (a warmer JIT).
  const half = (url: string) => Effect.promise(() => load(url, CONCURRENCY, SECONDS / 2))
  const [on1, off1, off2, on2] = [yield* half(ours), yield* half(quiet), yield* half(quiet), yield* half(ours)]
  const service = merge(on1, on2)
  const unobserved = merge(off1, off2)
  bare.close()
  console.log(
    `GET /v1/info, concurrency ${CONCURRENCY}, ${SECONDS} s each, loopback, load average ${loadavg()[0]!.toFixed(2)}`,
  )
  console.log(format("bare node:http (baseline)", base))
  console.log(format("settlement service", service))
  console.log(format("service, metrics + log off", unobserved))
  console.log(format("platform floor (router only)", platform))
  console.log(
    `platform floor/baseline: ${(platform.rps / base.rps).toFixed(2)} (the most a framework route reaches here); ` +
      `service/platform floor: ${(service.rps / platform.rps).toFixed(2)}`,
  )
  console.log(`throughput ratio service/baseline: ${(service.rps / base.rps).toFixed(2)} (target >= 0.9)`)
  console.log(`p50 latency ratio service/baseline: ${(service.p50ms / base.p50ms).toFixed(2)}`)
  console.log(
    `throughput ratio metrics + JSON access log on/off: ${(service.rps / unobserved.rps).toFixed(2)} (issue 17: >= 0.8)`,
  )
  if (process.env.BENCH_LOG_FILE !== undefined) console.log(`access log: ${logFile}`)
  const vsBare = (bench: string, rps: number, target: string, atLeast?: number) =>
    summarize({
      bench,
      figure: `${whole(rps)} req/s`,
      baseline: `bare node:http ${whole(base.rps)} req/s`,
      ratio: rps / base.rps,
      target,
      ...(atLeast === undefined ? {} : { atLeast }),
    })
  vsBare("info: GET /v1/info req/s (logs, metrics on)", service.rps, ">= 0.9", 0.9)
  vsBare("info: the platform's floor (its router alone)", platform.rps, "none (context for the 0.9)")
  summarize({
    bench: "info: observing on/off",
    figure: `${whole(service.rps)} req/s`,
    baseline: `logs + metrics off ${whole(unobserved.rps)} req/s`,
    ratio: service.rps / unobserved.rps,
    target: ">= 0.8",
    atLeast: 0.8,
  })
})

// As in production: the JSON log at info (an access line per request) and the metrics (always on), the log to a file.
const { layer: logging, file: logFile } = benchLogging("info")

Effect.runPromise(
  program.pipe(
    Effect.provide(
      TestHttpLive.pipe(
        Layer.provideMerge(TestDatabaseLive),
        Layer.provideMerge(testAppConfig()),
        Layer.provideMerge(logging),
      ),
    ),
    Effect.scoped,
    // As main.ts: without an OTLP endpoint in the environment, Effect's tracer is off (outermost: inherited).
    Effect.provide(TracingLive),
  ),
).then(
  () => process.exit(0),
  (e) => {
    console.error(e)
    process.exit(1)
  },
)
