/**
 * What a /metrics scrape's count of closes and withdrawals by state costs as those tables grow (issue 21 item 2).
 * Every runner's collector reads it on each scrape (src/Observability/Collect.ts → src/Sql/StateTotals.ts), and both
 * tables only grow: every close and withdrawal a user ever made stays.
 *
 * One migrated embedded PostgreSQL and a history of N closes and N withdrawals (BENCH_METRICS_SIZES, default 0 /
 * 100,000 / 1,000,000 each; ended ones, as a long-running service keeps them, and a few open), added between sizes
 * in one INSERT per table through the tables' own triggers, their deltas folded as the janitor does (and the folded
 * deltas vacuumed, as autovacuum does: migrations/0037), then ANALYZEd. Per size: `BENCH_METRICS_READS` (default
 * 40) reads after 10 unmeasured; p50/p99 wall time, and per read the CPU ms of the process tree (this process and
 * PostgreSQL) and the statements. Baseline: the same read on the empty tables, first in the same run; the ratio is
 * baseline p50 / p50 at the largest size (1 = flat; target >= 0.5).
 *
 *   BENCH_STATEMENT_STATS=true npx tsx test/bench/metrics.ts
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { foldStateDeltas, stateTotals } from "../../src/Sql/StateTotals.ts"
import { TestDatabaseLive } from "../support/Database.ts"
import { costMeter, measureReads, printSweep, sweepSizes } from "./Cost.ts"
import { insertSeries } from "./History.ts"
import { historySweep, runBench, summarizeFlat } from "./Summary.ts"

const SIZES = sweepSizes("BENCH_METRICS_SIZES", "0,100000,1000000")
const READS = Number(process.env.BENCH_METRICS_READS ?? 40)
const WARMUP_READS = 10

/** Closes and withdrawals `from` … `to - 1`: nearly all ended, one in a thousand still open. */
const addHistory = (from: number, to: number) =>
  Effect.gen(function* () {
    if (to <= from) return
    yield* insertSeries("closes", from, to, {
      id: "gen_random_uuid()",
      kind: "'managed'",
      escrow: "'0x' || repeat('e', 40)",
      owner: "'0x' || repeat('0', 40)",
      order_id: "'0x' || lpad(to_hex(g), 64, '0')",
      relay_key: "'history-' || g",
      state: "case when g % 1000 = 0 then 'expired' when g % 50 = 0 then 'reverted' else 'final' end",
    })
    yield* insertSeries("withdrawals", from, to, {
      id: "gen_random_uuid()",
      address: "'0x' || lpad(to_hex(g), 40, '0')",
      destination: "'0x' || lpad(to_hex(g), 40, '0')",
      target: "'wallet'",
      amount: "1",
      state: "case when g % 1000 = 0 then 'unknown' when g % 50 = 0 then 'failed' else 'relayed' end",
    })
    // The janitor folds the rows' deltas within minutes (src/Cluster/RunnerStatus.ts); a read between folds also
    // sums the deltas since the last one.
    yield* foldStateDeltas
    const sql = yield* SqlClient.SqlClient
    yield* sql.unsafe("vacuum state_deltas")
    yield* sql.unsafe("analyze closes; analyze withdrawals")
  })

const program = Effect.gen(function* () {
  const cost = yield* costMeter
  const rows: Array<Record<string, string | number>> = []
  let baseline: number | undefined
  let last: { size: number; p50: number } | undefined
  yield* historySweep(SIZES, "of each", addHistory, (size) =>
    Effect.gen(function* () {
      const totals = yield* stateTotals
      const counted = (table: "closes" | "withdrawals") => [...totals.get(table)!.values()].reduce((a, b) => a + b, 0)
      if (counted("closes") !== size || counted("withdrawals") !== size)
        return yield* Effect.dieMessage(`counted ${counted("closes")} / ${counted("withdrawals")}, expected ${size}`)
      const m = yield* measureReads(cost, stateTotals, READS, WARMUP_READS)
      baseline ??= m.p50
      last = { size, p50: m.p50 }
      rows.push({ "closes + withdrawals": `${size} + ${size}`, ...m.columns(baseline, "vs empty") })
    }),
  )
  printSweep(`/metrics: closes and withdrawals by state, by rows in each table, ${READS} reads`, rows)
  if (baseline !== undefined && last !== undefined && last.size > SIZES[0]!) {
    summarizeFlat(
      `metrics state counts at ${last.size.toLocaleString("en-US")} closes + withdrawals`,
      last.p50,
      baseline,
      "empty tables",
    )
  }
})

runBench(program.pipe(Effect.provide(TestDatabaseLive), Effect.scoped))
