import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { appendJournal } from "../Sql/Journal.ts"

/**
 * The per-venue status row of the chain index (migration 0004, chain_status): what /health and the status page read,
 * the watcher's heads, gas, errors and integrity alarm. Only the venue's watcher writes it (an operator clears an
 * alarm, anyone may ask for a check); the cursor's move with each page is ChainIndex.ts's.
 */
export interface ChainStatusRow {
  readonly venue: string
  readonly chainId: number
  readonly latestBlock: bigint | null
  readonly latestHash: string | null
  readonly safeBlock: bigint | null
  readonly finalizedBlock: bigint | null
  readonly finalizedHash: string | null
  readonly finalizedAt: Date | null
  readonly headSeenAt: Date | null
  readonly checkedAt: Date | null
  readonly indexedBlock: bigint
  readonly indexedHash: string | null
  /** The settlement-v2 index's cursor (escrow_v2_cursor), null before its first page or without escrow_v2. */
  readonly v2IndexedBlock: bigint | null
  readonly error: string
  readonly operator: string | null
  readonly operatorGas: bigint | null
  readonly integrityCheckedAt: Date | null
  readonly integrityCompletedAt: Date | null
  readonly integrityRequestedAt: Date | null
  readonly integrityError: string
  readonly integrityMismatch: boolean
}

interface RawStatus {
  venue: string
  chain_id: string
  latest_block: string | null
  latest_hash: string | null
  safe_block: string | null
  finalized_block: string | null
  finalized_hash: string | null
  finalized_at: Date | null
  head_seen_at: Date | null
  checked_at: Date | null
  indexed_block: string | null
  indexed_hash: string | null
  v2_indexed_block: string | null
  error: string
  operator: string | null
  operator_gas: string | null
  integrity_checked_at: Date | null
  integrity_completed_at: Date | null
  integrity_requested_at: Date | null
  integrity_error: string
  integrity_mismatch: boolean
}

const big = (s: string | null): bigint | null => (s === null ? null : BigInt(s))

const toStatus = (r: RawStatus): ChainStatusRow => ({
  venue: r.venue,
  chainId: Number(r.chain_id),
  latestBlock: big(r.latest_block),
  latestHash: r.latest_hash,
  safeBlock: big(r.safe_block),
  finalizedBlock: big(r.finalized_block),
  finalizedHash: r.finalized_hash,
  finalizedAt: r.finalized_at,
  headSeenAt: r.head_seen_at,
  checkedAt: r.checked_at,
  indexedBlock: BigInt(r.indexed_block ?? "-1"),
  indexedHash: r.indexed_hash,
  v2IndexedBlock: big(r.v2_indexed_block),
  error: r.error,
  operator: r.operator,
  operatorGas: big(r.operator_gas),
  integrityCheckedAt: r.integrity_checked_at,
  integrityCompletedAt: r.integrity_completed_at,
  integrityRequestedAt: r.integrity_requested_at,
  integrityError: r.integrity_error,
  integrityMismatch: r.integrity_mismatch,
})

const STATUS_COLUMNS = `venue, chain_id::text, latest_block::text, latest_hash, safe_block::text,
  finalized_block::text, finalized_hash, finalized_at, head_seen_at, checked_at, indexed_block::text,
  indexed_hash, (select c.indexed_block::text from escrow_v2_cursor c where c.venue = chain_status.venue)
  as v2_indexed_block, error, operator, operator_gas::text, integrity_checked_at, integrity_completed_at,
  integrity_requested_at, integrity_error, integrity_mismatch`

/** Every venue's status row (absent for a venue whose watcher never ran). */
export const chainStatusRows = Effect.flatMap(SqlClient.SqlClient, (sql) =>
  sql<RawStatus>`select ${sql.literal(STATUS_COLUMNS)} from chain_status order by venue`.pipe(
    Effect.map((rows) => rows.map(toStatus)),
  ),
)

export const chainStatus = (venue: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<RawStatus>`select ${sql.literal(STATUS_COLUMNS)} from chain_status where venue = ${venue}`.pipe(
      Effect.map((rows) => (rows[0] ? toStatus(rows[0]) : undefined)),
    ),
  )

/**
 * Creates the venue's row on first start (cursor just below `deploymentBlock`) and returns it. A
 * changed chain id or operator in the config is written over; the cursor is kept.
 */
export const initChainStatus = (venue: string, chainId: number, operator: string, deploymentBlock: number) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<RawStatus>`
      insert into chain_status (venue, chain_id, operator, indexed_block, error)
      values (${venue}, ${chainId}, ${operator.toLowerCase()}, ${deploymentBlock - 1}, 'starting')
      on conflict (venue) do update set chain_id = excluded.chain_id, operator = excluded.operator
      returning ${sql.literal(STATUS_COLUMNS)}`.pipe(Effect.map((rows) => toStatus(rows[0]!))),
  )

