/**
 * What a quote identity's fade record costs as its fills grow (issue 21 item 2). It is read on the identity's view,
 * once per identity of a list, and on every fade (src/Settlement/FadeRecord.ts), and a window without a flag never
 * resets, so an identity's chances only grow.
 *
 * One migrated embedded PostgreSQL, one identity and a history of N chances (BENCH_FADES_SIZES, default 0 / 100,000 /
 * 1,000,000; one in fifty faded), added between sizes in one INSERT per kind through the marks' trigger, the deltas
 * folded as the janitor does (and vacuumed), then ANALYZEd. Per size: `BENCH_FADES_READS` (default 40) reads after 10
 * unmeasured, of the record (totals) and of the same counts over the marks (the read before migration 0038); p50/p99,
 * CPU ms of the process tree (this process and PostgreSQL) and statements a read. Baseline: the record on the empty
 * history, first in the same run; the ratio is baseline p50 / p50 at the largest size (1 = flat; target >= 0.5).
 *
 *   BENCH_STATEMENT_STATS=true npx tsx test/bench/fades.ts
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { identityFades } from "../../src/Settlement/FadeRecord.ts"
import { foldFadeDeltas } from "../../src/Sql/FadeTotals.ts"
import { TestDatabaseLive } from "../support/Database.ts"
import { fadesOverMarks } from "../support/FadeCounts.ts"
import { costMeter, measureReads, printSweep, sweepSizes } from "./Cost.ts"
import { insertRow, insertSeries } from "./History.ts"
import { historySweep, runBench, summarizeFlat } from "./Summary.ts"

const SIZES = sweepSizes("BENCH_FADES_SIZES", "0,100000,1000000")
const READS = Number(process.env.BENCH_FADES_READS ?? 40)
const IDENTITY = "00000000-0000-4000-8000-00000000fade"
const MASTER = `'0x${"0f".repeat(20)}'`

/** Chances `from` … `to - 1` of the identity, one in fifty faded. */
const addChances = (from: number, to: number) =>
  Effect.gen(function* () {
    if (to <= from) return
    const fill = "('00000000-0000-4000-8000-' || lpad(to_hex(g), 12, '0'))::uuid"
    const mark = { identity_id: `'${IDENTITY}'::uuid`, master: MASTER, fill_id: fill }
    yield* insertSeries("settlement_v2_marks", from, to, { ...mark, kind: "'chance'" })
    const sql = yield* SqlClient.SqlClient
    yield* sql.unsafe(`
      insert into settlement_v2_marks (fill_id, kind, identity_id, master)
      select ${fill}, 'fade', '${IDENTITY}'::uuid, ${MASTER} from generate_series(${from}, ${to - 1}) g where g % 50 = 0`)
    yield* foldFadeDeltas
    yield* sql.unsafe("vacuum fade_deltas")
    yield* sql.unsafe("analyze settlement_v2_marks")
  })

const program = Effect.gen(function* () {
  const cost = yield* costMeter
  yield* insertRow("accounts", { master: MASTER, access: "'granted'" })
  yield* insertRow("quote_identities", {
    id: `'${IDENTITY}'::uuid`,
    master: MASTER,
    signer: MASTER,
    kind: "'credential'",
  })
  const rows: Array<Record<string, string | number>> = []
  let baseline: number | undefined
  let last: { size: number; p50: number } | undefined
  yield* historySweep(SIZES, "chances", addChances, (size) =>
    Effect.gen(function* () {
      const record = yield* identityFades(IDENTITY)
      if (record?.chances !== size) return yield* Effect.dieMessage(`counted ${record?.chances}, expected ${size}`)
      const totals = yield* measureReads(cost, identityFades(IDENTITY), READS)
      baseline ??= totals.p50
      last = { size, p50: totals.p50 }
      rows.push({ chances: size, read: "totals", ...totals.columns(baseline, "vs empty") })
      const marks = yield* measureReads(cost, fadesOverMarks(IDENTITY), READS)
      rows.push({ chances: size, read: "over the marks (before)", ...marks.columns(baseline, "vs empty") })
    }),
  )
  printSweep(`a quote identity's fade record, by its chances, ${READS} reads`, rows)
  if (baseline !== undefined && last !== undefined && last.size > SIZES[0]!) {
    summarizeFlat(`fade record at ${last.size.toLocaleString("en-US")} chances`, last.p50, baseline, "no chances")
  }
})

runBench(program.pipe(Effect.provide(TestDatabaseLive), Effect.scoped))
