import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * Rows of closes and withdrawals by state, for the /metrics gauges (src/Observability/Collect.ts), at a cost that
 * grows with the states, not the rows (migrations/0037_state_totals.ts). Triggers append each row's change of state
 * to `state_deltas`; `foldStateDeltas` moves them into `state_totals`.
 */

/** The tables counted by state. */
export type CountedTable = "closes" | "withdrawals"

/**
 * Rows by state: table → state → rows. One statement, so one snapshot: a fold commits its deletes and its totals
 * together, so each committed row is counted once, as a delta or in a total. States with no row may be absent or 0.
 */
export const stateTotals = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const rows = yield* sql<{ kind: CountedTable; state: string; n: string }>`
    select kind, state, sum(n)::text as n from (
      select kind, state, n from state_totals
      union all
      select kind, state, delta from state_deltas
    ) t
    group by kind, state`
  const totals = new Map<CountedTable, Map<string, number>>([
    ["closes", new Map()],
    ["withdrawals", new Map()],
  ])
  for (const r of rows) totals.get(r.kind)?.set(r.state, Number(r.n))
  return totals
})

/**
 * Folds the deltas into the totals: one statement, which deletes the deltas it sees and adds them up. Safe to run
 * on every runner at once: a delta is deleted by one fold only (another skips a row it finds deleted), and the
 * totals are updated in (kind, state) order, so two folds wait on each other but never deadlock. Returns how many
 * deltas it folded.
 */
export const foldStateDeltas = Effect.flatMap(SqlClient.SqlClient, (sql) =>
  sql<{ n: number }>`
    with moved as (delete from state_deltas returning kind, state, delta),
    folded as (
      insert into state_totals as t (kind, state, n)
      select kind, state, sum(delta) from moved group by kind, state order by kind, state
      on conflict (kind, state) do update set n = t.n + excluded.n
    )
    select count(*)::int as n from moved`.pipe(Effect.map((rows) => rows[0]?.n ?? 0)),
)
