import { SqlClient } from "@effect/sql"
import { expect, layer } from "@effect/vitest"
import { Context, Duration, Effect, Layer, Option, Redacted, Schedule } from "effect"
import { purgeProcessedMessages, removeDeadRunners } from "../../src/Cluster/RunnerStatusRepo.ts"
import { clusterStorage } from "../../src/Cluster.ts"
import { DevelopmentConfig } from "../../src/DevelopmentConfig.ts"
import { databaseLayer } from "../../src/Sql/Database.ts"
import { key, startTestChain, venueEntry } from "../support/ChainDevnet.ts"
import { type CrashableService, spawnListening, stopService } from "../support/ChainProcess.ts"
import { scopedConfigFile } from "../support/ConfigFile.ts"
import { testDatabaseUrl } from "../support/Database.ts"
import { rawRequest } from "../support/Http.ts"
import { pollUntil } from "../support/Poll.ts"
import { TEST_ORIGIN } from "../support/TestConfig.ts"

/**
 * Supervision and failover with real runner processes on one PostgreSQL and one anvil chain (1 s
 * blocks). A defect is injected three times into the venue watcher through its named fault point
 * (`watcher.before-poll`, src/Chain/FaultPoint.ts): its supervisor restarts it, and /health on
 * another runner tells. Then the watcher's owner is SIGKILLed (and later one stopped gracefully):
 * the watcher runs on a survivor within the deadline, and the dead runner's rows go.
 */

const WATCHER = "venue-watcher:hyperliquid"

class Env extends Context.Tag("test/Env")<Env, { readonly env: Record<string, string> }>() {}

const Live = Layer.unwrapScoped(
  Effect.gen(function* () {
    const url = yield* testDatabaseUrl
    const chain = yield* Effect.acquireRelease(
      Effect.promise(() => startTestChain({ chainId: 999, kind: "hyperliquid", slotsInAnEpoch: 2, blockTime: 1 })),
      (c) => Effect.promise(() => c.anvil.stop()),
    )
    const config = {
      ...DevelopmentConfig,
      app_origins: [TEST_ORIGIN],
      venues: [venueEntry(chain, "hyperliquid")],
      operator_key: key(0),
    }
    const env = {
      DATABASE_URL: Redacted.value(url),
      SETTLEMENT_CONFIG: yield* scopedConfigFile("cluster-supervision-", config),
    }
    return databaseLayer(url).pipe(Layer.provideMerge(Layer.succeed(Env, { env })))
  }),
)

interface Runner {
  readonly name: string
  readonly port: number
  readonly address: string
  readonly service: CrashableService
}

interface StatusRow {
  readonly address: string
  readonly shards: number
  readonly singletons: ReadonlyArray<string>
  readonly actors: ReadonlyArray<{
    name: string
    active: boolean
    restarts: number
    instances?: number
    last_failure: unknown
  }>
}

interface ClusterBody {
  readonly actors: ReadonlyArray<{
    kind: string
    active: number
    restarts: number
    last_failure: { message: string; at: string; runner: string } | null
  }>
  readonly mailbox_depth: number
  readonly runners: ReadonlyArray<{ address: string; alive: boolean; singletons: ReadonlyArray<string> }>
}

const statusRows = Effect.flatMap(
  SqlClient.SqlClient,
  (sql) => sql<StatusRow>`select address, shards, singletons, actors from runner_status order by address`,
)

const clusterRunners = Effect.flatMap(
  SqlClient.SqlClient,
  (sql) => sql<{ address: string }>`select address from cluster_runners order by address`,
)

/** The watcher's last successful check (its status row), in database time. */
const watcherCheckedAt = Effect.flatMap(
  SqlClient.SqlClient,
  (sql) => sql<{ t: number | null }>`
    select (extract(epoch from checked_at) * 1000)::float8 as t from chain_status where venue = 'hyperliquid'`,
).pipe(Effect.map((rows) => rows[0]?.t ?? 0))

