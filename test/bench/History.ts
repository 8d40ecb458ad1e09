/**
 * A service's history for the benches: rows a long-running service has accumulated, written straight into its
 * tables so that a bench can measure what its hot statements cost once those tables are large (issue 21 item 2).
 * Only the columns a bench cares about are given; every other required column gets a placeholder of its type
 * (`placeholderRow`), so a new NOT NULL column does not break the benches.
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { PUBLISHER_LOCK } from "../../src/Sql/Journal.ts"

/** The master whose closed order made every fill of seedSettledHistory (the maker of all of them). */
export const HISTORY_MAKER = `0x${"0e".repeat(20)}`
const HISTORY_MAKER_SQL = `'${HISTORY_MAKER}'`

/** A SQL literal of `type` that no bench reads. */
const placeholder = (type: string, i: number): string => {
  if (type === "uuid") return "gen_random_uuid()"
  if (type === "boolean") return "false"
  if (/int|numeric/.test(type)) return "0"
  if (type.startsWith("timestamp")) return "now()"
  if (type.startsWith("json")) return "'{}'"
  if (type === "bytea") return "'\\x00'"
  return `'placeholder-${i}'`
}

/** A row of `table`: `given` (SQL expressions by column) and placeholders for its other required columns. */
export const placeholderRow = (table: string, given: Record<string, string>) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const required = yield* sql<{ column_name: string; data_type: string }>`
      select column_name, data_type from information_schema.columns
      where table_schema = current_schema() and table_name = ${table} and is_nullable = 'NO' and column_default is null
      order by ordinal_position`
    const row = Object.fromEntries(required.map((c, i) => [c.column_name, placeholder(c.data_type, i)]))
    return { ...row, ...given }
  })

/** One row of `table` (placeholderRow). */
export const insertRow = (table: string, given: Record<string, string>) =>
  Effect.flatMap(placeholderRow(table, given), (row) =>
    Effect.flatMap(SqlClient.SqlClient, (sql) =>
      sql.unsafe(`insert into ${table} (${Object.keys(row).join(", ")}) values (${Object.values(row).join(", ")})`),
    ),
  )

/** Rows `g` = from … to − 1 of `table` in one statement; `given`'s expressions may use `g`. */
export const insertSeries = (table: string, from: number, to: number, given: Record<string, string>) =>
  Effect.gen(function* () {
    if (to <= from) return
    const sql = yield* SqlClient.SqlClient
    const row = yield* placeholderRow(table, given)
    yield* sql.unsafe(
      `insert into ${table} (${Object.keys(row).join(", ")})
       select ${Object.values(row).join(", ")} from generate_series(${from}, ${to - 1}) g`,
    )
  })

/**
 * Settled v2 transfers `from` … `n` − 1 of the past between `maker` and `taker` venues, each as the service leaves
 * one behind: its take and fill (settled, final; fills of one closed order's sets, 64 to a set), the v2 index's
 * claimed lock and payment, the relayer's three requests (lock, payTake, claim; final) and the take's five journal
 * rows (published, their cursors assigned under the publisher's lock). Then ANALYZE, as autovacuum would.
 */
export const seedSettledHistory = (
  n: number,
  venues: { readonly maker: string; readonly taker: string },
  /** Transfers already written by an earlier call (the next ones follow them). */
  from = 0,
) =>
  Effect.gen(function* () {
    if (n <= from) return
    const sql = yield* SqlClient.SqlClient
    const order = `'0x${"0e".repeat(32)}'`
    if (from === 0) {
      yield* insertRow("accounts", { master: HISTORY_MAKER_SQL, access: "'granted'" })
      yield* insertRow("orders", {
        id: order,
        master: HISTORY_MAKER_SQL,
        owner_address: HISTORY_MAKER_SQL,
        venue: `'${venues.maker}'`,
        state: "'closed'",
        escrow_version: "2",
      })
    }
    const digest = "'0x' || lpad(to_hex(g), 64, '0')"
    yield* insertSeries("takes", from, n, {
      id: "('00000000-0000-4000-8000-' || lpad(to_hex(g), 12, '0'))::uuid",
      client_take_id: "'history-' || g",
      from_venue: `'${venues.taker}'`,
      to_venue: `'${venues.maker}'`,
      state: "'settled'",
      escrow_version: "2",
      pay_deadline: "now() - interval '1 day'",
      to_sign: "'[]'",
    })
    yield* insertSeries("fills", from, n, {
      take_id: "('00000000-0000-4000-8000-' || lpad(to_hex(g), 12, '0'))::uuid",
      order_id: order,
      taker_venue: `'${venues.taker}'`,
      maker_venue: `'${venues.maker}'`,
      state: "'settled'",
      final: "true",
      settled_at: "now() - interval '1 day' + g * interval '1 millisecond'",
      fill_key: "'history-' || g",
      sequence: "g / 64",
      hashlock_index: "g % 64",
      fill_digest: digest,
    })
    yield* insertSeries("escrow_v2_locks", from, n, {
      venue: `'${venues.maker}'`,
      fill_digest: digest,
      state: "'claimed'",
      order_id: order,
    })
    yield* insertSeries("escrow_v2_payments", from, n, {
      venue: `'${venues.taker}'`,
      fill_digest: digest,
      state: "'claimed'",
    })
    yield* insertSeries("relayer_requests", 3 * from, 3 * n, {
      idempotency_key: "'history-' || g",
      venue: `case g % 3 when 1 then '${venues.taker}' else '${venues.maker}' end`,
      status: "'final'",
    })
    yield* sql.withTransaction(
      Effect.gen(function* () {
        yield* sql`select pg_advisory_xact_lock(${PUBLISHER_LOCK})`
        const [top] = yield* sql<{ c: string }>`select coalesce(max(cursor), 0)::text as c from journal`
        yield* insertSeries("journal", 5 * from, 5 * n, {
          kind: "'take.history'",
          cursor: `${top!.c} + 1 + g - ${5 * from}`,
          published_at: "now()",
        })
      }),
    )
    yield* sql.unsafe("analyze")
  })
