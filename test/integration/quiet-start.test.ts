import { SqlClient } from "@effect/sql"
import { PgClient } from "@effect/sql-pg"
import { expect, layer } from "@effect/vitest"
import { Chunk, Effect, Fiber, Redacted, Stream } from "effect"
import { runnerLine } from "../../src/Cluster/Runner.ts"
import { freePorts } from "../../src/FreePort.ts"
import { TestDatabaseLive, testDatabaseUrl } from "../support/Database.ts"
import { rawRequest } from "../support/Http.ts"
import { startService, stopProcess } from "../support/Process.ts"

/**
 * A quiet start (issue 15, item 6): no pg deprecation ("Calling client.query() when the client is already
 * executing a query", an error in pg 9: the LISTENs every actor sent at once on one connection, and the statements
 * @effect/cluster sends at once on its shard lock connection: src/Sql/PreparedStatements.ts), and the
 * cluster runner's start-up line says it is the runner's internal address, not the API's.
 */

/** Warnings this process emitted (pg's deprecation goes through process.emitWarning). */
const warnings: Array<string> = []
process.on("warning", (w) => warnings.push(`${w.name}: ${w.message}`))

/** Takes `n` payloads from a subscription started now; resolves once they arrived (or fails after 10 s). */
const take = (stream: Stream.Stream<string, unknown>, n: number) =>
  stream.pipe(
    Stream.take(n),
    Stream.runCollect,
    Effect.map(Chunk.toReadonlyArray),
    Effect.timeout("10 seconds"),
    Effect.fork,
  )

layer(TestDatabaseLive, { timeout: "180 seconds", excludeTestServices: true })(
  "LISTEN/NOTIFY and a quiet start",
  (it) => {
    it.effect("many subscriptions at once share one connection without overlapping statements", () =>
      Effect.gen(function* () {
        const pg = yield* PgClient.PgClient
        const sql = yield* SqlClient.SqlClient
        const channels = ["quiet_a", "quiet_b", "quiet_c", "quiet_d", "quiet_e", "quiet_f"]
        // Two subscribers per channel, all subscribing at once (as the actors do at start-up).
        const fibers = yield* Effect.all(
          channels.flatMap((c) => [take(pg.listen(c), 1), take(pg.listen(c), 1)]),
          { concurrency: "unbounded" },
        )
        // No LISTEN confirmation is observable: notify until every subscriber got one.
        const all = Fiber.join(Fiber.all(fibers))
        const notifier = yield* Effect.forever(
          Effect.forEach(channels, (c) => sql`select pg_notify(${c}, ${c})`, { discard: true }).pipe(
            Effect.zipRight(Effect.sleep("50 millis")),
          ),
        ).pipe(Effect.fork)
        const got = yield* all
        yield* Fiber.interrupt(notifier)
        expect(got.map((payloads) => payloads[0])).toEqual(channels.flatMap((c) => [c, c]))
        expect(warnings.filter((w) => w.includes("already executing"))).toEqual([])
      }),
    )

    it.effect(
      "statements sent at once on one reserved connection (as @effect/cluster releases its shards) run in call order, with no pg deprecation",
      () =>
        Effect.gen(function* () {
          const sql = yield* SqlClient.SqlClient
          const conn = yield* sql.reserve
          yield* conn.executeRaw("create temp table quiet_seen (i int not null, at serial)", [])
          // Twelve at once, each its own fiber, as the cluster's shard releases are; the first one is slow, so the
          // others are all sent while it runs.
          const results = yield* Effect.all(
            Array.from({ length: 12 }, (_, i) =>
              conn.executeRaw(
                i === 0
                  ? "insert into quiet_seen (i) select $1::int from pg_sleep(0.2) returning i"
                  : "insert into quiet_seen (i) values ($1::int) returning i",
                [i],
              ),
            ),
            { concurrency: "unbounded" },
          )
          expect(results.map((r) => (r as { rows: Array<{ i: number }> }).rows[0]!.i)).toEqual(
            Array.from({ length: 12 }, (_, i) => i),
          )
          const order = yield* conn.executeRaw("select i from quiet_seen order by at", [])
          expect((order as { rows: Array<{ i: number }> }).rows.map((r) => r.i)).toEqual(
            Array.from({ length: 12 }, (_, i) => i),
          )
          // A statement pg refuses to send (no text) fails alone; the next one on the connection still runs.
          const refused = yield* Effect.either(conn.executeRaw(null as unknown as string, []))
          expect(refused._tag).toBe("Left")
          expect(((yield* conn.executeRaw("select 1 as one", [])) as { rows: Array<{ one: number }> }).rows).toEqual([
            { one: 1 },
          ])
          expect(warnings.filter((w) => w.includes("already executing"))).toEqual([])
        }).pipe(Effect.scoped),
    )

    it.effect("a subscriber leaving does not silence another subscriber of the same channel", () =>
      Effect.gen(function* () {
        const pg = yield* PgClient.PgClient
        const sql = yield* SqlClient.SqlClient
        const stays = yield* take(pg.listen("quiet_shared"), 2)
        const leaves = yield* take(pg.listen("quiet_shared"), 1)
        const notify = (payload: string) => sql`select pg_notify('quiet_shared', ${payload})`
        // Until both are listening: the leaving one takes its one payload and ends (its UNLISTEN, if any).
        while (leaves.unsafePoll() === null) {
          yield* notify("first")
          yield* Effect.sleep("50 millis")
        }
        yield* Effect.sleep("200 millis")
        let after = 0
        while (stays.unsafePoll() === null && after < 40) {
          yield* notify("after")
          yield* Effect.sleep("50 millis")
          after++
        }
        const payloads = yield* Fiber.join(stays)
        expect(payloads).toHaveLength(2)
      }),
    )

    it.effect(
      "the service starts and stops with no deprecation warning and names the runner's address as internal",
      () =>
        Effect.gen(function* () {
          const url = yield* testDatabaseUrl
          const [port, runnerPort] = yield* freePorts(2)
          const service = yield* startService({
            DATABASE_URL: Redacted.value(url),
            PORT: String(port),
            RUNNER_PORT: String(runnerPort),
            NODE_OPTIONS: "--trace-deprecation --stack-trace-limit=60",
          })
          // The actors and the stream's journal tail all subscribe (LISTEN) right after start-up.
          expect((yield* rawRequest(`http://127.0.0.1:${port}/health/live`)).status).toBe(200)
          yield* Effect.sleep("5 seconds")
          yield* stopProcess(service.child)
          const output = service.output()
          expect(output).not.toMatch(/DeprecationWarning|already executing a query/)
          expect(output).toContain(`settlement service listening on http://127.0.0.1:${port}`)
          // The runner's line says it is the runner's internal address, not the API's.
          expect(output).toContain(runnerLine(`127.0.0.1:${runnerPort}`))
          expect(output).not.toMatch(/Listening on: /)
          // "listening on" is the API's line alone (what scripts and tests wait for).
          expect(output.match(/listening on/g)).toHaveLength(1)
        }).pipe(Effect.scoped),
    )
  },
)
