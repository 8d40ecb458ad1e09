import { SqlClient, type SqlError, type Statement } from "@effect/sql"
import { Data, Effect } from "effect"
import type { Hex } from "viem"
import { applyEvents, emptyState, type IndexState, type TouchedKeys, touchedKeys } from "../Chain/EscrowIndex.ts"
import { type IndexedEvent, jsonSafeText } from "../Chain/EscrowLogs.ts"
import type { KeyedTable } from "../Sql/BulkStatistics.ts"
import { journalNotify, journalRowsInsert, type Notification } from "../Sql/Journal.ts"
import {
  BALANCE_COLS,
  fillState,
  LEGACY_COLS,
  LOCK_COLS,
  ORDER_COLS,
  PAYMENT_COLS,
  type RawBalance,
  type RawLegacy,
  type RawLock,
  type RawOrder,
  type RawPayment,
} from "./ChainIndexRows.ts"

/**
 * SQL of the chain index (migration 0004): the ingest of one block page in one transaction (with the cursor's
 * move on the venue's status row) and the reads of the integrity check. Only the venue's watcher writes; anyone may
 * read. The status row's other writes and reads: ChainStatus.ts.
 */

/** Another writer moved the cursor first (a singleton hand-over overlapped): the page is dropped. */
export class CursorMoved extends Data.TaggedError("CursorMoved")<{
  readonly venue: string
  readonly expected: bigint
  readonly actual: bigint | null
}> {}

// ------------------------------------------------------------------ ingest

export interface IngestPage {
  readonly venue: string
  readonly chainId: number
  readonly fromBlock: bigint
  readonly toBlock: bigint
  /** Hash of `toBlock`: the cursor's hash, re-checked at every poll. */
  readonly toHash: Hex
  readonly events: ReadonlyArray<IndexedEvent>
  /** Sent with the page's journal row when it has events (delivered at commit, like the row). */
  readonly notify?: ReadonlyArray<Notification>
}

/**
 * Indexes one page in one statement, so in one transaction of its own: the cursor row must still be `fromBlock - 1`
 * (so a page is applied exactly once even if two watchers overlap during a hand-over), the blocks and events are
 * inserted, the rows the events touch are written back folded, and one journal row summarises a page that held
 * events, its wake-ups sent with it. The cursor moves to `toBlock`.
 *
 * The fold's rows are read before the statement, outside any transaction. They are the rows the page applies to
 * whenever its guard holds: only the venue's watcher writes these tables, always in a statement that also moves
 * the cursor forward, so had any of them changed since the read, the cursor would no longer be `fromBlock - 1` and
 * the statement would write nothing. Two round trips a page with events (read, statement), one for an empty page;
 * it was five in a transaction (BEGIN, move, read, writes, COMMIT).
 */
