import { SqlClient } from "@effect/sql"
import { Clock, Effect } from "effect"

/**
 * Planner statistics for tables a loop fills in bulk: the venue watchers' index tables while they catch up a
 * chain's backlog (thousands of events a second).
 *
 * Why: the pool runs statements as named prepared statements (PreparedStatements.ts), whose generic plan is made
 * once from the statistics of the moment. A table first read while nearly empty and never analysed has none, so
 * the planner takes `venue = $1` for a selective condition (0.5% of rows, its default) when every row of the table
 * has the same venue. Measured on the ingest bench: the touched-orders lookup
 * (`venue = $1 and order_id = any($2)`) kept a plan that read every row of the venue through the owner index and
 * tested each against the page's 500 ids, 45-50 ms a page at 6,400 rows and growing with the table (quadratic over
 * a backlog), until autovacuum's ANALYZE (its one-minute nap, then 10% growth) invalidated the plan: 0.072 against
 * 0.0024 ms of execution per event indexed. Analysing after a bulk load is PostgreSQL's own advice.
 *
 * So each loop counts the rows it adds and analyses its tables when that count reaches FIRST_AT, then each time it
 * has doubled: a handful of ANALYZEs over any backlog (each samples at most 30,000 rows), none in steady state
 * beyond the doublings. `skip_locked`: a table autovacuum is processing is skipped, not waited for. A failure (say
 * the role does not own the tables) is logged and never stops the loop; autovacuum still analyses in time.
 *
 * Only the columns the loop's reads look rows up by: those lookups' plans are what goes wrong, and the row count
 * (`reltuples`) is refreshed by any ANALYZE. The other columns' statistics stay autovacuum's. Sorting every text
 * column's sample was most of the cost: the v1 tables at 8,000 orders analysed in 35–41 ms, their key columns in
 * 8–14 ms (2026-12-02); the page loop waits for it.
 */

/** Rows added before the first ANALYZE. */
export const FIRST_AT = 1_000

/** A table the loop fills and the columns its reads look rows up by (fixed identifiers from the code). */
export interface KeyedTable {
  readonly table: string
  readonly keys: ReadonlyArray<string>
}

export interface BulkStatistics {
  /** Counts `rows` added to the tables; analyses them when the count reached its next threshold. */
  readonly added: (rows: number) => Effect.Effect<void, never, SqlClient.SqlClient>
}

/** `tables` are fixed identifiers from the code (never input): they are spliced into the statement. */
export const makeBulkStatistics = (tables: ReadonlyArray<KeyedTable>, firstAt = FIRST_AT): BulkStatistics => {
  let total = 0
  let next = firstAt
  const statement = `analyze (skip_locked) ${tables.map((t) => `${t.table} (${t.keys.join(", ")})`).join(", ")}`
  const analyze = (rows: number) =>
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const started = yield* Clock.currentTimeMillis
      yield* sql.unsafe(statement)
      const ms = (yield* Clock.currentTimeMillis) - started
      yield* Effect.logInfo("planner statistics refreshed after bulk writes").pipe(
        Effect.annotateLogs({ tables: tables.map((t) => t.table).join(","), rows_added: rows, duration_ms: ms }),
      )
    }).pipe(
      // The statement's failure only (an interruption of the watcher stays one).
      Effect.catchAll((error) =>
        Effect.logWarning("ANALYZE after bulk writes failed; autovacuum will refresh the statistics", error),
      ),
    )
  return {
    added: (rows) =>
      Effect.suspend(() => {
        total += rows
        if (total < next) return Effect.void
        next = total * 2
        return analyze(total)
      }),
  }
}
