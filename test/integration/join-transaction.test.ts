/**
 * joinTransaction (src/Sql/Transaction.ts): alone it is a transaction of its own; inside a caller's transaction it
 * is part of that one, with no savepoint of its own, so a failure inside it fails the whole transaction (a caller
 * that caught it could not go on). Settlement v2's fill steps rely on both.
 */
import { SqlClient } from "@effect/sql"
import { expect, it } from "@effect/vitest"
import { Cause, Effect, Exit, Option } from "effect"
import { SqlTest } from "../../src/Sql/TestDatabase.ts"
import { joinTransaction } from "../../src/Sql/Transaction.ts"

const rowsOf = (tag: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    Effect.map(sql<{ n: number }>`select count(*)::int as n from join_tx_probe where tag = ${tag}`, ([r]) => r!.n),
  )

/** Inserts a row, then fails: a transaction must keep neither. */
const insertThenFail = (tag: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql`insert into join_tx_probe (tag) values (${tag})`.pipe(
      Effect.zipRight(sql`select 1 / 0`),
      Effect.zipRight(Effect.void),
    ),
  )

it.layer(SqlTest, { timeout: "120 seconds" })("joinTransaction", (it) => {
  it.effect("alone: its own transaction, all or nothing", () =>
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      yield* sql`create table if not exists join_tx_probe (tag text not null)`
      const failed = yield* Effect.exit(joinTransaction(insertThenFail("alone")))
      expect(Exit.isFailure(failed)).toBe(true)
      expect(yield* rowsOf("alone")).toBe(0)
      yield* joinTransaction(sql`insert into join_tx_probe (tag) values ('alone-ok')`)
      expect(yield* rowsOf("alone-ok")).toBe(1)
    }),
  )

  it.effect("inside a transaction: the caller's, with no savepoint of its own", () =>
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      yield* sql`create table if not exists join_tx_probe (tag text not null)`
      const outcome = yield* Effect.exit(
        sql.withTransaction(
          Effect.gen(function* () {
            const outer = yield* sql<{ pid: number }>`select pg_backend_pid() as pid`
            const inner = yield* joinTransaction(sql<{ pid: number }>`select pg_backend_pid() as pid`)
            expect(inner[0]!.pid).toBe(outer[0]!.pid)
            // Caught, the failure leaves the caller's transaction aborted: no savepoint rolled it back alone.
            yield* Effect.either(joinTransaction(insertThenFail("inside")))
            yield* sql`insert into join_tx_probe (tag) values ('after')`
          }),
        ),
      )
      // 25P02 in_failed_sql_transaction: "current transaction is aborted, commands ignored until end of block".
      const failure = Exit.isFailure(outcome) ? Cause.failureOption(outcome.cause) : Option.none()
      expect(Option.map(failure, (e) => (e.cause as { code?: string }).code)).toEqual(Option.some("25P02"))
      expect(yield* rowsOf("inside")).toBe(0)
      expect(yield* rowsOf("after")).toBe(0)
    }),
  )
})