export const ingestPage = (
  page: IngestPage,
): Effect.Effect<number, CursorMoved | SqlError.SqlError, SqlClient.SqlClient> =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    Effect.gen(function* () {
      const { venue, events } = page
      const toHash = page.toHash.toLowerCase()
      // The blocks the page records: each event's, and its end (the cursor's hash, re-checked at every poll).
      const blocks = new Map<string, string>()
      for (const e of events) blocks.set(e.blockNumber.toString(), e.blockHash.toLowerCase())
      blocks.set(page.toBlock.toString(), toHash)
      const guard = sql`exists (select from moved)`
      const writes = events.length === 0 ? [] : yield* foldedWrites(sql, page, guard)
      // Moving the cursor both checks it (still fromBlock - 1) and locks the row until commit; every other write of
      // the statement is guarded by it. A second writer blocks on the row, then finds the cursor moved and changes
      // nothing. A data-modifying CTE runs once and to completion whether or not the query reads it; no two touch
      // one table, and these tables have no triggers or foreign keys between them. The args travel as one JSON array
      // (a text[] of JSON would be escaped element by element).
      const none = sql.literal("")
      const ctes = writes.map((w, i) => sql`, ${sql.literal(`w${i}`)} as (${w})`)
      const journal =
        events.length === 0 ? none : sql`, appended as (${journalRowsInsert(sql, [pageSummary(page)], guard)})`
      // The wake-ups go out with the journal row (NOTIFY is delivered at commit), only for a page that moved.
      const wake =
        events.length === 0
          ? none
          : sql`, (select count(*) from (${journalNotify(sql, page.notify ?? [])}
              where exists (select 1 from appended)) as n) as notified`
      const moved = yield* sql<{ venue: string }>`
        with moved as (
          update chain_status set indexed_block = ${page.toBlock.toString()}, indexed_hash = ${toHash},
            updated_at = now()
          where venue = ${venue} and indexed_block = ${(page.fromBlock - 1n).toString()}
          returning venue
        ), recorded as (
          insert into chain_blocks (venue, block_number, block_hash)
          select ${venue}, * from unnest(${[...blocks.keys()]}::bigint[], ${[...blocks.values()]}::text[])
          where ${guard}
          on conflict do nothing
        ), inserted as (
          insert into escrow_events (venue, block_number, log_index, block_hash, tx_hash, contract, event, args)
          select ${venue}, b, l, bh, th, c, e, a from rows from (
            unnest(${events.map((e) => e.blockNumber.toString())}::bigint[]), unnest(${events.map((e) => e.logIndex)}::int[]),
            unnest(${events.map((e) => e.blockHash.toLowerCase())}::text[]),
            unnest(${events.map((e) => e.txHash.toLowerCase())}::text[]), unnest(${events.map((e) => e.contract)}::text[]),
            unnest(${events.map((e) => e.decoded.eventName)}::text[]),
            jsonb_array_elements(${jsonSafeText(events.map((e) => e.decoded.args))}::jsonb)
          ) as t(b, l, bh, th, c, e, a)
          where ${guard}
        )${sql.join("", false, "")(ctes)}${journal}
        select venue${wake} from moved`
      if (moved.length === 0) {
        const [cursor] = yield* sql<{ b: string | null }>`
          select indexed_block::text as b from chain_status where venue = ${venue}`
        const actual = cursor?.b === undefined || cursor.b === null ? null : BigInt(cursor.b)
        return yield* Effect.fail(new CursorMoved({ venue, expected: page.fromBlock - 1n, actual }))
      }
      return events.length
    }),
  )

/** The page's journal row: its range and how many events of each kind it held. */
const pageSummary = (page: IngestPage) => {
  const kinds: Record<string, number> = {}
  for (const e of page.events) kinds[e.decoded.eventName] = (kinds[e.decoded.eventName] ?? 0) + 1
  return {
    kind: "chain.indexed",
    master: null,
    payload: {
      venue: page.venue,
      chain_id: page.chainId,
      from_block: page.fromBlock.toString(),
      to_block: page.toBlock.toString(),
      events: page.events.length,
      kinds,
    },
  }
}

/**
 * The page's events folded into the rows they touch (read now, see ingestPage), as guarded statement fragments: the
 * touched rows' upserts and the fills, closes and used nonces the events record.
 */
