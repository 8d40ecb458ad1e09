/**
 * GET /v1/stream under load: 256 subscribers of public trades while trade events are journaled at a
 * steady rate (each in its own transaction; the JournalPublisher assigns cursors; delivery through
 * LISTEN, the shared journal tail and each subscriber's filter), against a bare `ws` broadcast of
 * the same payloads to the same number of clients, in the same run, on loopback. Clients run in
 * worker threads.
 *
 * Latencies, per delivered event:
 * - publish → delivery: baseline from the broadcast call; stream from the moment the publisher
 *   assigned the event its cursor (`published_at`), on the wall clock both sides share;
 * - append → delivery (stream only): from just before the writer's transaction began, i.e. including
 *   the commit and the publisher's own delay.
 * Prints delivered events/s, p50/p99, the ratios and the p99 target (publish → delivery <= 50 ms).
 *
 * BENCH_SUBSCRIBERS (256), BENCH_RATE (events/s, 200), BENCH_SECONDS (5) override the defaults.
 */
import { createRequire } from "node:module"
import { cpus, loadavg } from "node:os"
import { Worker } from "node:worker_threads"
import { HttpServer } from "@effect/platform"
import { SqlClient } from "@effect/sql"
import { Effect, Layer } from "effect"
import { WebSocketServer } from "ws"
import { runJournalPublisher } from "../../actors/JournalPublisher.ts"
import { appendJournal } from "../../src/Sql/Journal.ts"
import { TestDatabaseLive } from "../support/Database.ts"
import { testAppConfig } from "../support/TestConfig.ts"
import { TestHttpLive } from "../support/TestServer.ts"
import { summarize } from "./Summary.ts"

const SUBSCRIBERS = Number(process.env.BENCH_SUBSCRIBERS ?? 256)
const RATE = Number(process.env.BENCH_RATE ?? 200)
const SECONDS = Number(process.env.BENCH_SECONDS ?? 5)
const WORKERS = Math.min(4, SUBSCRIBERS)
const DRAIN_MS = 2000

/** Wall clock with sub-millisecond resolution, comparable across threads and with Postgres now(). */
const wallMs = () => performance.timeOrigin + performance.now()

/** Client side, plain CommonJS for an eval'd worker: N sockets; (seq, delivered at) per event. */
const CLIENT = `
const { parentPort, workerData } = require("node:worker_threads")
const WebSocket = require(workerData.wsPath)
const wall = () => performance.timeOrigin + performance.now()
const { url, n, subscribe } = workerData
const seqs = []
const times = []
let ready = 0
const sockets = []
const isReady = () => { if (++ready === n) parentPort.postMessage({ type: "ready" }) }
for (let i = 0; i < n; i++) {
  const ws = new WebSocket(url)
  sockets.push(ws)
  let first = true
  ws.on("open", () => subscribe ? ws.send(JSON.stringify({ type: "subscribe", channels: ["trades"] })) : isReady())
  ws.on("message", (data) => {
    const t = wall()
    const frame = JSON.parse(data.toString())
    if (frame.type === "control") return parentPort.postMessage({ type: "error", message: "control " + frame.code })
    if (first && subscribe) { first = false; isReady() }
    for (const e of frame.events) { seqs.push(e.data.seq); times.push(t) }
  })
  ws.on("error", (e) => parentPort.postMessage({ type: "error", message: String(e) }))
}
parentPort.on("message", () => {
  for (const ws of sockets) ws.terminate()
  parentPort.postMessage({ type: "done", seqs: Int32Array.from(seqs), times: Float64Array.from(times) })
})
`

interface Delivery {
  readonly seq: number
  readonly at: number
}

const startClients = (url: string, subscribe: boolean) => {
  const wsPath = createRequire(import.meta.url).resolve("ws")
  const workers = Array.from({ length: WORKERS }, (_, i) => {
    const n = Math.floor(SUBSCRIBERS / WORKERS) + (i < SUBSCRIBERS % WORKERS ? 1 : 0)
    return new Worker(CLIENT, { eval: true, workerData: { url, n, subscribe, wsPath } })
  })
  type Message = { type: string; message?: string; seqs?: Int32Array; times?: Float64Array }
  const message = (w: Worker, type: string) =>
    new Promise<Message>((resolve, reject) => {
      const on = (m: Message) => {
        if (m.type === "error") reject(new Error(m.message))
        if (m.type === type) {
          w.off("message", on)
          resolve(m)
        }
      }
      w.on("message", on)
    })
  const ready = Promise.all(workers.map((w) => message(w, "ready"))).then(() => {})
  const stop = async (): Promise<Array<Delivery>> => {
    const done = await Promise.all(
      workers.map((w) => {
        const r = message(w, "done")
        w.postMessage("stop")
        return r
      }),
    )
    await Promise.all(workers.map((w) => w.terminate()))
    return done.flatMap((d) => Array.from(d.seqs ?? [], (seq, i) => ({ seq, at: d.times![i]! })))
  }
  return { ready, stop }
}

