import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/** The tables whose rows /metrics counts by state (src/Observability/Collect.ts). */
export type CountedTable = "closes" | "withdrawals"

/** Rows of closes and withdrawals by state: table → state → rows. */
export const stateTotals = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const rows = yield* sql<{ kind: CountedTable; state: string; n: string }>`
    select 'closes' as kind, state, count(*)::text as n from closes group by state
    union all
    select 'withdrawals' as kind, state, count(*)::text as n from withdrawals group by state`
  const totals = new Map<CountedTable, Map<string, number>>([
    ["closes", new Map()],
    ["withdrawals", new Map()],
  ])
  for (const r of rows) totals.get(r.kind)!.set(r.state, Number(r.n))
  return totals
})