const foldedWrites = (sql: SqlClient.SqlClient, page: IngestPage, guard: Statement.Fragment) =>
  Effect.map(loadTouched(page.venue, touchedKeys(page.events)), (state) => {
    const venue = page.venue
    const { fills, closes, nonces } = applyEvents(state, page.events)
    const writes = stateWrites(sql, venue, state, guard)
    if (fills.length > 0) {
      writes.push(sql`
        insert into escrow_fills (venue, fill_id, side, fill, fill_digest, quote_set_digest, quote_index, tx_hash,
          block_number, block_hash)
        select ${venue}, * from rows from (
          unnest(${fills.map((f) => f.fillId)}::text[]), unnest(${fills.map((f) => f.side)}::text[]),
          jsonb_array_elements(${JSON.stringify(fills.map((f) => f.fill))}::jsonb),
          unnest(${fills.map((f) => f.fillDigest)}::text[]), unnest(${fills.map((f) => f.quoteSetDigest)}::text[]),
          unnest(${fills.map((f) => (f.quoteIndex === null ? null : f.quoteIndex.toString()))}::bigint[]),
          unnest(${fills.map((f) => f.txHash)}::text[]), unnest(${fills.map((f) => f.blockNumber.toString())}::bigint[]),
          unnest(${fills.map((f) => f.blockHash)}::text[]))
        where ${guard}
        on conflict do nothing`)
    }
    if (closes.length > 0) {
      writes.push(sql`
        insert into escrow_closes (venue, block_number, log_index, order_id, owner, caller, amount, dex, to_margin,
          refused, by_operator, nonce, tx_hash, block_hash)
        select ${venue}, * from unnest(
          ${closes.map((c) => c.blockNumber.toString())}::bigint[], ${closes.map((c) => c.logIndex)}::int[],
          ${closes.map((c) => c.orderId)}::text[], ${closes.map((c) => c.owner)}::text[],
          ${closes.map((c) => c.caller)}::text[], ${closes.map((c) => c.amount.toString())}::numeric[],
          ${closes.map((c) => c.dex)}::bigint[], ${closes.map((c) => c.toMargin)}::bool[],
          ${closes.map((c) => c.refused)}::bool[], ${closes.map((c) => c.byOperator)}::bool[],
          ${closes.map((c) => c.nonce.toString())}::numeric[], ${closes.map((c) => c.txHash)}::text[],
          ${closes.map((c) => c.blockHash)}::text[])
        where ${guard}`)
    }
    if (nonces.length > 0) {
      writes.push(sql`
        insert into escrow_used_nonces (venue, owner, nonce, reason, block_number, block_hash)
        select ${venue}, * from unnest(
          ${nonces.map((n) => n.owner)}::text[], ${nonces.map((n) => n.nonce.toString())}::numeric[],
          ${nonces.map((n) => n.reason)}::text[], ${nonces.map((n) => n.blockNumber.toString())}::bigint[],
          ${nonces.map((n) => n.blockHash)}::text[])
        where ${guard}
        on conflict do nothing`)
    }
    return writes
  })

/**
 * The tables `loadTouched` reads by key while pages add to them: the watcher keeps their planner statistics current
 * during a backlog (src/Sql/BulkStatistics.ts).
 */
export const TOUCHED_TABLES: ReadonlyArray<KeyedTable> = [
  { table: "escrow_orders", keys: ["venue", "order_id"] },
  { table: "escrow_balances", keys: ["venue", "owner"] },
  { table: "escrow_locks", keys: ["venue", "fill_id"] },
  { table: "escrow_payments", keys: ["venue", "fill_id"] },
  { table: "legacy_offers", keys: ["venue", "contract", "offer_id"] },
]

/** Loads exactly the rows a page touches (current while the cursor has not moved: see ingestPage). */
const loadTouched = (venue: string, keys: TouchedKeys) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    Effect.gen(function* () {
      const some = <A extends object>(
        set: Set<string>,
        q: (ids: Array<string>) => Effect.Effect<ReadonlyArray<A>, SqlError.SqlError>,
      ) => (set.size === 0 ? Effect.succeed([] as ReadonlyArray<A>) : q([...set]))
      // Each table's rows in a read of its own, side by side: outside a transaction they need not share a connection.
      const [orders, balances, locks, payments, legacy] = yield* Effect.all(
        [
          some(
            keys.orders,
            (ids) =>
              sql<RawOrder>`select ${sql.literal(ORDER_COLS)} from escrow_orders
          where venue = ${venue} and order_id = any(${ids}::text[])`,
          ),
          some(
            keys.balances,
            (ids) =>
              sql<RawBalance>`select ${sql.literal(BALANCE_COLS)} from escrow_balances
          where venue = ${venue} and owner = any(${ids}::text[])`,
          ),
          some(
            keys.locks,
            (ids) =>
              sql<RawLock>`select ${sql.literal(LOCK_COLS)} from escrow_locks
          where venue = ${venue} and fill_id = any(${ids}::text[])`,
          ),
          some(
            keys.payments,
            (ids) =>
              sql<RawPayment>`select ${sql.literal(PAYMENT_COLS)} from escrow_payments
          where venue = ${venue} and fill_id = any(${ids}::text[])`,
          ),
          some(
            keys.legacy,
            (ids) =>
              sql<RawLegacy>`select ${sql.literal(LEGACY_COLS)} from legacy_offers
          where venue = ${venue} and (contract || ':' || offer_id::text) = any(${ids}::text[])`,
          ),
        ],
        { concurrency: "unbounded" },
      )
      return fillState(emptyState(), orders, balances, locks, payments, legacy)
    }),
  )

