import { SqlClient } from "@effect/sql"
import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Exit, Layer } from "effect"
import { pgClientLayer } from "../../src/Sql/Notifications.ts"
import { makeStatementNames } from "../../src/Sql/PreparedStatements.ts"
import { testDatabaseUrl } from "../support/Database.ts"

/** The service's pool on a throw-away database, with one connection, so every statement meets the same backend. */
const OneConnection = Layer.unwrapScoped(
  Effect.map(testDatabaseUrl, (url) => pgClientLayer({ url, maxConnections: 1, applicationName: "prepared-test" })),
)

/** The pool with one connection closed after `idleTimeout` idle (the service's: POOL_IDLE_TIMEOUT). */
const idlingAfter = (idleTimeout: Duration.Duration) =>
  Layer.unwrapScoped(
    Effect.map(testDatabaseUrl, (url) =>
      pgClientLayer({ url, maxConnections: 1, idleTimeout, applicationName: "prepared-test" }),
    ),
  )

/** Whether two statements 600 ms apart met the same backend. */
const sameBackendAfterIdle = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const pid = Effect.map(sql<{ pid: number }>`select pg_backend_pid() as pid`, (rows) => rows[0]!.pid)
  const first = yield* pid
  yield* Effect.sleep("600 millis")
  return (yield* pid) === first
})

const prepared = Effect.flatMap(
  SqlClient.SqlClient,
  (sql) => sql<{ name: string; statement: string }>`select name, statement from pg_prepared_statements`,
)

describe("named prepared statements (src/Sql/PreparedStatements.ts)", () => {
  it("names a text on its second use, never reuses a name, stops at the cap and after a refusal", () => {
    const names = makeStatementNames(2)
    expect(names.nameOf("a")).toBeUndefined()
    expect(names.nameOf("a")).toBe("s0")
    expect(names.nameOf("a")).toBe("s0")
    expect([names.nameOf("b"), names.nameOf("b")]).toEqual([undefined, "s1"])
    // The cap: a third text stays unnamed however often it runs.
    expect([names.nameOf("c"), names.nameOf("c"), names.nameOf("c")]).toEqual([undefined, undefined, undefined])
    names.refuse("a")
    expect([names.nameOf("a"), names.nameOf("a")]).toEqual([undefined, undefined])
    // A name freed by a refusal is not given to another text: pg would refuse it on a connection that parsed it.
    expect([names.nameOf("c"), names.nameOf("c")]).toEqual([undefined, "s2"])
  })

  it.scoped("a parameterised statement is prepared once per connection; one without parameters is not", () =>
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const one = (n: number) => sql<{ x: number }>`select ${n}::int + 1 as x`
      expect((yield* one(1))[0]!.x).toBe(2)
      expect(yield* prepared).toEqual([])
      expect((yield* one(2))[0]!.x).toBe(3)
      expect((yield* one(3))[0]!.x).toBe(4)
      const statements = yield* prepared
      expect(statements).toHaveLength(1)
      expect(statements[0]!.statement).toContain("select $1::int + 1 as x")
      // Several statements in one text (as migrations send) keep the simple protocol.
      for (let i = 0; i < 3; i++) yield* sql.unsafe("create temporary table if not exists t1 (a int); select 1")
      expect(yield* prepared).toHaveLength(1)
    }).pipe(Effect.provide(OneConnection)),
  )

  // A connection carries its backend's caches and its statements' plans: closed idle, the next burst starts cold.
  it.live("an idle connection stays open for the pool's idleTimeout, and is closed after it", () =>
    Effect.gen(function* () {
      expect(yield* sameBackendAfterIdle.pipe(Effect.provide(idlingAfter(Duration.minutes(1))))).toBe(true)
      expect(yield* sameBackendAfterIdle.pipe(Effect.provide(idlingAfter(Duration.millis(100))))).toBe(false)
    }),
  )

  it.scoped("a result type changed under a prepared statement fails that call once, then runs unnamed", () =>
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      yield* sql`create table changing (a int)`
      yield* sql`insert into changing values (1)`
      const read = sql<Record<string, number | null>>`select * from changing where a = ${1}`
      yield* read
      expect(yield* read).toEqual([{ a: 1 }])
      yield* sql`alter table changing add column b int`
      const failed = yield* Effect.exit(read)
      expect(Exit.isFailure(failed)).toBe(true)
      expect(yield* read).toEqual([{ a: 1, b: null }])
      expect(yield* read).toEqual([{ a: 1, b: null }])
    }).pipe(Effect.provide(OneConnection)),
  )
})