const dbNow = Effect.flatMap(
  SqlClient.SqlClient,
  (sql) => sql<{ t: number }>`select (extract(epoch from now()) * 1000)::float8 as t`,
).pipe(Effect.map((rows) => rows[0]!.t))

const healthOf = (port: number) =>
  rawRequest(`http://127.0.0.1:${port}/health`).pipe(
    Effect.timeout("3 seconds"),
    Effect.retry({ times: 10, schedule: Schedule.spaced("250 millis") }),
    Effect.orDie,
    Effect.map((res) => res.json as { status: string; chains: unknown[]; cluster: ClusterBody }),
  )

const holderOf = (rows: ReadonlyArray<StatusRow>, name: string) =>
  rows.filter((r) => r.singletons.includes(name)).map((r) => r.address)

/** Starts a runner process and waits for its HTTP listening line (on fresh ports: spawnListening). */
const startRunner = (name: string, env: Record<string, string>) =>
  Effect.gen(function* () {
    const { service, port, runnerPort } = yield* spawnListening(name, env)
    yield* Effect.addFinalizer(() => stopService(service))
    return { name, port, address: `127.0.0.1:${runnerPort}`, service } satisfies Runner
  })

/**
 * Settled: the rows are exactly `alive`'s, each holds part of the 300 shards and together all of
 * them (no hand-over in flight), and every singleton is held by exactly one runner.
 */
const placedOnce = (rows: ReadonlyArray<StatusRow>, names: ReadonlyArray<string>, alive: ReadonlyArray<Runner>) =>
  rows.length === alive.length &&
  rows.every((r) => alive.some((a) => a.address === r.address) && r.shards > 0) &&
  rows.reduce((sum, r) => sum + r.shards, 0) === 300 &&
  names.every((n) => holderOf(rows, n).length === 1) &&
  rows.flatMap((r) => r.singletons).length === names.length

const printPlacement = (label: string, rows: ReadonlyArray<StatusRow>, runners: ReadonlyArray<Runner>) =>
  Effect.sync(() => {
    const nameOf = (address: string) => runners.find((r) => r.address === address)?.name ?? address
    const lines = rows.map((r) => `  ${nameOf(r.address)} (${r.shards} shards): ${r.singletons.join(", ") || "-"}`)
    console.log(`${label}:\n${lines.join("\n")}`)
  })