/**
 * The upserts of every row of `state` (the touched ones: that is all `loadTouched` + the fold put there), one
 * statement fragment per table with rows, with column arrays (unnest) whatever the number of rows, each written only
 * where `guard` holds.
 */
const stateWrites = (
  sql: SqlClient.SqlClient,
  venue: string,
  state: IndexState,
  guard: Statement.Fragment,
): Array<Statement.Fragment> => {
  const writes: Array<Statement.Fragment> = []
  const orders = [...state.orders.values()]
  if (orders.length > 0) {
    writes.push(sql`
      insert into escrow_orders (venue, order_id, owner, operator, quote_signer, available, locked, created_block,
        block_number, block_hash)
      select ${venue}, * from unnest(
        ${orders.map((o) => o.orderId)}::text[], ${orders.map((o) => o.owner)}::text[],
        ${orders.map((o) => o.operator)}::text[], ${orders.map((o) => o.quoteSigner)}::text[],
        ${orders.map((o) => o.available.toString())}::numeric[], ${orders.map((o) => o.locked.toString())}::numeric[],
        ${orders.map((o) => o.createdBlock.toString())}::bigint[], ${orders.map((o) => o.blockNumber.toString())}::bigint[],
        ${orders.map((o) => o.blockHash)}::text[])
      where ${guard}
      on conflict (venue, order_id) do update set owner = excluded.owner, operator = excluded.operator,
        quote_signer = excluded.quote_signer, available = excluded.available, locked = excluded.locked,
        block_number = excluded.block_number, block_hash = excluded.block_hash`)
  }
  const balances = [...state.balances.values()]
  if (balances.length > 0) {
    writes.push(sql`
      insert into escrow_balances (venue, owner, balance, block_number, block_hash)
      select ${venue}, * from unnest(
        ${balances.map((b) => b.owner)}::text[], ${balances.map((b) => b.balance.toString())}::numeric[],
        ${balances.map((b) => b.blockNumber.toString())}::bigint[], ${balances.map((b) => b.blockHash)}::text[])
      where ${guard}
      on conflict (venue, owner) do update set balance = excluded.balance,
        block_number = excluded.block_number, block_hash = excluded.block_hash`)
  }
  const locks = [...state.locks.values()]
  if (locks.length > 0) {
    writes.push(sql`
      insert into escrow_locks (venue, fill_id, order_id, payer, recipient, amount_out, hashlock, expiry, state,
        refused, secret, created_block, block_number, block_hash)
      select ${venue}, * from unnest(
        ${locks.map((l) => l.fillId)}::text[], ${locks.map((l) => l.orderId)}::text[],
        ${locks.map((l) => l.payer)}::text[], ${locks.map((l) => l.recipient)}::text[],
        ${locks.map((l) => l.amountOut.toString())}::numeric[], ${locks.map((l) => l.hashlock)}::text[],
        ${locks.map((l) => l.expiry.toString())}::bigint[], ${locks.map((l) => l.state)}::text[],
        ${locks.map((l) => l.refused)}::bool[], ${locks.map((l) => l.secret)}::text[],
        ${locks.map((l) => l.createdBlock.toString())}::bigint[], ${locks.map((l) => l.blockNumber.toString())}::bigint[],
        ${locks.map((l) => l.blockHash)}::text[])
      where ${guard}
      on conflict (venue, fill_id) do update set state = excluded.state, refused = excluded.refused,
        secret = excluded.secret, amount_out = excluded.amount_out,
        block_number = excluded.block_number, block_hash = excluded.block_hash`)
  }
  const payments = [...state.payments.values()]
  if (payments.length > 0) {
    writes.push(sql`
      insert into escrow_payments (venue, fill_id, payer, payee, amount_in, hashlock, expiry, state, secret,
        created_block, block_number, block_hash)
      select ${venue}, * from unnest(
        ${payments.map((p) => p.fillId)}::text[], ${payments.map((p) => p.payer)}::text[],
        ${payments.map((p) => p.payee)}::text[], ${payments.map((p) => p.amountIn.toString())}::numeric[],
        ${payments.map((p) => p.hashlock)}::text[], ${payments.map((p) => p.expiry.toString())}::bigint[],
        ${payments.map((p) => p.state)}::text[], ${payments.map((p) => p.secret)}::text[],
        ${payments.map((p) => p.createdBlock.toString())}::bigint[],
        ${payments.map((p) => p.blockNumber.toString())}::bigint[], ${payments.map((p) => p.blockHash)}::text[])
      where ${guard}
      on conflict (venue, fill_id) do update set state = excluded.state, secret = excluded.secret,
        block_number = excluded.block_number, block_hash = excluded.block_hash`)
  }
  const legacy = [...state.legacy.values()]
  if (legacy.length > 0) {
    writes.push(sql`
      insert into legacy_offers (venue, contract, offer_id, owner, amount, refund_at, reclaimed, created_block,
        block_number, block_hash)
      select ${venue}, * from unnest(
        ${legacy.map((o) => o.contract)}::text[], ${legacy.map((o) => o.offerId.toString())}::numeric[],
        ${legacy.map((o) => o.owner)}::text[], ${legacy.map((o) => o.amount.toString())}::numeric[],
        ${legacy.map((o) => o.refundAt.toString())}::bigint[], ${legacy.map((o) => o.reclaimed)}::bool[],
        ${legacy.map((o) => o.createdBlock.toString())}::bigint[], ${legacy.map((o) => o.blockNumber.toString())}::bigint[],
        ${legacy.map((o) => o.blockHash)}::text[])
      where ${guard}
      on conflict (venue, contract, offer_id) do update set reclaimed = excluded.reclaimed,
        block_number = excluded.block_number, block_hash = excluded.block_hash`)
  }
  return writes
}

