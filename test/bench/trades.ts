/**
 * How a page of the trade history grows with the service's history (issue 21 item 2): `GET /v1/trades/history`'s
 * read (src/Trades/Repo.ts tradePage, 50 a page) on one migrated embedded PostgreSQL holding N settled transfers of
 * the past (History.ts seedSettledHistory: all made by one closed order; BENCH_TRADES_SIZES, default 1,000 / 50,000 /
 * 200,000, added between sizes). Three pages per size, each read `BENCH_TRADES_READS` (default 30) times after 10
 * unmeasured: `scope=all`; `scope=mine` for an account with no trades; `scope=mine` for the maker of every trade.
 * p50/p99 wall time and per read the CPU ms of the process tree (this process and PostgreSQL) and the statements.
 * The baseline of each page is the same page at the smallest size, measured first in the same run (already a full
 * page: an empty history answers none, which costs less than building 50 proofs); the ratio is baseline p50 / p50 at
 * the largest size (1 = flat; target ">= 0.5": at most twice the smallest history's time).
 *
 *   BENCH_STATEMENT_STATS=true npx tsx test/bench/trades.ts
 */
import { Effect } from "effect"
import { tradePage } from "../../src/Trades/Repo.ts"
import { TestDatabaseLive } from "../support/Database.ts"
import { costMeter, measureReads, printSweep, sweepSizes } from "./Cost.ts"
import { HISTORY_MAKER, seedSettledHistory } from "./History.ts"
import { historySweep, runBench, summarizeFlat } from "./Summary.ts"

const SIZES = sweepSizes("BENCH_TRADES_SIZES", "1000,50000,200000")
const READS = Number(process.env.BENCH_TRADES_READS ?? 30)
const WARMUP_READS = 10
const LIMIT = 50

const PAGES = [
  { name: "all", master: null },
  { name: "mine, no trades", master: `0x${"ab".repeat(20)}` },
  { name: "mine, maker of all", master: HISTORY_MAKER },
] as const

const program = Effect.gen(function* () {
  const cost = yield* costMeter
  const rows: Array<Record<string, string | number>> = []
  const baselines = new Map<string, number>()
  const last = new Map<string, { size: number; p50: number }>()
  yield* historySweep(
    SIZES,
    "transfers",
    (from, to) => seedSettledHistory(to, { maker: "hyperliquid", taker: "aster" }, from),
    (size) =>
      Effect.gen(function* () {
        for (const page of PAGES) {
          const read = tradePage({ master: page.master, pair: null, after: undefined, limit: LIMIT })
          const m = yield* measureReads(cost, read, READS, WARMUP_READS)
          if (!baselines.has(page.name)) baselines.set(page.name, m.p50)
          last.set(page.name, { size, p50: m.p50 })
          const columns = m.columns(baselines.get(page.name)!, "vs smallest")
          rows.push({ "history transfers": size, page: page.name, ...columns })
        }
      }),
  )
  printSweep(`trade history page (${LIMIT} a page) by settled transfers in history, ${READS} reads`, rows)
  for (const page of PAGES) {
    const baseline = baselines.get(page.name)
    const at = last.get(page.name)
    if (baseline === undefined || at === undefined || at.size === SIZES[0]) continue
    summarizeFlat(
      `trades page (${page.name}) at ${at.size.toLocaleString("en-US")} transfers of history`,
      at.p50,
      baseline,
      `at ${SIZES[0]!.toLocaleString("en-US")}`,
    )
  }
})

runBench(program.pipe(Effect.provide(TestDatabaseLive), Effect.scoped))