layer(Live, { timeout: "300 seconds", excludeTestServices: true })("cluster supervision and failover", (it) => {
  it.effect(
    "a watcher's three defects show on another runner; SIGKILL and a graceful stop move it; dead rows go",
    () =>
      Effect.gen(function* () {
        const { env } = yield* Env
        // Runner A alone: the watcher's first three polls die (a defect each), its supervisor restarts it.
        const a = yield* startRunner("A", {
          ...env,
          SETTLEMENT_DEFECT_POINT: "watcher.before-poll",
          SETTLEMENT_DEFECT_TIMES: "3",
        })
        const restarted = yield* pollUntil(
          statusRows,
          (rows) => rows.some((r) => r.actors.some((x) => x.name === WATCHER && x.restarts === 3 && x.active)),
          { every: "200 millis", within: "60 seconds" },
        )
        expect(holderOf(restarted, WATCHER)).toEqual([a.address])
        // Each failure is logged with the actor's name and its cause, and no secret (the operator key).
        // (The log format is not ours to pin: find each failure's entry after the message.)
        const entries = a.service.output().split("actor failed; restarting with backoff").slice(1)
        for (const n of [1, 2, 3]) {
          const entry = entries.find((e) =>
            e.slice(0, 1500).includes(`injected defect ${n} of 3 at watcher.before-poll`),
          )
          expect(entry?.slice(0, 1500), `failure ${n} logged`).toContain(WATCHER)
        }
        expect(a.service.output()).not.toContain(key(0).slice(2))
        // It runs again: a poll after the third restart succeeds (the status row's check time moves on).
        const since = yield* dbNow
        yield* pollUntil(watcherCheckedAt, (t) => t > since, { every: "200 millis", within: "20 seconds" })

        // Runner B (no fault) joins; its /health reports A's restarts and last failure of that kind.
        const b = yield* startRunner("B", env)
        const fromB = yield* pollUntil(healthOf(b.port), (h) => h.cluster.runners.filter((r) => r.alive).length === 2, {
          every: "200 millis",
          within: "20 seconds",
        })
        const watcherKind = fromB.cluster.actors.find((x) => x.kind === "venue-watcher")
        console.log(`/health on B, venue-watcher: ${JSON.stringify(watcherKind)}`)
        expect(watcherKind?.restarts).toBe(3)
        expect(watcherKind?.last_failure?.message).toBe("injected defect 3 of 3 at watcher.before-poll")
        expect(watcherKind?.last_failure?.runner).toBe(a.address)
        expect(fromB.cluster.mailbox_depth).toBe(0)

        // The registered singletons are exactly the watchers, the relayers and the journal publisher (issue 22):
        // everything else is a keyed entity. Each is held by exactly one runner once the shards settle.
        const info = (yield* rawRequest(`http://127.0.0.1:${b.port}/v1/info`)).json as { operator: string }
        const expected = ["journal-publisher", `tx-relayer:hyperliquid:${info.operator}`, WATCHER].sort()
        const settled = yield* pollUntil(statusRows, (rows) => placedOnce(rows, expected, [a, b]), {
          every: "200 millis",
          within: "30 seconds",
        })
        // A runner's records: its registered singletons, and an entity kind once one of its entities ran there.
        for (const row of settled)
          expect(
            row.actors
              .filter((x) => x.instances === undefined)
              .map((x) => x.name)
              .sort(),
          ).toEqual(expected)
        console.log(`registered singletons (${expected.length}): ${expected.join(", ")}`)
        yield* printPlacement("placement with A and B", settled, [a, b])

        // SIGKILL the watcher's owner: the survivor runs it before the deadline; the dead rows go.
        const [owner, survivor] = holderOf(settled, WATCHER)[0] === a.address ? [a, b] : [b, a]
        owner.service.child.kill("SIGKILL")
        const killedAt = performance.now()
        yield* pollUntil(statusRows, (rows) => holderOf(rows, WATCHER).includes(survivor.address), {
          every: "100 millis",
          within: "15 seconds",
        })
        const failoverMs = performance.now() - killedAt
        console.log(
          `SIGKILL of ${owner.name}: ${WATCHER} running on ${survivor.name} after ${Math.round(failoverMs)} ms`,
        )
        const movedAt = yield* dbNow
        yield* pollUntil(watcherCheckedAt, (t) => t > movedAt, { every: "200 millis", within: "15 seconds" })
        yield* pollUntil(
          Effect.all([statusRows, clusterRunners]),
          ([rows, runners]) =>
            !rows.some((r) => r.address === owner.address) && !runners.some((r) => r.address === owner.address),
          { every: "200 millis", within: "20 seconds" },
        )
        console.log(`dead runner's rows gone ${Math.round(performance.now() - killedAt)} ms after the SIGKILL`)
        const afterKill = yield* healthOf(survivor.port)
        expect(afterKill.cluster.runners.map((r) => [r.address, r.alive])).toEqual([[survivor.address, true]])
        expect(afterKill.cluster.actors.find((x) => x.kind === "venue-watcher")?.active).toBe(1)

        // A graceful stop hands over at once: C joins, the watcher's holder gets SIGTERM.
        const c = yield* startRunner("C", env)
        const withC = yield* pollUntil(statusRows, (rows) => placedOnce(rows, expected, [survivor, c]), {
          every: "200 millis",
          within: "30 seconds",
        })
        yield* printPlacement(`placement with ${survivor.name} and C`, withC, [survivor, c])
        const [leaving, staying] = holderOf(withC, WATCHER)[0] === c.address ? [c, survivor] : [survivor, c]
        const stoppedAt = performance.now()
        yield* Effect.fork(stopService(leaving.service))
        yield* pollUntil(statusRows, (rows) => holderOf(rows, WATCHER).includes(staying.address), {
          every: "100 millis",
          within: "15 seconds",
        })
        console.log(
          `SIGTERM of ${leaving.name}: ${WATCHER} running on ${staying.name} after ${Math.round(performance.now() - stoppedAt)} ms`,
        )
        yield* Effect.promise(() => leaving.service.exited)
        const rows = yield* statusRows
        expect(rows.map((r) => r.address)).toEqual([staying.address])
        // Singletons moved several times (joins, a kill, a stop): none of it counted as a failure. The
        // staying runner may be A, which keeps the three injected restarts from the start (placement
        // decides): its records must be exactly what they were before the moves.
        const [stayingRow] = rows
        const countedBefore = settled.find((r) => r.address === staying.address)?.actors ?? []
        const failuresOf = (actors: StatusRow["actors"]) =>
          actors
            .filter((x) => x.restarts > 0 || x.last_failure !== null)
            .map((x) => ({ name: x.name, restarts: x.restarts, last_failure: x.last_failure }))
        const counted = failuresOf(stayingRow!.actors)
        expect(counted, `${staying.name}: ${JSON.stringify(counted)}`).toEqual(failuresOf(countedBefore))
        const last = yield* healthOf(staying.port)
        expect(last.cluster.actors.reduce((n, x) => n + x.active, 0)).toBe(expected.length)
      }).pipe(Effect.scoped),
    300_000,
  )

  it.effect("the janitor removes only stale runner rows; retention only old processed messages and their replies", () =>
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      // The cluster's tables, as a runner creates them (nothing runs on them here).
      yield* Layer.build(clusterStorage({ runnerAddress: Option.none() }))
      yield* sql`delete from runner_status`
      yield* sql`delete from cluster_runners`
      yield* sql`insert into runner_status (address, heartbeat_at) values
        ('stale:1', now() - interval '7 seconds'), ('fresh:1', now() - interval '4 seconds')`
      yield* sql`insert into cluster_runners (address, runner, last_heartbeat) values
        ('stale:1', 'x', now() - interval '7 seconds'), ('fresh:1', 'x', now() - interval '4 seconds')`
      yield* removeDeadRunners
      expect((yield* sql<{ address: string }>`select address from runner_status`).map((r) => r.address)).toEqual([
        "fresh:1",
      ])
      expect((yield* clusterRunners).map((r) => r.address)).toEqual(["fresh:1"])

      // Snowflake ids: creation time (ms since 2025-01-01) in the high bits.
      const now = Date.now()
      const idAt = (ms: number, seq: number) => ((BigInt(ms - Date.UTC(2025, 0, 1)) << 22n) + BigInt(seq)).toString()
      const old = now - 25 * 3600_000
      const rows = [
        { id: idAt(old, 1), processed: true },
        { id: idAt(old, 2), processed: false },
        { id: idAt(now - 3600_000, 3), processed: true },
      ]
      for (const r of rows) {
        yield* sql`insert into cluster_messages (id, message_id, shard_id, entity_type, entity_id, kind, tag, payload,
          headers, processed, request_id) values (${r.id}::bigint, ${`m${r.id}`}, 'default:1', 'Probe', 'e', 0, 'T', '{}',
          '{}', ${r.processed}, ${r.id}::bigint)`
        yield* sql`insert into cluster_replies (id, kind, request_id, payload) values
          (${r.id}::bigint + 100, 0, ${r.id}::bigint, '{}')`
      }
      expect(yield* purgeProcessedMessages(now, Duration.hours(24))).toBe(1)
      expect(yield* purgeProcessedMessages(now, Duration.hours(24))).toBe(0)
      const left = yield* sql<{ id: string }>`select id::text from cluster_messages order by id`
      expect(left.map((r) => r.id)).toEqual([rows[1]!.id, rows[2]!.id])
      const replies = yield* sql<{ id: string }>`select request_id::text as id from cluster_replies order by request_id`
      expect(replies.map((r) => r.id)).toEqual([rows[1]!.id, rows[2]!.id])
    }).pipe(Effect.scoped),
  )
})
