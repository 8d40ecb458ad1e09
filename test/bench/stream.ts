/**
 * GET /v1/stream under load, as a size sweep (issue 21 item 2): for each number of subscribers of public trades
 * × trade events/s, events are journaled at that steady rate (each in its own transaction; the JournalPublisher
 * assigns cursors; delivery through LISTEN, the shared journal tail and each subscriber's filter), against a bare
 * `ws` broadcast of the same payloads to as many clients, in the same run, on loopback. One server and database
 * serve every cell; each cell has its own subscribers (test/bench/StreamClients.ts, worker threads).
 *
 * Per cell: delivered events/s (events × subscribers, first publish to last delivery), publish → delivery
 * p50/p99 of the stream (from the cursor's `published_at`) and of the bare broadcast (from the send call), the
 * p50 ratio, and per delivered event the CPU ms of the process tree (server, client threads, PostgreSQL) and the
 * database statements (test/bench/Cost.ts; statements need BENCH_STATEMENT_STATS=true, which run.ts sets).
 * Summary rows for 256 subscribers × 200 events/s: p50 <= 2 × bare, p99 <= 50 ms.
 *
 * BENCH_STREAM_SUBSCRIBERS ("64,256"), BENCH_STREAM_RATES ("50,200,1000"), BENCH_SECONDS (5) per phase;
 * BENCH_SUBSCRIBERS / BENCH_RATE, when set, replace the lists with one value. A cell whose deliveries do not all
 * arrive within BENCH_STREAM_DRAIN_MS (15,000) after the last publish fails; the others still run.
 */
import { HttpServer } from "@effect/platform"
import { SqlClient } from "@effect/sql"
import { Effect, Either, Layer } from "effect"
import { WebSocketServer } from "ws"
import { runJournalPublisher } from "../../actors/JournalPublisher.ts"
import { TracingLive } from "../../src/Observability/Tracing.ts"
import { appendJournal } from "../../src/Sql/Journal.ts"
import { TestDatabaseLive } from "../support/Database.ts"
import { testAppConfig } from "../support/TestConfig.ts"
import { TestHttpLive } from "../support/TestServer.ts"
import { costMeter, type PerUnit, printSweep } from "./Cost.ts"
import { benchLogging } from "./Logging.ts"
import { type Deliveries, startClients, wallMs } from "./StreamClients.ts"
import { summarize, whole } from "./Summary.ts"

const list = (single: string | undefined, many: string | undefined, fallback: string) =>
  (single ?? many ?? fallback).split(",").map((s) => Number(s.trim()))
const SUBSCRIBERS = list(process.env.BENCH_SUBSCRIBERS, process.env.BENCH_STREAM_SUBSCRIBERS, "64,256")
const RATES = list(process.env.BENCH_RATE, process.env.BENCH_STREAM_RATES, "50,200,1000")
const SECONDS = Number(process.env.BENCH_SECONDS ?? 5)
const DRAIN_MS = Number(process.env.BENCH_STREAM_DRAIN_MS ?? 15_000)
/** The cell the summary rows report (else the sweep's last). */
const SUMMARY_CELL = { subscribers: 256, rate: 200 }

const payload = (cell: string, seq: number) => ({
  id: `00000000-0000-4000-8000-${seq.toString().padStart(12, "0")}`,
  from: seq % 2 === 0 ? "aster" : "hyperliquid",
  to: seq % 2 === 0 ? "hyperliquid" : "aster",
  amount_in: "1000000",
  amount_out: "999000",
  at: new Date().toISOString(),
  cell,
  seq,
})

/** Calls `publish(seq)` `rate` times a second for SECONDS (not waiting for earlier calls); start times (wall ms). */
const steady = <R>(rate: number, publish: (seq: number) => Effect.Effect<unknown, never, R>) =>
  Effect.gen(function* () {
    const total = rate * SECONDS
    const started = new Float64Array(total)
    const start = wallMs()
    const fibers = []
    for (let seq = 0; seq < total; seq++) {
      const wait = start + (seq * 1000) / rate - wallMs()
      if (wait > 0) yield* Effect.sleep(`${wait} millis`)
      started[seq] = wallMs()
      fibers.push(yield* Effect.fork(publish(seq)))
    }
    for (const f of fibers) yield* f.await
    return started
  })

