import type { SqlClient } from "@effect/sql"
import { Clock, Duration, Effect, Either, Fiber, Layer } from "effect"
import type { Address, Hex } from "viem"
import { ChainClients } from "../src/Chain/ChainClients.ts"
import { decodeLogs, type IndexedEvent } from "../src/Chain/EscrowLogs.ts"
import { FaultPoint } from "../src/Chain/FaultPoint.ts"
import { awaitNewHead } from "../src/Chain/HeadWake.ts"
import { firstMismatch } from "../src/Chain/Integrity.ts"
import { RpcError, retryRpc, rpc } from "../src/Chain/RpcError.ts"
import { passLoop } from "../src/Cluster/PassLoop.ts"
import { supervisedSingleton } from "../src/Cluster/Supervision.ts"
import { AppConfig, type VenueConfig } from "../src/Config.ts"
import { ingestPage, loadIndexState, recordedBlocks, TOUCHED_TABLES } from "../src/Escrow/ChainIndex.ts"
import {
  type ChainStatusRow,
  chainStatus,
  initChainStatus,
  latchIntegrityAlarm,
  recordChainError,
  recordHeads,
  recordIntegrityCheck,
} from "../src/Escrow/ChainStatus.ts"
import { bump, watcherFaults, watcherReorgs } from "../src/Observability/Metrics.ts"
import { escrowIndexedNotification } from "../src/Settlement/IndexedWake.ts"
import { makeBulkStatistics } from "../src/Sql/BulkStatistics.ts"
import { makeEscrowV2Ingest } from "./EscrowV2Ingest.ts"
import {
  blockHashAt,
  ChainMismatch,
  type Heads,
  isTerminalOrMismatch,
  READ_CONCURRENCY,
  readChainSnapshot,
  readHeads,
} from "./VenueWatcherChain.ts"

/**
 * VenueWatcher: one cluster singleton per venue chain. Each poll it reads `latest`, `safe` and
 * `finalized`, checks that blocks it already took as final still have the same hash (if not, it
 * latches the integrity alarm and stops ingesting: history is never rewritten), ingests the
 * escrow's (and legacy escrow's) events up to the finalized head in bounded pages from its
 * persisted cursor, reads the operator's gas, writes the status row /health reads, and runs the
 * integrity check when due or requested. RPC failures are classified and retried with backoff; a
 * failing chain is reported in its status row (not ready), never a crash. Anything that ends the body
 * (a defect outside a poll, a failed start) is restarted by its supervisor (src/Cluster/Supervision.ts).
 */

/** Spent ingesting per poll before the status row is refreshed (the next poll continues). */
const INGEST_BUDGET = Duration.seconds(5)
/** Recorded block hashes re-checked by each integrity check. */
const RECHECK_BLOCKS = 64

type Fetched = readonly [Either.Either<ReadonlyArray<IndexedEvent>, RpcError>, Either.Either<Hex | null, RpcError>]

export interface WatcherHandle {
  /** One poll (heads, finality check, ingest, status, integrity when due); for tests and benches. */
  readonly poll: Effect.Effect<void, unknown, SqlClient.SqlClient>
}

