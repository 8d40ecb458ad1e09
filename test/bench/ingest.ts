/**
 * Escrow event ingest as a size sweep (issue 21 item 2): the VenueWatcher (getLogs + page-end hash, decode, one
 * transaction per page with the events, the folded state rows, the journal summary and the cursor) vs a raw loop
 * over the same blocks with the same page size (eth_getLogs + one multi-row INSERT of the raw logs), in the same
 * run against the same anvil and PostgreSQL. For each size: events/s of each, the ratio (target >= 0.7), and per
 * indexed event the CPU ms of the process tree (this process, anvil, PostgreSQL) and the statements
 * (test/bench/Cost.ts; statements need BENCH_STATEMENT_STATS=true, which run.ts sets). Only the indexing is timed.
 *
 * Sizes run in order on one chain and one database: each size's events are made in new blocks
 * (test/bench/IngestEvents.ts), then both loops index just those blocks, the watcher continuing from its cursor,
 * so the tables hold the earlier sizes' rows too. Making events is mostly anvil: it copies its whole state for each
 * block, so the making time grows faster than the events (2026-11-30, load ~1: 1.7 s for 1k, 22 s for 10k, 25 min
 * for the next 100k), untimed, before the timed parts (the log prints each size's making time).
 *
 * BENCH_INGEST_SIZES ("1000,10000,100000") events; BENCH_PER_BLOCK (50) transactions a block; pages are
 * BENCH_PAGE_BLOCKS (10) blocks. A size whose watcher does not reach the last block within 300 s fails.
 */
import { SqlClient } from "@effect/sql"
import { Effect, Layer } from "effect"
import type { Address } from "viem"
import { makeVenueWatcher } from "../../actors/VenueWatcher.ts"
import { ChainClients } from "../../src/Chain/ChainClients.ts"
import { FaultPoint } from "../../src/Chain/FaultPoint.ts"
import { AppConfig } from "../../src/Config.ts"
import { TracingLive } from "../../src/Observability/Tracing.ts"
import { startTestChain, type TestChain, venueEntry } from "../support/ChainDevnet.ts"
import { TestDatabaseLive } from "../support/Database.ts"
import { testAppConfig } from "../support/TestConfig.ts"
import { costMeter, printSweep } from "./Cost.ts"
import { makeEvents } from "./IngestEvents.ts"
import { benchLogging } from "./Logging.ts"
import { summarize, whole } from "./Summary.ts"

const SIZES = (process.env.BENCH_INGEST_SIZES ?? "1000,10000,100000").split(",").map((s) => Number(s.trim()))
const PER_BLOCK = Number(process.env.BENCH_PER_BLOCK ?? 50)
const PAGE_BLOCKS = Number(process.env.BENCH_PAGE_BLOCKS ?? 10)
const DEADLINE_SECONDS = 300

/** Per-event costs are small: three significant digits. */
const small = (x: number | null) => (x === null ? "n/a" : x.toPrecision(3))