const percentiles = (values: Float64Array) => {
  const sorted = values.sort()
  const at = (p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN
  return { p50: at(50), p99: at(99) }
}

/** Latency (ms) of each delivery from its event's start time, and deliveries/s from the first start to the last. */
const measure = (d: Deliveries, startOf: Float64Array) => {
  const latency = new Float64Array(d.seqs.length)
  let last = 0
  for (let i = 0; i < latency.length; i++) {
    latency[i] = d.times[i]! - startOf[d.seqs[i]!]!
    last = Math.max(last, d.times[i]!)
  }
  return { ...percentiles(latency), perSecond: (d.seqs.length * 1000) / (last - startOf[0]!) }
}

const ms = (x: number) => `${x.toFixed(2)} ms`
/** Per-delivery costs are small: three significant digits. */
const small = (x: number | null) => (x === null ? "n/a" : x.toPrecision(3))

const program = Effect.gen(function* () {
  const server = yield* HttpServer.HttpServer
  const sql = yield* SqlClient.SqlClient
  const cost = yield* costMeter
  const port = server.address._tag === "TcpAddress" ? server.address.port : 0
  const bare = new WebSocketServer({ port: 0, host: "127.0.0.1" })
  yield* Effect.promise(() => new Promise((resolve) => bare.once("listening", resolve)))
  const bareUrl = `ws://127.0.0.1:${(bare.address() as { port: number }).port}`

  /** One phase: clients ready, publish at `rate`, wait for every delivery; deliveries, start times, cost. */
  const phase = <R>(
    url: string,
    subscribers: number,
    subscribe: boolean,
    rate: number,
    publish: (seq: number) => Effect.Effect<unknown, never, R>,
  ) =>
    Effect.gen(function* () {
      const clients = startClients(url, subscribers, subscribe)
      return yield* Effect.gen(function* () {
        yield* clients.ready
        const before = yield* cost.snapshot
        const started = yield* steady(rate, publish)
        yield* clients.drain(rate * SECONDS * subscribers, DRAIN_MS)
        const per: PerUnit = yield* cost.perUnit(before, rate * SECONDS * subscribers)
        return { deliveries: yield* clients.stop, started, per }
      }).pipe(Effect.tapError(() => clients.kill))
    })

  /** The previous cell's stream connections gone (their slots are rows), bounded by 10 s. */
  const slotsFree = Effect.gen(function* () {
    for (let i = 0; i < 200; i++) {
      const [row] = yield* sql<{ n: number }>`select count(*)::int as n from stream_slots`
      if (row!.n === 0) return
      yield* Effect.sleep("50 millis")
    }
    return yield* Effect.fail(new Error("the previous cell's stream slots were still held after 10 s"))
  })

  const cell = (subscribers: number, rate: number) =>
    Effect.gen(function* () {
      const id = `${subscribers}x${rate}`
      yield* slotsFree
      const b = yield* phase(bareUrl, subscribers, false, rate, (seq) =>
        Effect.sync(() => {
          const data = payload(id, seq)
          const cursor = String(seq + 1)
          const frame = JSON.stringify({
            type: "events",
            events: [{ cursor, kind: "trade.settled", at: data.at, data }],
            next_cursor: cursor,
          })
          for (const client of bare.clients) client.send(frame)
        }),
      )
      const s = yield* phase(`ws://127.0.0.1:${port}/v1/stream`, subscribers, true, rate, (seq) =>
        sql
          .withTransaction(appendJournal({ kind: "trade.settled", master: null, payload: payload(id, seq) }))
          .pipe(Effect.orDie),
      )
      const rows = yield* sql<{ seq: number; published: number }>`
        select (payload->>'seq')::int as seq, extract(epoch from published_at) * 1000 as published
        from journal where kind = 'trade.settled' and payload->>'cell' = ${id}`
      const publishedAt = new Float64Array(rate * SECONDS)
      for (const r of rows) publishedAt[r.seq] = Number(r.published)
      return {
        subscribers,
        rate,
        baseline: measure(b.deliveries, b.started),
        stream: measure(s.deliveries, publishedAt),
        b,
        s,
      }
    })

  const table: Array<Record<string, string | number>> = []
  const failed: Array<string> = []
  let summary: Effect.Effect.Success<ReturnType<typeof cell>> | undefined
  for (const subscribers of SUBSCRIBERS) {
    for (const rate of RATES) {
      const result = yield* Effect.either(cell(subscribers, rate))
      const key = { subscribers, "events/s": rate }
      if (Either.isLeft(result)) {
        const message = result.left instanceof Error ? result.left.message : String(result.left)
        console.log(`${subscribers} subscribers × ${rate} events/s FAILED: ${message}`)
        failed.push(`${subscribers}×${rate}: ${message}`)
        table.push({ ...key, status: `FAILED: ${message}` })
        continue
      }
      const { baseline, stream, b, s } = result.right
      table.push({
        ...key,
        "delivered/s": whole(stream.perSecond),
        "p50 ms": stream.p50,
        "p99 ms": stream.p99,
        "bare delivered/s": whole(baseline.perSecond),
        "bare p50 ms": baseline.p50,
        "bare p99 ms": baseline.p99,
        "p50 / bare p50": stream.p50 / baseline.p50,
        "CPU ms/delivery": small(s.per.cpuMs),
        "bare CPU ms/delivery": small(b.per.cpuMs),
        "statements/delivery": small(s.per.statements),
        status: "ok",
      })
      if (subscribers === SUMMARY_CELL.subscribers && rate === SUMMARY_CELL.rate) summary = result.right
      else if (summary === undefined && subscribers === SUBSCRIBERS.at(-1) && rate === RATES.at(-1)) {
        summary = result.right
      }
    }
  }
  yield* Effect.promise(() => new Promise((resolve) => bare.close(resolve)))
  printSweep(
    `GET /v1/stream vs bare ws broadcast: ${SECONDS} s per phase, loopback; latency publish → delivery; ` +
      "costs per delivered event (events × subscribers)",
    table,
  )

  if (summary !== undefined) {
    const { baseline, stream } = summary
    const where = `${summary.subscribers} subscribers, ${summary.rate} ev/s`
    summarize({
      bench: `stream: publish → delivery p50, ${where}`,
      figure: ms(stream.p50),
      baseline: `bare ws ${ms(baseline.p50)}`,
      // oriented so higher is better: baseline / service; the target p50 <= 2 × bare is a ratio >= 0.5
      ratio: baseline.p50 / stream.p50,
      target: "p50 <= 2 × bare (>= 0.5)",
      atLeast: 0.5,
    })
    summarize({
      bench: `stream: publish → delivery p99, ${where}`,
      figure: ms(stream.p99),
      baseline: `bare ws ${ms(baseline.p99)}`,
      ratio: baseline.p99 / stream.p99,
      target: `p99 <= 50 ms: ${stream.p99 <= 50 ? "met" : "missed"}`,
    })
  }
  if (failed.length > 0) return yield* Effect.fail(new Error(`cells failed:\n${failed.join("\n")}`))
})

const Stack = Layer.scopedDiscard(Effect.forkScoped(runJournalPublisher)).pipe(
  Layer.provideMerge(TestHttpLive),
  Layer.provideMerge(TestDatabaseLive),
  // All subscribers connect from 127.0.0.1 without a token: lift the per-client and anonymous shares.
  Layer.provideMerge(
    testAppConfig({ limits: { stream_connections_per_client: 256, stream_anonymous_connections: 256 } }),
  ),
)

// As main.ts: the JSON log (to a file here); without an OTLP endpoint Effect's tracer is off (outermost, so every
// fiber inherits them).
Effect.runPromise(
  program.pipe(
    Effect.provide(Stack),
    Effect.scoped,
    Effect.timeout("600 seconds"),
    Effect.provide(Layer.merge(benchLogging("stream").layer, TracingLive)),
  ),
).then(
  () => process.exit(0),
  (e) => {
    console.error(e)
    process.exit(1)
  },
)
