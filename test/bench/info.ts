/**
 * GET /v1/info on the real service stack (through the framework, as every route) vs a bare node:http
 * server answering the same bytes, measured in the same run with the same client. Prints both and the
 * throughput ratio (target >= 0.9). A second service stack on the same database, with the request metrics
 * and the JSON access line off, gives the cost of observing (issue 17: the on/off ratio, the median of alternating
 * pairs, stays >= 0.8). A third baseline is the platform's floor: @effect/platform's router on its node server
 * answering the same bytes, with no middleware, no HttpApi and no span, i.e. the most any route served by the
 * framework can reach. Each path first runs WARMUP_SECONDS unmeasured (Summary.ts).
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
import { median, summarize, WARMUP_SECONDS, whole } from "./Summary.ts"

const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 32)
const SECONDS = Number(process.env.BENCH_SECONDS ?? 5)
/** On/off pairs for the observing cost (BENCH_INFO_ROUNDS), SECONDS / ROUNDS a window. */
const ROUNDS = Math.max(1, Number(process.env.BENCH_INFO_ROUNDS ?? 5))

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

/** Windows of one measurement: throughput over all, latency percentiles weighted by each window's requests. */
const merge = (a: LoadResult, b: LoadResult): LoadResult => {
  const requests = a.requests + b.requests
  const weighted = (x: number, y: number) => (requests === 0 ? 0 : (x * a.requests + y * b.requests) / requests)
  return {
    requests,
    errors: a.errors + b.errors,
    seconds: a.seconds + b.seconds,
    rps: requests / (a.seconds + b.seconds),
    p50ms: weighted(a.p50ms, b.p50ms),
    p99ms: weighted(a.p99ms, b.p99ms),
  }
}

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
  // On and off in ROUNDS adjacent pairs, alternating which goes first (on-off, off-on, …), SECONDS / ROUNDS each: a
  // pair's two windows share the machine's state of the moment (load, GC, JIT), so the on/off ratio is the median of
  // the pairs' ratios. One on/off pair of whole halves swung 0.78–1.39 from run to run (2026-12-04).
  const window = (url: string) => Effect.promise(() => load(url, CONCURRENCY, SECONDS / ROUNDS))
  const pairs: Array<{ on: LoadResult; off: LoadResult }> = []
  for (let i = 0; i < ROUNDS; i++) {
    if (i % 2 === 0) pairs.push({ on: yield* window(ours), off: yield* window(quiet) })
    else {
      const off = yield* window(quiet)
      pairs.push({ on: yield* window(ours), off })
    }
  }
  const service = pairs.map((p) => p.on).reduce(merge)
  const unobserved = pairs.map((p) => p.off).reduce(merge)
  const pairRatios = pairs.map((p) => p.on.rps / p.off.rps)
  const observingRatio = median(pairRatios)
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
    `throughput ratio metrics + JSON access log on/off: median of ${ROUNDS} pairs ${observingRatio.toFixed(2)} ` +
      `(pairs ${pairRatios.map((r) => r.toFixed(2)).join(" / ")}; issue 17: >= 0.8)`,
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
    baseline: `logs + metrics off ${whole(unobserved.rps)} req/s (median of ${ROUNDS} pairs)`,
    ratio: observingRatio,
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
