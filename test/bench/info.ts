/**
 * GET /v1/info on the real service stack (through the framework, as every route) vs a bare node:http
 * server answering the same bytes, measured in the same run with the same client. Prints both and the
 * throughput ratio (target >= 0.6).
 */
import { openSync, writeSync } from "node:fs"
import { createServer, request } from "node:http"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { HttpServer } from "@effect/platform"
import { Effect, Layer, LogLevel } from "effect"
import { loggingLayer } from "../../src/Observability/Log.ts"
import { TestDatabaseLive } from "../support/Database.ts"
import { testAppConfig } from "../support/TestConfig.ts"
import { TestHttpLive } from "../support/TestServer.ts"
import { format, load } from "./load.ts"

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
  yield* Effect.promise(() => load(ours, CONCURRENCY, 1)) // warm-up
  yield* Effect.promise(() => load(baseline, CONCURRENCY, 1))
  const base = yield* Effect.promise(() => load(baseline, CONCURRENCY, SECONDS))
  const service = yield* Effect.promise(() => load(ours, CONCURRENCY, SECONDS))
  bare.close()
  console.log(`GET /v1/info, concurrency ${CONCURRENCY}, ${SECONDS} s each, loopback`)
  console.log(format("bare node:http (baseline)", base))
  console.log(format("settlement service", service))
  console.log(`throughput ratio service/baseline: ${(service.rps / base.rps).toFixed(2)} (target >= 0.6)`)
  console.log(`p50 latency ratio service/baseline: ${(service.p50ms / base.p50ms).toFixed(2)}`)
  console.log(`access log: ${logFile}`)
})

// As in production: the JSON log at info (an access line per request) and the metrics (always on). The lines go
// to a file (BENCH_LOG_FILE, default in the temp dir), written synchronously as stdout is.
const logFile = process.env.BENCH_LOG_FILE ?? join(tmpdir(), `bench-info-${process.pid}.log`)
const logFd = openSync(logFile, "w")
const logging = loggingLayer({ format: "json", level: LogLevel.Info, sink: (line) => writeSync(logFd, `${line}\n`) })

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
  ),
).then(
  () => process.exit(0),
  (e) => {
    console.error(e)
    process.exit(1)
  },
)
