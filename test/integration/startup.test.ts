import { RunnerAddress } from "@effect/cluster"
import { NodeContext } from "@effect/platform-node"
import { SqlClient } from "@effect/sql"
import { PgClient, PgMigrator } from "@effect/sql-pg"
import { expect, layer } from "@effect/vitest"
import { Cause, Context, Effect, Exit, Layer, Option, Redacted } from "effect"
import { clusterStorage } from "../../src/Cluster.ts"
import { freePorts } from "../../src/FreePort.ts"
import { databaseLayer, migrationsLoader } from "../../src/Sql/Database.ts"
import { testDatabaseUrl } from "../support/Database.ts"
import { rawRequest } from "../support/Http.ts"
import { startService } from "../support/Process.ts"

/** The URL is shared with the child processes; the layer gives this test its own pool too. */
class Url extends Context.Tag("test/Url")<Url, Redacted.Redacted<string>>() {}
const Live = Layer.unwrapScoped(
  Effect.map(testDatabaseUrl, (url) => databaseLayer(url).pipe(Layer.provideMerge(Layer.succeed(Url, url)))),
)

const schemaSnapshot = Effect.flatMap(
  SqlClient.SqlClient,
  (sql) =>
    sql<{ t: string; c: string; d: string }>`
    select table_name as t, column_name as c, data_type as d
    from information_schema.columns where table_schema = 'public' order by 1, 2`,
)

/** @effect/cluster's own tables (runners, messages, replies, its migrations). */
const clusterTables = Effect.flatMap(
  SqlClient.SqlClient,
  (sql) => sql<{ t: string }>`
    select table_name as t from information_schema.tables
    where table_schema = 'public' and table_name like 'cluster\_%'`,
)

/** Back to a database on which the cluster never started. */
const dropClusterTables = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  for (const { t } of yield* clusterTables) yield* sql`drop table ${sql(t)} cascade`
  expect(yield* clusterTables).toEqual([])
})

layer(Live, { timeout: "180 seconds", excludeTestServices: true })("start-up", (it) => {
  it.effect("migrations applied twice change nothing", () =>
    Effect.gen(function* () {
      const before = yield* schemaSnapshot
      expect(before.some((r) => r.t === "journal")).toBe(true)
      const again = yield* PgMigrator.run({ loader: migrationsLoader }).pipe(Effect.provide(NodeContext.layer))
      expect(again).toEqual([])
      expect(yield* schemaSnapshot).toEqual(before)
    }),
  )

  it.effect(
    "first-ever concurrent starts create the cluster's storage tables once (5 rounds of 4 runners' storage)",
    () =>
      Effect.gen(function* () {
        const url = yield* Url
        // Each builder has its own pool, as a separate process would. Without the storage lock one of
        // them fails with 'relation "cluster_runners" already exists' or a duplicate pg_type key.
        const storageOf = (i: number) =>
          Layer.build(
            clusterStorage({ runnerAddress: Option.some(RunnerAddress.make("127.0.0.1", 40_000 + i)) }).pipe(
              Layer.provide(PgClient.layer({ url, maxConnections: 4 })),
            ),
          ).pipe(Effect.scoped)
        for (let round = 0; round < 5; round++) {
          yield* dropClusterTables
          const exits = yield* Effect.all(
            Array.from({ length: 4 }, (_, i) => Effect.exit(storageOf(i))),
            { concurrency: "unbounded" },
          )
          for (const exit of exits) {
            if (Exit.isFailure(exit)) {
              const error = Cause.squash(exit.cause) as { readonly cause?: unknown }
              expect.fail(`round ${round}: ${String(error)} (${String(error.cause)})`)
            }
          }
          expect((yield* clusterTables).map((r) => r.t)).toContain("cluster_runners")
        }
      }),
    120_000,
  )

  it.effect(
    "first-ever concurrent starts on an empty database apply the migrations once (3 rounds of 4 processes' pools)",
    () =>
      Effect.gen(function* () {
        // Without the migrations' advisory lock, PgMigrator's `create table if not exists` of its own table races:
        // one of the starts fails with 'relation "effect_sql_migrations" already exists' or a duplicate key.
        const expected = (yield* migrationsLoader).length
        for (let round = 0; round < 3; round++) {
          const url = yield* testDatabaseUrl
          const exits = yield* Effect.all(
            Array.from({ length: 4 }, () => Effect.exit(Layer.build(databaseLayer(url)).pipe(Effect.scoped))),
            { concurrency: "unbounded" },
          )
          for (const exit of exits) {
            if (Exit.isFailure(exit)) {
              const error = Cause.squash(exit.cause) as { readonly cause?: unknown }
              expect.fail(`round ${round}: ${String(error)} (${String(error.cause)})`)
            }
          }
          const applied = yield* Effect.flatMap(
            SqlClient.SqlClient,
            (sql) => sql<{ n: number }>`select count(*)::int as n from effect_sql_migrations`,
          ).pipe(Effect.provide(PgClient.layer({ url, maxConnections: 1 })))
          expect(applied[0]!.n).toBe(expected)
        }
      }).pipe(Effect.scoped),
    120_000,
  )

  it.effect(
    "two processes started at once on a database without cluster tables both come up, as two runners",
    () =>
      Effect.gen(function* () {
        const url = yield* Url
        const sql = yield* SqlClient.SqlClient
        yield* dropClusterTables
        const ports = yield* freePorts(4)
        const env = (i: number) => ({
          DATABASE_URL: Redacted.value(url),
          PORT: String(ports[i]),
          RUNNER_PORT: String(ports[i + 2]),
        })
        const [a, b] = yield* Effect.all([startService(env(0)), startService(env(1))], { concurrency: 2 })
        for (const port of [ports[0], ports[1]]) {
          const live = yield* rawRequest(`http://127.0.0.1:${port}/health/live`)
          expect(live.status).toBe(200)
          const info = yield* rawRequest(`http://127.0.0.1:${port}/v1/info`)
          expect(info.status).toBe(200)
        }
        const runners = yield* sql<{ address: string }>`select address from cluster_runners`
        expect(runners.map((r) => r.address)).toEqual(
          expect.arrayContaining([`127.0.0.1:${ports[2]}`, `127.0.0.1:${ports[3]}`]),
        )
        const migrations = yield* sql<{ n: string }>`select count(*)::text as n from effect_sql_migrations`
        expect(Number(migrations[0]!.n)).toBeGreaterThan(0)
        const output = a.output() + b.output()
        expect(output).not.toMatch(/already exists|duplicate key/)
        expect(output).not.toMatch(/operator_key|ac0974bec39a17e36ba4a6b4d238ff944bacb478/)
      }).pipe(Effect.scoped),
    180_000,
  )
})
