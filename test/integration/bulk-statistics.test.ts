import { SqlClient } from "@effect/sql"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Layer } from "effect"
import { TOUCHED_TABLES } from "../../src/Escrow/ChainIndex.ts"
import { TOUCHED_TABLES_V2 } from "../../src/Escrow/ChainIndexV2.ts"
import { FIRST_AT, makeBulkStatistics } from "../../src/Sql/BulkStatistics.ts"
import { databaseLayer } from "../../src/Sql/Database.ts"
import { pgClientLayer } from "../../src/Sql/Notifications.ts"
import { testDatabaseUrl } from "../support/Database.ts"

/**
 * src/Sql/BulkStatistics.ts: a venue watcher catching up a backlog grows its index tables much faster than autovacuum
 * analyses them, and the pool's named statements keep a generic plan made while the tables were nearly empty.
 */

/** A migrated throw-away database, then the service's pool on it with one connection (one backend, one plan cache). */
const Migrated = Layer.unwrapScoped(
  Effect.gen(function* () {
    const url = yield* testDatabaseUrl
    yield* Layer.build(databaseLayer(url))
    return pgClientLayer({ url, maxConnections: 1, applicationName: "bulk-statistics-test" })
  }),
)

/** This test's autovacuum must not analyse first (its nap is a minute, a slow machine's test can take that long). */
const noAutovacuum = (tables: ReadonlyArray<string>) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    Effect.forEach(tables, (t) => sql.unsafe(`alter table ${t} set (autovacuum_enabled = false)`), { discard: true }),
  )

const reltuples = (tables: ReadonlyArray<string>) =>
  Effect.flatMap(
    SqlClient.SqlClient,
    (sql) => sql<{ relname: string; reltuples: number }>`
      select relname, reltuples::float8 as reltuples from pg_class where relname = any(${tables}::text[])
      order by relname`,
  )

/** Full-width values, as the watcher writes them: the planner weighs a row's width against an index descent. */
const ADDRESS = `0x${"ab".repeat(20)}`
const HASH = `0x${"cd".repeat(32)}`
/** Orders `from`..`to` of one venue, full width, owners spread over 50 addresses. */
const insertOrders = (from: number, to: number) =>
  Effect.flatMap(
    SqlClient.SqlClient,
    (sql) => sql`
      insert into escrow_orders (venue, order_id, owner, operator, quote_signer, available, locked, created_block,
        block_number, block_hash)
      select 'hyperliquid', '0x' || lpad(to_hex(i), 64, '0'), '0x' || lpad(to_hex(i % 50), 40, '0'), ${ADDRESS},
        ${ADDRESS}, 1000000, 0, i, i, ${HASH}
      from generate_series(${from}::int, ${to}::int) as i`,
  )

const order = (i: number) => `0x${i.toString(16).padStart(64, "0")}`

describe("planner statistics after bulk writes (src/Sql/BulkStatistics.ts)", () => {
  it.scoped("analyses the watchers' tables at the first threshold, then each time the count has doubled", () =>
    Effect.gen(function* () {
      const keyed = [...TOUCHED_TABLES, ...TOUCHED_TABLES_V2]
      const tables = keyed.map((t) => t.table)
      yield* noAutovacuum(tables)
      // Never analysed: reltuples is -1 for every table (a misspelt name would be missing from the answer).
      expect((yield* reltuples(tables)).map((r) => r.reltuples)).toEqual(tables.map(() => -1))
      const statistics = makeBulkStatistics(keyed, 100)
      yield* statistics.added(99)
      expect((yield* reltuples(tables)).every((r) => r.reltuples === -1)).toBe(true)
      yield* statistics.added(1)
      // Every table analysed (empty ones now have 0 rows): the statement names only real tables and columns.
      expect((yield* reltuples(tables)).map((r) => r.reltuples)).toEqual(tables.map(() => 0))

      const sql = yield* SqlClient.SqlClient
      yield* sql`
        insert into escrow_orders (venue, order_id, owner, operator, quote_signer, available, locked, created_block,
          block_number, block_hash)
        select 'hyperliquid', '0x' || lpad(to_hex(i), 64, '0'), '0x0', '0x0', '0x0', 1, 0, 1, 1, '0x0'
        from generate_series(1, ${150}::int) as i`
      const analysed = Effect.map(reltuples(["escrow_orders"]), ([r]) => r!.reltuples)
      // 150 counted: the next ANALYZE waits until the count has doubled since the last one (200).
      yield* statistics.added(50)
      expect(yield* analysed).toBe(0)
      yield* statistics.added(50)
      expect(yield* analysed).toBe(150)
      // Only the columns the page's lookups use: the table's other statistics stay autovacuum's.
      const columns = yield* sql<{ attname: string }>`
        select attname from pg_stats where tablename = 'escrow_orders' order by attname`
      expect(columns.map((c) => c.attname)).toEqual(["order_id", "venue"])
      // A failing ANALYZE (here a table that does not exist) is logged, never the watcher's failure.
      const failing = makeBulkStatistics([{ table: "no_such_table", keys: ["venue"] }], 1)
      expect(Exit.isSuccess(yield* Effect.exit(failing.added(1)))).toBe(true)
    }).pipe(Effect.provide(Migrated)),
  )

  it.scoped("replaces the generic plan a tiny table left for the page's touched-orders lookup", () =>
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      yield* noAutovacuum(TOUCHED_TABLES.map((t) => t.table))
      yield* insertOrders(1, 1_400)
      // The watcher's lookup (src/Escrow/ChainIndex.ts, loadTouched), run as a page runs it while the table is tiny:
      // named on its second use, then planned generically.
      const ids = Array.from({ length: 500 }, (_, i) => order(100_000 + i))
      const lookup = sql`select order_id, owner from escrow_orders
        where venue = ${"hyperliquid"} and order_id = any(${ids}::text[])`
      for (let i = 0; i < 8; i++) yield* lookup
      const [named] = yield* sql<{ name: string }>`
        select name from pg_prepared_statements where statement like '%from escrow_orders%order_id = any%'`
      expect(named).toBeDefined()
      const plan = Effect.map(
        sql.unsafe<{ "QUERY PLAN": string }>(
          `explain (costs off) execute ${named!.name}('hyperliquid', '{${ids.join(",")}}')`,
        ),
        // The plan's nodes only (a custom plan's conditions spell out the 500 ids).
        (rows) => rows.map((r) => r["QUERY PLAN"].slice(0, 120)),
      )
      // A backlog's pages grow the table to thousands of orders of the one venue.
      yield* insertOrders(1_401, 6_000)
      // The trap, as the ingest bench met it: the generic plan reads every row of the venue through the owner index
      // and tests each against the 500 ids one by one (a parameter array is not hashed): rows × ids per page.
      const byParameter = /Filter: .*ANY \(\$2\)/
      expect((yield* plan).join("\n")).toMatch(byParameter)
      yield* makeBulkStatistics(TOUCHED_TABLES).added(FIRST_AT)
      // Invalidated and planned again from the statistics: the ids are index conditions, or a constant array the
      // executor hashes (at this size a sequential scan can be the cheaper), never a parameter tested row by row.
      expect((yield* plan).join("\n")).not.toMatch(byParameter)
    }).pipe(Effect.provide(Migrated)),
  )
})