export interface HeadsUpdate {
  readonly latest: bigint
  readonly latestHash: string
  readonly safe: bigint
  readonly finalized: bigint
  readonly finalizedHash: string
  readonly finalizedAt: Date
  /** When the watcher first saw this latest block (unchanged while the head is the same). */
  readonly headSeenAt: Date
  readonly checkedAt: Date
  readonly operatorGas: bigint
}

/** A successful poll: heads, gas, and a cleared error. */
export const recordHeads = (venue: string, h: HeadsUpdate) =>
  Effect.flatMap(
    SqlClient.SqlClient,
    (sql) => sql`
      update chain_status set
        latest_block = ${h.latest.toString()}, latest_hash = ${h.latestHash.toLowerCase()},
        safe_block = ${h.safe.toString()}, finalized_block = ${h.finalized.toString()},
        finalized_hash = ${h.finalizedHash.toLowerCase()}, finalized_at = ${h.finalizedAt},
        head_seen_at = ${h.headSeenAt}, checked_at = ${h.checkedAt},
        operator_gas = ${h.operatorGas.toString()}, error = '', updated_at = now()
      where venue = ${venue}`,
  ).pipe(Effect.asVoid)

/** A failed poll: the chain is not ready until a poll succeeds again. */
export const recordChainError = (venue: string, message: string) =>
  Effect.flatMap(
    SqlClient.SqlClient,
    (sql) => sql`update chain_status set error = ${message.slice(0, 500)}, updated_at = now() where venue = ${venue}`,
  ).pipe(Effect.asVoid)

/**
 * Latches the integrity alarm. The first message is kept (the first differing key is what an
 * operator needs); only an operator clears it (`clearIntegrityAlarm`).
 */
export const latchIntegrityAlarm = (venue: string, message: string, at: Date) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql.withTransaction(
      Effect.gen(function* () {
        const rows = yield* sql<{ venue: string }>`
          update chain_status set integrity_mismatch = true, integrity_error = ${message.slice(0, 500)},
            integrity_checked_at = coalesce(integrity_checked_at, ${at}), updated_at = now()
          where venue = ${venue} and not integrity_mismatch
          returning venue`
        if (rows.length > 0) {
          yield* appendJournal({ kind: "chain.integrity_alarm", master: null, payload: { venue, error: message } })
        }
      }),
    ),
  )

/** What clearIntegrityAlarm found: whether the latch was set and the message it held. */
export interface ClearedAlarm {
  readonly wasLatched: boolean
  readonly error: string
}

/**
 * Operator action after investigating an alarm (`npm run ops -- integrity clear <venue>`): clears the latch and asks
 * for a check at the watcher's next poll, which latches again if the index still differs from the chain; the
 * watcher ingests again meanwhile. Undefined: the venue has no status row (its watcher never ran).
 */
export const clearIntegrityAlarm = (venue: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<ClearedAlarm>`
      update chain_status c set integrity_mismatch = false, integrity_error = '', integrity_requested_at = now(),
        updated_at = now()
      from (select venue, integrity_mismatch, integrity_error from chain_status where venue = ${venue} for update) old
      where c.venue = old.venue
      returning old.integrity_mismatch as "wasLatched", old.integrity_error as error`.pipe(
      Effect.map((rows): ClearedAlarm | undefined => rows[0]),
    ),
  )

/**
 * Asks the venue's watcher (wherever it runs) for an integrity check at its next poll (not while an alarm is
 * latched). False: the venue has no status row.
 */
export const requestIntegrityCheck = (venue: string) =>
  Effect.flatMap(
    SqlClient.SqlClient,
    (sql) => sql`update chain_status set integrity_requested_at = now() where venue = ${venue} returning venue`,
  ).pipe(Effect.map((rows) => rows.length > 0))

/**
 * A finished check: completed (no mismatch found) or the differing key, which latches. The request it answered
 * (`requestedBefore`, as the poll read it) is cleared, a later one kept. The stored request has microseconds and the
 * value read back only milliseconds (a JS Date, truncated, and off by one where the driver's float product falls
 * short: .57 s × 1000 = 569.99…): the comparison allows that one millisecond, or a request would never clear and
 * every poll would check again.
 */
export const recordIntegrityCheck = (
  venue: string,
  checkedAt: Date,
  completedAt: Date,
  requestedBefore: Date | null,
  mismatch: string | null,
) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql.withTransaction(
      Effect.gen(function* () {
        yield* sql`
          update chain_status set integrity_checked_at = ${checkedAt}, integrity_completed_at = ${completedAt},
            integrity_requested_at = case
              when integrity_requested_at < ${requestedBefore ?? checkedAt}::timestamptz + interval '1 millisecond'
              then null else integrity_requested_at end,
            updated_at = now()
          where venue = ${venue}`
        if (mismatch !== null) yield* latchIntegrityAlarm(venue, mismatch, checkedAt)
      }),
    ),
  )
