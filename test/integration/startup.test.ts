import { NodeContext } from "@effect/platform-node"
import { SqlClient } from "@effect/sql"
import { PgMigrator } from "@effect/sql-pg"
import { expect, layer } from "@effect/vitest"
import { Context, Effect, Layer, Redacted } from "effect"
import { freePort } from "../../src/FreePort.ts"
import { databaseLayer, migrationsLoader } from "../../src/Store/Database.ts"
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
    "two processes started at once on one database both come up, as two runners",
    () =>
      Effect.gen(function* () {
        const url = yield* Url
        const ports = yield* Effect.all([freePort, freePort, freePort, freePort])
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
        const sql = yield* SqlClient.SqlClient
        const runners = yield* sql<{ address: string }>`select address from cluster_runners`
        expect(runners.length).toBeGreaterThanOrEqual(2)
        const migrations = yield* sql<{ n: string }>`select count(*)::text as n from effect_sql_migrations`
        expect(Number(migrations[0]!.n)).toBeGreaterThan(0)
        expect(a.output() + b.output()).not.toMatch(/operator_key|ac0974bec39a17e36ba4a6b4d238ff944bacb478/)
      }).pipe(Effect.scoped),
    180_000,
  )
})
