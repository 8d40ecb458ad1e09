/**
 * How the take's candidates read grows with the service's history (issue 21 item 2). Every v2 take reads its
 * candidates twice under the maker order's row lock (src/Takes/QuoteCandidatesV2.ts: the locking read, then the
 * fresh one), so what that read costs is time every other take on the order waits. Its held hashlock indexes were
 * once counted over every fill ever made (93c9066 counts them per set); this bench keeps that from coming back.
 *
 * One migrated embedded PostgreSQL, one funded v2 order with one live quote set of 64 hashlocks, and a history of N
 * settled fills of the order's earlier sets (BENCH_CANDIDATES_SIZES, default 0 / 50,000 / 200,000), added between
 * sizes in one INSERT each and then ANALYZEd (as autovacuum would). Per size: `BENCH_CANDIDATES_READS` (default 40)
 * reads as a take makes them (a transaction: locking read + fresh read), after 10 unmeasured, one after another;
 * p50/p99 wall time, and per read the CPU ms of the process tree (this process and PostgreSQL) and the statements.
 * The baseline is the same read on the empty history, measured first in the same run; the ratio is baseline p50 /
 * p50 at the largest size (1 = flat; the row's target, ">= 0.5", is at most twice the empty history's time).
 *
 * Columns the read does not look at are filled by placeholders of their types (History.ts `placeholderRow`).
 *
 *   BENCH_STATEMENT_STATS=true npx tsx test/bench/candidates.ts
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { loadQuoteCandidatesV2 } from "../../src/Takes/QuoteCandidatesV2.ts"
import { TestDatabaseLive } from "../support/Database.ts"
import { costMeter, measureReads, printSweep, sweepSizes } from "./Cost.ts"
import { insertRow, insertSeries } from "./History.ts"
import { historySweep, runBench, summarizeFlat } from "./Summary.ts"

const SIZES = sweepSizes("BENCH_CANDIDATES_SIZES", "0,50000,200000")
const READS = Number(process.env.BENCH_CANDIDATES_READS ?? 40)
const WARMUP_READS = 10
/** Hashlocks of a set: history fill g belongs to set g / HASHLOCKS at index g % HASHLOCKS. */
const HASHLOCKS = 64
/** The live set's sequence: above every history set's. */
const LIVE_SEQUENCE = 1_000_000_000

const ORDER = `0x${"ab".repeat(32)}`
const OWNER = `0x${"cd".repeat(20)}`
const ESCROW = `0x${"ef".repeat(20)}`
const FROM = { id: "aster", chainId: 42161, token: ESCROW }
const MAKER_VENUE = "hyperliquid"

/** The order, its identity, its escrow row and its live set; returns a take the history's fills belong to. */
const seed = Effect.gen(function* () {
  const identity = crypto.randomUUID()
  const take = crypto.randomUUID()
  const quote = { venue: FROM.id, chain_id: String(FROM.chainId), token: ESCROW, escrow: ESCROW, recipient: OWNER }
  const quotes = JSON.stringify([{ ...quote, supply: "1000", receive: "1000", min_fill: "1" }])
  yield* insertRow("accounts", { master: `'${OWNER}'`, access: "'granted'" })
  yield* insertRow("quote_identities", {
    id: `'${identity}'`,
    master: `'${OWNER}'`,
    signer: `'${OWNER}'`,
    kind: "'browser'",
    generation: "1",
    cancel_epoch: "0",
    lease_expires_at: "now() + interval '1 hour'",
  })
  yield* insertRow("orders", {
    id: `'${ORDER}'`,
    state: "'funded'",
    escrow_version: "2",
    venue: `'${MAKER_VENUE}'`,
    owner_address: `'${OWNER}'`,
    quote_identity_id: `'${identity}'`,
  })
  yield* insertRow("escrow_v2_orders", {
    venue: `'${MAKER_VENUE}'`,
    owner: `'${OWNER}'`,
    order_id: `'${ORDER}'`,
    available: "1000000000",
    close_requested: "false",
  })
  yield* insertRow("quote_sets", {
    order_id: `'${ORDER}'`,
    sequence: String(LIVE_SEQUENCE),
    active: "true",
    quote_identity_id: `'${identity}'`,
    identity_generation: "1",
    cancel_epoch: "0",
    quotes: `'${quotes}'`,
    quote_size: "1000000",
    valid_until: "now() + interval '1 hour'",
    hashlock_count: String(HASHLOCKS),
    hashlock_root: "'0x00'",
    issued_at: "0",
  })
  yield* insertRow("takes", { id: `'${take}'`, pay_deadline: "now()", to_sign: "'[]'" })
  return { identity, take }
})

/** Settled fills `from` … `to - 1` of the order's earlier sets (what a long-running maker leaves behind). */
const addHistory = (seeded: { identity: string; take: string }, from: number, to: number) =>
  Effect.gen(function* () {
    if (to <= from) return
    yield* insertSeries("fills", from, to, {
      id: "gen_random_uuid()",
      take_id: `'${seeded.take}'`,
      order_id: `'${ORDER}'`,
      state: "'settled'",
      final: "true",
      fill_key: "'k' || g",
      sequence: `g / ${HASHLOCKS}`,
      hashlock_index: `g % ${HASHLOCKS}`,
      fill_digest: "'d' || g",
      quote_identity_id: `'${seeded.identity}'`,
    })
    yield* Effect.flatMap(SqlClient.SqlClient, (sql) => sql.unsafe("analyze fills"))
  })

const program = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const cost = yield* costMeter
  const seeded = yield* seed
  const query = { from: FROM, to: MAKER_VENUE, takerEscrow: ESCROW, lockCutoffSeconds: 60, forUpdate: true }
  // As a take reads them: both statements inside its transaction.
  const read = sql.withTransaction(loadQuoteCandidatesV2(query))
  const first = yield* read
  if (first.length !== 1) return yield* Effect.dieMessage(`expected the live set's one quote, read ${first.length}`)

  const rows: Array<Record<string, string | number>> = []
  let baseline: number | undefined
  let last: { size: number; p50: number } | undefined
  yield* historySweep(
    SIZES,
    "fills",
    (from, to) => addHistory(seeded, from, to),
    (size) =>
      Effect.gen(function* () {
        const m = yield* measureReads(cost, read, READS, WARMUP_READS)
        baseline ??= m.p50
        last = { size, p50: m.p50 }
        rows.push({ "history fills": size, ...m.columns(baseline, "vs empty") })
      }),
  )
  printSweep(`take candidates read (locked + fresh, one transaction) by settled fills in history, ${READS} reads`, rows)
  if (baseline !== undefined && last !== undefined && last.size > SIZES[0]!) {
    summarizeFlat(
      `candidates read at ${last.size.toLocaleString("en-US")} fills of history`,
      last.p50,
      baseline,
      "empty history",
    )
  }
})

runBench(program.pipe(Effect.provide(TestDatabaseLive), Effect.scoped))