const program = (c: TestChain) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const cost = yield* costMeter
    const { deployment } = yield* AppConfig
    const venue = deployment.venues[0]
    const clients = yield* ChainClients
    const client = clients.chain(venue.id)!
    yield* sql`create table bench_raw_logs (block_number bigint, log_index int, block_hash varchar(66),
      tx_hash varchar(66), address varchar(42), topics text[], data text, primary key (block_number, log_index))`
    // The watcher's first integrity check is marked done: this measures ingest.
    yield* sql`insert into chain_status (venue, chain_id, indexed_block, integrity_completed_at)
      values (${venue.id}, ${venue.chain_id}, ${venue.deployment_block - 1}, now())`
    const { handle } = yield* makeVenueWatcher(venue)
    const countEvents = Effect.map(sql<{ n: string }>`select count(*)::text as n from escrow_events`, (rows) =>
      Number(rows[0]!.n),
    )

    const table: Array<Record<string, string | number>> = []
    let last: { size: number; ours: number; base: number } | undefined
    let from = BigInt(venue.deployment_block)
    for (const size of SIZES) {
      const t0 = performance.now()
      yield* Effect.promise(() => makeEvents(c, size, PER_BLOCK))
      const finalized = (yield* Effect.promise(() => c.pub.getBlock({ blockTag: "finalized" }))).number
      console.log(
        `${size} events: made in ${((performance.now() - t0) / 1000).toFixed(1)} s, blocks ${from}..${finalized}`,
      )

      // Baseline: eth_getLogs + INSERT per page, nothing else.
      const baseBefore = yield* cost.snapshot
      const baseStart = performance.now()
      let baseEvents = 0
      for (let lo = from; lo <= finalized; lo += BigInt(PAGE_BLOCKS)) {
        const hi = lo + BigInt(PAGE_BLOCKS) - 1n < finalized ? lo + BigInt(PAGE_BLOCKS) - 1n : finalized
        const logs = yield* Effect.promise(() =>
          client.getLogs({
            address: [venue.escrow as Address, venue.legacy_escrow as Address],
            fromBlock: lo,
            toBlock: hi,
          }),
        )
        baseEvents += logs.length
        for (let i = 0; i < logs.length; i += 1000) {
          yield* sql`insert into bench_raw_logs ${sql.insert(
            logs.slice(i, i + 1000).map((l) => ({
              block_number: String(l.blockNumber),
              log_index: l.logIndex,
              block_hash: l.blockHash,
              tx_hash: l.transactionHash,
              address: l.address.toLowerCase(),
              topics: l.topics,
              data: l.data,
            })),
          )}`
        }
      }
      const baseSeconds = (performance.now() - baseStart) / 1000
      // Every event made is in the chain's logs (none reverted, none lost to the chain's pruned history).
      if (baseEvents < size) {
        return yield* Effect.die(new Error(`${size} events made, the chain's logs hold ${baseEvents} of them`))
      }
      const basePer = yield* cost.perUnit(baseBefore, baseEvents)

      // The watcher over the same blocks, from its cursor.
      const eventsBefore = yield* countEvents
      const oursBefore = yield* cost.snapshot
      const oursStart = performance.now()
      // Bounded: a watcher that stops advancing ends the bench with an error instead of hanging.
      const deadline = oursStart + DEADLINE_SECONDS * 1000
      for (;;) {
        yield* handle.poll
        const [row] = yield* sql<{ b: string }>`select indexed_block::text as b from chain_status`
        if (BigInt(row!.b) >= finalized) break
        if (performance.now() > deadline) {
          return yield* Effect.die(new Error(`${size} events: the watcher reached block ${row!.b} of ${finalized}`))
        }
      }
      const oursSeconds = (performance.now() - oursStart) / 1000
      const oursEvents = (yield* countEvents) - eventsBefore
      const oursPer = yield* cost.perUnit(oursBefore, oursEvents)
      if (oursEvents !== baseEvents) {
        return yield* Effect.die(new Error(`indexed ${oursEvents} events, the raw loop saw ${baseEvents}`))
      }
      const blocks = Number(finalized - from + 1n)
      from = finalized + 1n

      const base = baseEvents / baseSeconds
      const ours = oursEvents / oursSeconds
      last = { size: oursEvents, ours, base }
      table.push({
        events: oursEvents,
        blocks,
        "watcher events/s": whole(ours),
        "raw events/s": whole(base),
        "ratio (>= 0.7)": ours / base,
        "watcher CPU ms/event": small(oursPer.cpuMs),
        "raw CPU ms/event": small(basePer.cpuMs),
        "watcher statements/event": small(oursPer.statements),
        "raw statements/event": small(basePer.statements),
      })
    }
    printSweep(
      `escrow ingest: VenueWatcher vs raw eth_getLogs + INSERT, pages of ${PAGE_BLOCKS} blocks, ${PER_BLOCK} tx/block; ` +
        "costs per indexed event",
      table,
    )
    if (last !== undefined) {
      summarize({
        bench: `ingest: ${last.size} escrow events`,
        figure: `${whole(last.ours)} events/s`,
        baseline: `raw getLogs + INSERT ${whole(last.base)} events/s`,
        ratio: last.ours / last.base,
        target: ">= 0.7",
        atLeast: 0.7,
      })
    }
  })

const main = async () => {
  // anvil keeps every block's state and spills the older ones to disk, each a JSON dump of the whole state: at 100k
  // events ~20 MB a block by the end, 50 GB and 30 min of making over 2,000 blocks (measured 2026-11-30). The watcher
  // and the raw loop read logs, blocks and the latest state, never an old block's: keep 64 states, spill none.
  const c = await startTestChain({ slotsInAnEpoch: 1, extraArgs: ["--prune-history", "64"] })
  try {
    await c.test.setAutomine(false)
    const config = {
      venues: [
        venueEntry(c, "hyperliquid", { watcher: { page_blocks: PAGE_BLOCKS, integrity_interval_seconds: 3600 } }),
      ],
    }
    await Effect.runPromise(
      program(c).pipe(
        Effect.provide(
          Layer.mergeAll(ChainClients.Live, FaultPoint.Noop).pipe(
            Layer.provideMerge(TestDatabaseLive),
            Layer.provideMerge(testAppConfig(config)),
          ),
        ),
        Effect.scoped,
        // As main.ts: the JSON log (to a file here) and no OTLP endpoint, Effect's tracer off (outermost: inherited).
        Effect.provide(Layer.merge(benchLogging("ingest").layer, TracingLive)),
      ),
    )
  } finally {
    await c.anvil.stop()
  }
}

main().then(
  () => process.exit(0),
  (e) => {
    console.error(e)
    process.exit(1)
  },
)