const payload = (seq: number) => ({
  id: `00000000-0000-4000-8000-${seq.toString().padStart(12, "0")}`,
  from: seq % 2 === 0 ? "aster" : "hyperliquid",
  to: seq % 2 === 0 ? "hyperliquid" : "aster",
  amount_in: "1000000",
  amount_out: "999000",
  at: new Date().toISOString(),
  seq,
})

/** Calls `publish(seq)` RATE times a second for SECONDS (not waiting for earlier calls); start times. */
const steady = <R>(publish: (seq: number) => Effect.Effect<unknown, never, R>) =>
  Effect.gen(function* () {
    const total = RATE * SECONDS
    const started = new Float64Array(total)
    const start = wallMs()
    const fibers = []
    for (let seq = 0; seq < total; seq++) {
      const wait = start + (seq * 1000) / RATE - wallMs()
      if (wait > 0) yield* Effect.sleep(`${wait} millis`)
      started[seq] = wallMs()
      fibers.push(yield* Effect.fork(publish(seq)))
    }
    for (const f of fibers) yield* f.await
    return started
  })

const percentiles = (values: ArrayLike<number>) => {
  const sorted = Float64Array.from(values).sort()
  const at = (p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN
  return { p50: at(50), p99: at(99), max: sorted[sorted.length - 1] ?? Number.NaN }
}

const ms = (x: number) => `${x.toFixed(2)} ms`

const program = Effect.gen(function* () {
  const server = yield* HttpServer.HttpServer
  const sql = yield* SqlClient.SqlClient
  const port = server.address._tag === "TcpAddress" ? server.address.port : 0
  const expected = RATE * SECONDS * SUBSCRIBERS

  // Baseline: a bare ws server broadcasting the same pages to the same number of clients.
  const bare = new WebSocketServer({ port: 0, host: "127.0.0.1" })
  yield* Effect.promise(() => new Promise((resolve) => bare.once("listening", resolve)))
  const bareClients = startClients(`ws://127.0.0.1:${(bare.address() as { port: number }).port}`, false)
  yield* Effect.promise(() => bareClients.ready)
  const bareCpu0 = process.cpuUsage()
  const bareStarted = yield* steady((seq) =>
    Effect.sync(() => {
      const data = payload(seq)
      const cursor = String(seq + 1)
      const frame = JSON.stringify({
        type: "events",
        events: [{ cursor, kind: "trade.settled", at: data.at, data }],
        next_cursor: cursor,
      })
      for (const client of bare.clients) client.send(frame)
    }),
  )
  yield* Effect.sleep(`${DRAIN_MS} millis`)
  const bareCpu = process.cpuUsage(bareCpu0)
  const bareDeliveries = yield* Effect.promise(() => bareClients.stop())
  yield* Effect.promise(() => new Promise((resolve) => bare.close(resolve)))
  const baseline = percentiles(bareDeliveries.map((d) => d.at - bareStarted[d.seq]!))

  // The service: each event in its own transaction, the publisher, the stream.
  const clients = startClients(`ws://127.0.0.1:${port}/v1/stream`, true)
  yield* Effect.promise(() => clients.ready)
  const cpu0 = process.cpuUsage()
  const elu0 = performance.eventLoopUtilization()
  const appended = yield* steady((seq) =>
    sql
      .withTransaction(appendJournal({ kind: "trade.settled", master: null, payload: payload(seq) }))
      .pipe(Effect.orDie),
  )
  yield* Effect.sleep(`${DRAIN_MS} millis`)
  const deliveries = yield* Effect.promise(() => clients.stop())
  const cpu = process.cpuUsage(cpu0)
  const elu = performance.eventLoopUtilization(elu0).utilization
  const rows = yield* sql<{ seq: number; published: number }>`
    select (payload->>'seq')::int as seq, extract(epoch from published_at) * 1000 as published
    from journal where kind = 'trade.settled'`
  const publishedAt = new Float64Array(RATE * SECONDS)
  for (const r of rows) publishedAt[r.seq] = Number(r.published)
  const endToEnd = percentiles(deliveries.map((d) => d.at - appended[d.seq]!))
  const fromPublish = percentiles(deliveries.map((d) => d.at - publishedAt[d.seq]!))
  const publisherLag = percentiles(rows.map((r) => Number(r.published) - appended[r.seq]!))

  console.log(`GET /v1/stream: ${SUBSCRIBERS} subscribers, ${RATE} events/s for ${SECONDS} s, loopback`)
  console.log(
    `bare ws broadcast (baseline): ${Math.round(bareDeliveries.length / SECONDS)} events/s delivered ` +
      `(${bareDeliveries.length}/${expected}); broadcast → delivery p50 ${ms(baseline.p50)}, p99 ${ms(baseline.p99)}`,
  )
  console.log(
    `settlement stream:            ${Math.round(deliveries.length / SECONDS)} events/s delivered ` +
      `(${deliveries.length}/${expected}); publish → delivery p50 ${ms(fromPublish.p50)}, p99 ${ms(fromPublish.p99)}`,
  )
  console.log(
    `  append → delivery p50 ${ms(endToEnd.p50)}, p99 ${ms(endToEnd.p99)} ` +
      `(append → cursor assigned p50 ${ms(publisherLag.p50)}, p99 ${ms(publisherLag.p99)})`,
  )
  const perDelivery = (c: NodeJS.CpuUsage, n: number) => (((c.user + c.system) / n) * 1000).toFixed(0)
  console.log(
    `  server process: ${((cpu.user + cpu.system) / 1000 / (SECONDS * 1000 + DRAIN_MS)).toFixed(2)} CPU, ` +
      `main event loop ${(elu * 100).toFixed(0)}% busy; process CPU per delivery ${perDelivery(cpu, deliveries.length)} ns ` +
      `(baseline phase ${perDelivery(bareCpu, bareDeliveries.length)} ns; both include the client threads)`,
  )
  console.log(
    `  load average at the end: ${loadavg()
      .map((l) => l.toFixed(1))
      .join(" ")} on ${cpus().length} CPUs`,
  )
  console.log(`delivered events/s ratio stream/baseline: ${(deliveries.length / bareDeliveries.length).toFixed(2)}`)
  console.log(`p50 ratio stream/baseline (publish → delivery): ${(fromPublish.p50 / baseline.p50).toFixed(1)}`)
  console.log(`p99 ratio stream/baseline (publish → delivery): ${(fromPublish.p99 / baseline.p99).toFixed(1)}`)
  console.log(
    `stream p99 publish → delivery ${ms(fromPublish.p99)} (target <= 50 ms): ${fromPublish.p99 <= 50 ? "ok" : "MISSED"}`,
  )
  summarize({
    bench: `stream: publish → delivery p50, ${SUBSCRIBERS} subscribers, ${RATE} ev/s`,
    figure: ms(fromPublish.p50),
    baseline: `bare ws ${ms(baseline.p50)}`,
    // oriented so higher is better: baseline / service; the target p50 <= 2 × bare is a ratio >= 0.5
    ratio: baseline.p50 / fromPublish.p50,
    target: "p50 <= 2 × bare (>= 0.5)",
    atLeast: 0.5,
  })
  summarize({
    bench: `stream: publish → delivery p99, ${SUBSCRIBERS} subscribers, ${RATE} ev/s`,
    figure: ms(fromPublish.p99),
    baseline: `bare ws ${ms(baseline.p99)}`,
    ratio: baseline.p99 / fromPublish.p99,
    target: `p99 <= 50 ms: ${fromPublish.p99 <= 50 ? "met" : "missed"}`,
  })
  if (deliveries.length !== expected) console.log("WARNING: the stream did not deliver every event to every subscriber")
})

const Stack = Layer.scopedDiscard(Effect.forkScoped(runJournalPublisher)).pipe(
  Layer.provideMerge(TestHttpLive),
  Layer.provideMerge(TestDatabaseLive),
  // All subscribers connect from 127.0.0.1 without a token: lift the per-client and anonymous shares.
  Layer.provideMerge(
    testAppConfig({ limits: { stream_connections_per_client: 256, stream_anonymous_connections: 256 } }),
  ),
)

Effect.runPromise(program.pipe(Effect.provide(Stack), Effect.scoped, Effect.timeout("120 seconds"))).then(
  () => process.exit(0),
  (e) => {
    console.error(e)
    process.exit(1)
  },
)