/** Builds the watcher of one venue: its state lives in the database, so any runner may run it. */
export const makeVenueWatcher = (venue: VenueConfig) =>
  Effect.gen(function* () {
    const { operator } = yield* AppConfig
    const clients = yield* ChainClients
    const fault = yield* FaultPoint
    const client = clients.chain(venue.id)
    if (client === undefined) return yield* Effect.die(new Error(`no chain client for venue ${venue.id}`))
    const settings = venue.watcher
    // Settlement v2: the venue's SettlementEscrowV2 (when configured) is indexed from its own cursor.
    const ingestV2 = makeEscrowV2Ingest(venue, client)
    const contracts = [venue.escrow, ...(venue.legacy_escrow ? [venue.legacy_escrow] : [])].map(
      (a) => a.toLowerCase() as Address,
    )
    let chainIdChecked = false
    let pageBlocks = BigInt(settings.page_blocks)
    let lastHead: { hash: string; seenAt: number } | undefined
    /** A backlog's pages grow the index tables faster than autovacuum refreshes their statistics. */
    const statistics = makeBulkStatistics(TOUCHED_TABLES)

    const nowDate = Effect.map(Clock.currentTimeMillis, (ms) => new Date(ms))

    /** A hash we took as final changed: latch, never rewrite. */
    const checkFinality = (row: ChainStatusRow, heads: Heads) =>
      Effect.gen(function* () {
        const checks: Array<{ n: bigint; hash: string; what: string }> = []
        if (row.finalizedBlock !== null && row.finalizedHash !== null) {
          checks.push({ n: row.finalizedBlock, hash: row.finalizedHash, what: "finalized block" })
        }
        if (row.indexedHash !== null && row.indexedBlock !== row.finalizedBlock) {
          checks.push({ n: row.indexedBlock, hash: row.indexedHash, what: "indexed block" })
        }
        for (const c of checks) {
          if (c.n > heads.latest.number) {
            return `${c.what} ${c.n} is above the chain's head ${heads.latest.number} (chain rewound below finality)`
          }
          const now =
            c.n === heads.finalized.number
              ? heads.finalized.hash
              : c.n === heads.latest.number
                ? heads.latest.hash
                : yield* blockHashAt(client, c.n)
          if (now === null) return `${c.what} ${c.n} no longer exists on chain`
          if (now.toLowerCase() !== c.hash.toLowerCase()) {
            return `finality violated: ${c.what} ${c.n} hash changed from ${c.hash} to ${now.toLowerCase()}`
          }
        }
        return null
      })

    /**
     * One page's logs, decoded, and its end block's hash, in one round trip (one JSON-RPC batch). Prefetched, the
     * decoding runs while the previous page's statements are in PostgreSQL.
     */
    const fetchPage = (from: bigint, to: bigint, heads: Heads) =>
      Effect.all(
        [
          rpc("eth_getLogs", () => client.getLogs({ address: contracts, fromBlock: from, toBlock: to })).pipe(
            retryRpc,
            Effect.map((logs) => decodeLogs(logs, contracts)),
            Effect.either,
          ),
          to === heads.finalized.number
            ? Effect.succeed(Either.right<Hex | null>(heads.finalized.hash))
            : Effect.either(blockHashAt(client, to)),
        ],
        { concurrency: 2 },
      )

    /**
     * Ingests pages from the cursor up to the finalized head (at most INGEST_BUDGET of work). The
     * next page is fetched while the current one is written; the fetch fibers live in this call's
     * scope, so a failure or interruption midway leaves none running.
     */
    const ingestUpTo = (row: ChainStatusRow, heads: Heads) =>
      Effect.gen(function* () {
        const target = heads.finalized.number
        const started = yield* Clock.currentTimeMillis
        let cursor = row.indexedBlock
        let prefetched: { from: bigint; to: bigint; fiber: Fiber.RuntimeFiber<Fetched> } | undefined
        const rangeOf = (from: bigint) => ({
          from,
          to: from + pageBlocks - 1n < target ? from + pageBlocks - 1n : target,
        })
        while (cursor < target) {
          if ((yield* Clock.currentTimeMillis) - started > Duration.toMillis(INGEST_BUDGET)) break
          const { from, to } = rangeOf(cursor + 1n)
          const fiber =
            prefetched !== undefined && prefetched.from === from && prefetched.to === to
              ? prefetched.fiber
              : yield* Effect.forkScoped(fetchPage(from, to, heads))
          if (prefetched !== undefined && prefetched.fiber !== fiber) yield* Fiber.interrupt(prefetched.fiber)
          prefetched = undefined
          const [decoded, endHash] = yield* Fiber.join(fiber)
          if (decoded._tag === "Left") {
            if (decoded.left.rangeTooLarge && pageBlocks > 1n) {
              pageBlocks = pageBlocks / 2n
              continue
            }
            return yield* Effect.fail(decoded.left)
          }
          if (to < target) {
            const next = rangeOf(to + 1n)
            prefetched = { ...next, fiber: yield* Effect.forkScoped(fetchPage(next.from, next.to, heads)) }
          }
          const toHash = yield* endHash
          if (toHash === null) return yield* Effect.fail(new ChainMismatch(`block ${to} not found`))
          const events = decoded.right
          // The settlement's wake-up goes with the page's journal row, in its transaction (one round trip fewer).
          const notify = [escrowIndexedNotification(venue.id)]
          yield* ingestPage({
            venue: venue.id,
            chainId: venue.chain_id,
            fromBlock: from,
            toBlock: to,
            toHash,
            events,
            notify,
          })
          yield* fault.hit("watcher.after-ingest-before-status")
          cursor = to
          yield* statistics.added(events.length)
        }
        if (prefetched !== undefined) yield* Fiber.interrupt(prefetched.fiber)
        return cursor
      }).pipe(Effect.scoped)

    const integrityCheck = (row: ChainStatusRow, cursor: bigint) =>
      Effect.gen(function* () {
        const checkedAt = yield* nowDate
        // Recorded hashes of indexed blocks first: a deep reorg shows here before in balances.
        const recorded = yield* recordedBlocks(venue.id, RECHECK_BLOCKS)
        const hashes = yield* Effect.forEach(recorded, (b) => blockHashAt(client, b.number), {
          concurrency: READ_CONCURRENCY,
        })
        let mismatch: string | null = null
        for (const [i, b] of recorded.entries()) {
          const now = hashes[i]
          if (now?.toLowerCase() !== b.hash) {
            mismatch = `finality violated: indexed block ${b.number} hash changed from ${b.hash} to ${now ?? "none"}`
            break
          }
        }
        if (mismatch === null && cursor >= BigInt(venue.deployment_block)) {
          const indexed = yield* loadIndexState(venue.id)
          const snapshot = yield* readChainSnapshot(client, venue, indexed, cursor)
          mismatch = firstMismatch(indexed, snapshot)
        }
        yield* recordIntegrityCheck(venue.id, checkedAt, yield* nowDate, row.integrityRequestedAt, mismatch)
        if (mismatch !== null) {
          bump(watcherFaults, [
            ["venue", venue.id],
            ["kind", "integrity_mismatch"],
          ])
          yield* Effect.logError("integrity mismatch").pipe(Effect.annotateLogs({ venue: venue.id, mismatch }))
        }
      })

    let initialized = false
    let lastLatest: { readonly number: bigint; readonly hash: string } | undefined
    const poll = Effect.gen(function* () {
      if (!initialized) {
        yield* initChainStatus(venue.id, venue.chain_id, operator, venue.deployment_block)
        initialized = true
      }
      if (!chainIdChecked) {
        const id = yield* rpc("eth_chainId", () => client.getChainId()).pipe(retryRpc)
        if (id !== venue.chain_id) {
          return yield* Effect.fail(
            new RpcError({
              method: "eth_chainId",
              message: `the node serves chain ${id}, the config says ${venue.chain_id}`,
              retryable: false,
              rangeTooLarge: false,
            }),
          )
        }
        chainIdChecked = true
      }
      // Three independent reads in one round trip (the two RPCs share a JSON-RPC batch): a poll's wall time is the
      // index's lag behind the chain. All finish; a failure is reported in this order, as when they ran in turn.
      const [headsRead, gasRead, rowRead] = yield* Effect.all(
        [
          readHeads(client, settings.confirmations),
          rpc("eth_getBalance", () => client.getBalance({ address: operator as Address })).pipe(retryRpc),
          chainStatus(venue.id),
        ],
        { concurrency: "unbounded", mode: "either" },
      )
      const heads = yield* headsRead
      const gas = yield* gasRead
      const row = yield* rowRead
      if (row === undefined) return yield* Effect.die(new Error(`chain_status row of ${venue.id} vanished`))
      let latched = row.integrityMismatch
      if (!latched) {
        const violation = yield* checkFinality(row, heads)
        if (violation !== null) {
          yield* latchIntegrityAlarm(venue.id, violation, yield* nowDate)
          bump(watcherFaults, [
            ["venue", venue.id],
            ["kind", "finality_violated"],
          ])
          yield* Effect.logError("finality violated; ingestion stopped").pipe(
            Effect.annotateLogs({ venue: venue.id, violation }),
          )
          latched = true
        }
      }
      // Never ingest on top of a latched alarm: the index stays as it was for the investigation. The v1 and v2
      // indexes have their own cursors, tables and transactions, so they ingest side by side: a v2 step's finality
      // does not wait for the v1 page. Both run to their end; a failure is reported v1 first, as when they ran in turn.
      const [v1, v2] = yield* Effect.all(
        [
          latched || heads.finalized.number <= row.indexedBlock
            ? Effect.succeed(row.indexedBlock)
            : ingestUpTo(row, heads),
          latched || ingestV2 === undefined ? Effect.void : ingestV2(heads.finalized, heads.latest.number),
        ],
        { concurrency: 2, mode: "either" },
      )
      const cursor = yield* v1
      yield* v2
      const now = yield* Clock.currentTimeMillis
      if (lastHead === undefined) {
        lastHead =
          row.latestHash !== null && row.headSeenAt !== null
            ? { hash: row.latestHash, seenAt: row.headSeenAt.getTime() }
            : { hash: heads.latest.hash.toLowerCase(), seenAt: now }
      }
      if (lastHead.hash !== heads.latest.hash.toLowerCase())
        lastHead = { hash: heads.latest.hash.toLowerCase(), seenAt: now }
      // A head that went back, or changed at the same height: the unfinalized tip was reorganised.
      if (
        lastLatest !== undefined &&
        (heads.latest.number < lastLatest.number ||
          (heads.latest.number === lastLatest.number && heads.latest.hash.toLowerCase() !== lastLatest.hash))
      ) {
        bump(watcherReorgs, [["venue", venue.id]])
        yield* Effect.logWarning("chain head reorganised").pipe(
          Effect.annotateLogs({
            venue: venue.id,
            chain_id: venue.chain_id,
            from_block: lastLatest.number.toString(),
            from_hash: lastLatest.hash,
            to_block: heads.latest.number.toString(),
            to_hash: heads.latest.hash.toLowerCase(),
            finalized_block: heads.finalized.number.toString(),
          }),
        )
      }
      lastLatest = { number: heads.latest.number, hash: heads.latest.hash.toLowerCase() }
      yield* recordHeads(venue.id, {
        latest: heads.latest.number,
        latestHash: heads.latest.hash,
        safe: heads.safe,
        finalized: heads.finalized.number,
        finalizedHash: heads.finalized.hash,
        finalizedAt: new Date(Number(heads.finalized.timestamp) * 1000),
        headSeenAt: new Date(lastHead.seenAt),
        checkedAt: new Date(now),
        operatorGas: gas,
      })
      const due =
        row.integrityRequestedAt !== null ||
        row.integrityCompletedAt === null ||
        now - row.integrityCompletedAt.getTime() >= settings.integrity_interval_seconds * 1000
      if (due && !latched && cursor >= heads.finalized.number) yield* integrityCheck(row, cursor)
    })

    const handle: WatcherHandle = { poll }

    /** Polls forever; failures are written to the status row and retried with capped, jittered backoff. */
    const run = passLoop({
      // Outside the poll's own retry: a defect here is the supervisor's (src/Cluster/Supervision.ts) to restart.
      before: fault.hit("watcher.before-poll"),
      pass: poll,
      // The next poll on the next block (a finality-gated step waits for it), at the latest after poll_ms.
      next: () => awaitNewHead(client, lastLatest?.number, settings.head_poll_ms, settings.poll_ms),
      baseMs: settings.poll_ms,
      terminal: isTerminalOrMismatch,
      failureLog: "venue watcher poll failed",
      onFailure: (message) =>
        recordChainError(venue.id, message).pipe(
          Effect.ignore,
          Effect.zipRight(
            Effect.sync(() =>
              bump(watcherFaults, [
                ["venue", venue.id],
                ["kind", "poll_failed"],
              ]),
            ),
          ),
        ),
    })

    return { handle, run }
  })

/** The watcher's body; it ends only by failing (its supervisor restarts it) or by interruption. */
export const runVenueWatcher = (venue: VenueConfig) =>
  makeVenueWatcher(venue).pipe(
    Effect.flatMap(({ run }) => run),
    Effect.annotateLogs({ actor: "VenueWatcher", venue: venue.id }),
  )

/** One supervised watcher singleton per configured venue chain. */
export const VenueWatchersLive = Layer.unwrapEffect(
  Effect.map(AppConfig, ({ deployment }) => {
    const layers = deployment.venues.map((v) => supervisedSingleton(`venue-watcher:${v.id}`, runVenueWatcher(v)))
    return Layer.mergeAll(layers[0] ?? Layer.empty, ...layers.slice(1))
  }),
)
