import { Clock, Duration, Effect } from "effect"
import type { Address, Hex, PublicClient } from "viem"
import { decodeV2Logs, type IndexedEventV2, paymentClaimedEvent, revealsOf } from "../src/Chain/EscrowLogsV2.ts"
import { retryRpc, rpc } from "../src/Chain/RpcError.ts"
import type { VenueConfig } from "../src/Config.ts"
import { ingestV2Page, initV2Cursor, TOUCHED_TABLES_V2 } from "../src/Escrow/ChainIndexV2.ts"
import { recordSeenReveals } from "../src/Escrow/SeenReveals.ts"
import { escrowIndexedNotification, notifyEscrowIndexed } from "../src/Settlement/IndexedWake.ts"
import { makeBulkStatistics } from "../src/Sql/BulkStatistics.ts"

/** Spent ingesting v2 pages per poll (the next poll continues). */
const INGEST_BUDGET = Duration.seconds(5)

/** The page's Fill digests (lowercase, once each) when every event names one (locks, payments); else undefined. */
export const fillsNamed = (events: ReadonlyArray<IndexedEventV2>): ReadonlyArray<string> | undefined => {
  const digests = new Set<string>()
  for (const e of events) {
    const digest = (e.decoded.args as { readonly fillDigest?: unknown }).fillDigest
    if (typeof digest !== "string") return undefined
    digests.add(digest.toLowerCase())
  }
  return [...digests]
}

/**
 * The VenueWatcher's v2 part (settlement v2: SettlementEscrowV2 beside v1): from its own cursor (so a v2 escrow added
 * to the config later is indexed from its deployment block), up to the finalized head the watcher just read, in
 * pages of the watcher's size, one transaction per page (src/Escrow/ChainIndexV2.ts). Undefined when the venue
 * configures no `escrow_v2`. An RPC failure fails the poll like the v1 ingest's. A page with events wakes the
 * settlement entities of the takes it touched (an escrow_indexed notification sent in the page's transaction; each
 * runner wakes the takes on its shards).
 *
 * Beside the pages, the blocks above the finalized head (at most a page) are scanned for makers' reveals
 * (`PaymentClaimed`): their secrets are stored at once (src/Escrow/SeenReveals.ts) and their takes woken, so the
 * claim on the maker chain goes out when the reveal is mined, not two or more blocks later when it is final
 * (DESIGN §10: the secret is public once mined and stays the hashlock's preimage whatever happens to its block). The
 * scan only brings the claim forward: when it fails, the poll goes on and the index delivers the secret at
 * finality, as before.
 */
export const makeEscrowV2Ingest = (venue: VenueConfig, client: PublicClient) => {
  const v2 = venue.escrow_v2
  if (v2 === undefined) return undefined
  const escrow = v2.address.toLowerCase() as Address
  let pageBlocks = BigInt(venue.watcher.page_blocks)
  const blockHash = (n: bigint) =>
    rpc("eth_getBlockByNumber", () => client.getBlock({ blockNumber: n })).pipe(
      Effect.map((b) => b.hash as Hex | null),
      retryRpc,
    )
  /** Failed reveal scans in a row: the first and every 20th are logged (a node that refuses it must not flood). */
  let scanFailures = 0
  const scanReveals = (finalized: bigint, latest: bigint) =>
    Effect.gen(function* () {
      if (latest <= finalized) return
      const from = latest - finalized > pageBlocks ? latest - pageBlocks + 1n : finalized + 1n
      const logs = yield* rpc("eth_getLogs", () =>
        client.getLogs({ address: escrow, event: paymentClaimedEvent, fromBlock: from, toBlock: latest }),
      ).pipe(retryRpc)
      const fresh = yield* recordSeenReveals(venue.id, revealsOf(decodeV2Logs(logs, escrow)))
      if (fresh.length > 0) yield* notifyEscrowIndexed(venue.id, fresh)
      scanFailures = 0
    }).pipe(
      Effect.catchAll((e) =>
        ++scanFailures === 1 || scanFailures % 20 === 0
          ? Effect.logWarning(
              "reveal scan above the finalized head failed; the index delivers the secret at finality",
            ).pipe(Effect.annotateLogs({ venue: venue.id, failures: scanFailures, error: e.message }))
          : Effect.void,
      ),
    )
  /**
   * The cursor as this watcher last read or moved it: read from the table once, then kept, so a poll spends no
   * statement on it. Dropped on any failure, so the next poll reads the table again: a page from a stale cursor
   * (another runner's watcher moved it during a hand-over) fails its guard with CursorMoved and writes nothing.
   */
  let known: bigint | undefined
  /** A backlog's pages grow the index tables faster than autovacuum refreshes their statistics. */
  const statistics = makeBulkStatistics(TOUCHED_TABLES_V2)
  const pages = (finalized: { readonly number: bigint; readonly hash: Hex }) =>
    Effect.gen(function* () {
      if (known === undefined) known = (yield* initV2Cursor(venue.id, escrow, v2.deployment_block))?.indexedBlock
      if (known === undefined) return
      const started = yield* Clock.currentTimeMillis
      let at = known
      while (at < finalized.number) {
        if ((yield* Clock.currentTimeMillis) - started > Duration.toMillis(INGEST_BUDGET)) break
        const from = at + 1n
        const to = from + pageBlocks - 1n < finalized.number ? from + pageBlocks - 1n : finalized.number
        const logs = yield* rpc("eth_getLogs", () =>
          client.getLogs({ address: escrow, fromBlock: from, toBlock: to }),
        ).pipe(retryRpc, Effect.either)
        if (logs._tag === "Left") {
          if (logs.left.rangeTooLarge && pageBlocks > 1n) {
            pageBlocks = pageBlocks / 2n
            continue
          }
          return yield* Effect.fail(logs.left)
        }
        const toHash = to === finalized.number ? finalized.hash : yield* blockHash(to)
        if (toHash === null) return yield* Effect.die(new Error(`block ${to} not found`))
        const events = decodeV2Logs(logs.right, escrow)
        // In the page's transaction (delivered at its commit): the takes' settlement entities act on a final v2
        // step at once rather than at their fallback beat; only the takes of the fills it names when every event
        // names one. A held payment authorisation re-reads its locks on it (Settlement.nextIndexed).
        const notify = events.length > 0 ? [escrowIndexedNotification(venue.id, fillsNamed(events))] : []
        yield* ingestV2Page({ venue: venue.id, fromBlock: from, toBlock: to, toHash, events, notify })
        at = to
        known = to
        yield* statistics.added(events.length)
      }
    }).pipe(Effect.tapErrorCause(() => Effect.sync(() => (known = undefined))))
  /**
   * The final pages and, beside them, the reveal scan above the finalized head (independent: other blocks, another
   * table); the scan never fails, and a page's failure is the poll's once both ended.
   */
  return (finalized: { readonly number: bigint; readonly hash: Hex }, latest?: bigint) =>
    Effect.flatMap(
      Effect.all([pages(finalized), latest === undefined ? Effect.void : scanReveals(finalized.number, latest)], {
        concurrency: 2,
        mode: "either",
      }),
      ([paged]) => Effect.asVoid(paged),
    )
}