/** The whole indexed state of a venue (the integrity check compares it with the chain). */
export const loadIndexState = (venue: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    Effect.gen(function* () {
      const [orders, balances, locks, payments, legacy] = yield* Effect.all([
        sql<RawOrder>`select ${sql.literal(ORDER_COLS)} from escrow_orders where venue = ${venue} order by order_id`,
        sql<RawBalance>`select ${sql.literal(BALANCE_COLS)} from escrow_balances where venue = ${venue} order by owner`,
        sql<RawLock>`select ${sql.literal(LOCK_COLS)} from escrow_locks where venue = ${venue} order by fill_id`,
        sql<RawPayment>`select ${sql.literal(PAYMENT_COLS)} from escrow_payments where venue = ${venue} order by fill_id`,
        sql<RawLegacy>`select ${sql.literal(LEGACY_COLS)} from legacy_offers where venue = ${venue}
          order by contract, offer_id`,
      ])
      return fillState(emptyState(), orders, balances, locks, payments, legacy)
    }),
  )

/** The most recent recorded block hashes (newest first), re-checked against the chain. */
export const recordedBlocks = (venue: string, limit: number) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<{ block_number: string; block_hash: string }>`
      select block_number::text, block_hash from chain_blocks where venue = ${venue}
      order by block_number desc limit ${limit}`.pipe(
      Effect.map((rows) => rows.map((r) => ({ number: BigInt(r.block_number), hash: r.block_hash }))),
    ),
  )
