import { PgClient } from "@effect/sql-pg"
import { Config, Effect, Layer, Option, Redacted, type Scope } from "effect"
import { databaseLayer } from "./Database.ts"
import { startEmbeddedPostgres } from "./EmbeddedPostgres.ts"

/**
 * A throw-away PostgreSQL for tests (each concept's `Test` layer runs on it):
 * - DATABASE_URL set: a fresh database created in that server, dropped afterwards;
 * - TEST_POSTGRES=container: a testcontainers PostgreSQL (needs a Docker engine);
 * - otherwise: an embedded PostgreSQL in a temporary directory; BENCH_STATEMENT_STATS=true loads pg_stat_statements
 *   in it (the benches count statements per unit of work, test/bench/Cost.ts).
 */
export const testDatabaseUrl: Effect.Effect<Redacted.Redacted<string>, never, Scope.Scope> = Effect.gen(function* () {
  const server = yield* Config.option(Config.redacted("DATABASE_URL")).pipe(Effect.orDie)
  if (Option.isSome(server)) return yield* freshDatabaseIn(server.value)
  const mode = yield* Config.string("TEST_POSTGRES").pipe(Config.withDefault("embedded"), Effect.orDie)
  if (mode === "container") return yield* containerDatabase
  const statementStats = yield* Config.boolean("BENCH_STATEMENT_STATS").pipe(Config.withDefault(false), Effect.orDie)
  return yield* startEmbeddedPostgres({ statementStats }).pipe(Effect.orDie)
})

const freshDatabaseIn = (serverUrl: Redacted.Redacted<string>) =>
  Effect.gen(function* () {
    const name = `test_${process.pid}_${Math.floor(performance.now() * 1000)}`
    const admin = PgClient.layer({ url: serverUrl, maxConnections: 1 })
    const run = (statement: string) =>
      Effect.flatMap(PgClient.PgClient, (sql) => sql.unsafe(statement)).pipe(Effect.provide(admin), Effect.orDie)
    yield* Effect.acquireRelease(run(`create database ${name}`), () =>
      run(`drop database if exists ${name} with (force)`).pipe(Effect.ignore),
    )
    const url = new URL(Redacted.value(serverUrl))
    url.pathname = `/${name}`
    return Redacted.make(url.toString())
  })

const containerDatabase = Effect.acquireRelease(
  Effect.promise(async () => {
    const { PostgreSqlContainer } = await import("@testcontainers/postgresql")
    return new PostgreSqlContainer("postgres:17-alpine").start()
  }),
  (container) => Effect.promise(() => container.stop()),
).pipe(Effect.map((c) => Redacted.make(c.getConnectionUri())))

/**
 * A migrated throw-away database for the layer's lifetime. Layers are memoized by reference, so every concept's
 * `Test` layer built in one test shares one database.
 */
export const SqlTest = Layer.unwrapScoped(Effect.map(testDatabaseUrl, databaseLayer))
