import { SqlClient, type SqlError, type Statement } from "@effect/sql"
import { Effect } from "effect"
import type { Address, Hex } from "viem"
import { applyEventsV2, balanceOwnersOf, type IndexStateV2, touchedKeysV2 } from "../Chain/EscrowIndexV2.ts"
import { jsonSafeText } from "../Chain/EscrowLogs.ts"
import type { IndexedEventV2 } from "../Chain/EscrowLogsV2.ts"
import type { KeyedTable } from "../Sql/BulkStatistics.ts"
import type { Notification } from "../Sql/Journal.ts"
import { CursorMoved } from "./ChainIndex.ts"
import { loadBalancesV2, loadTouchedV2 } from "./ChainIndexRowsV2.ts"

/**
 * SQL of the v2 escrow index (migration 0018). The venue's watcher is the only writer: the touched rows are read,
 * then each page is one statement (so one transaction) whose every write, the raw events, the folded rows and the
 * page's notifications, is guarded by the cursor's move `indexed_block = fromBlock - 1` (a replayed or overlapping
 * page fails with CursorMoved and changes nothing).
 */

export interface V2Cursor {
  readonly escrow: string
  readonly indexedBlock: bigint
  readonly indexedHash: string | null
}

/**
 * The venue's v2 cursor, created just before the escrow's deployment block when it does not exist (kept when it
 * does). One statement, run every poll: the row it inserts, else the row that was there. A row another writer
 * inserts concurrently is not in this statement's snapshot: undefined then, and the next poll reads it.
 */
export const initV2Cursor = (venue: string, escrow: Address, deploymentBlock: number) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<{ escrow: string; b: string; h: string | null }>`
      with created as (
        insert into escrow_v2_cursor (venue, escrow, indexed_block)
        values (${venue}, ${escrow.toLowerCase()}, ${Math.max(0, deploymentBlock - 1)})
        on conflict (venue) do nothing
        returning escrow, indexed_block, indexed_hash
      )
      select escrow, indexed_block::text as b, indexed_hash as h from created
      union all
      select escrow, indexed_block::text, indexed_hash from escrow_v2_cursor
      where venue = ${venue} and not exists (select from created)`.pipe(Effect.map((rows) => toV2Cursor(rows[0]))),
  )

const toV2Cursor = (row: { escrow: string; b: string; h: string | null } | undefined): V2Cursor | undefined =>
  row === undefined ? undefined : { escrow: row.escrow, indexedBlock: BigInt(row.b), indexedHash: row.h }

export const v2Cursor = (venue: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<{ escrow: string; b: string; h: string | null }>`
      select escrow, indexed_block::text as b, indexed_hash as h from escrow_v2_cursor where venue = ${venue}`.pipe(
      Effect.map((rows) => toV2Cursor(rows[0])),
    ),
  )

export interface IngestV2Page {
  readonly venue: string
  readonly fromBlock: bigint
  readonly toBlock: bigint
  readonly toHash: Hex
  readonly events: ReadonlyArray<IndexedEventV2>
  /** Sent in the page's transaction when it has events: delivered at commit, with no window after it. */
  readonly notify?: ReadonlyArray<Notification>
}

const s = (n: bigint | number) => n.toString()
const sOrNull = (n: bigint | null) => (n === null ? null : n.toString())

/**
 * Indexes one page of v2 events in one statement, as the v1 page does (src/Escrow/ChainIndex.ts ingestPage, which
 * says why the touched rows read before it are the ones it applies to): the cursor's move guards every other write.
 * Two round trips a page with events (its reads, the statement), one for an empty page. Returns the number of events.
 */
export const ingestV2Page = (
  page: IngestV2Page,
): Effect.Effect<number, CursorMoved | SqlError.SqlError, SqlClient.SqlClient> =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    Effect.gen(function* () {
      const { venue, events } = page
      const guard = sql`exists (select from moved)`
      const writes = events.length === 0 ? [] : yield* foldedWrites(sql, page, guard)
      // The page's wake-ups, delivered at its commit, and only for a page with events that moved.
      const notify = events.length === 0 ? [] : (page.notify ?? [])
      const wake =
        notify.length === 0
          ? sql.literal("")
          : sql`, (select count(*) from (select pg_notify(n.channel, n.payload)
              from unnest(${notify.map((n) => n.channel)}::text[], ${notify.map((n) => n.payload)}::text[])
                as n(channel, payload)) as n) as notified`
      // Moving the cursor both checks it (still fromBlock - 1) and locks its row until commit; the events and the
      // fold's writes are guarded by it. A data-modifying CTE runs once and to completion whether or not the query
      // reads it; no two touch one table, and these tables have no triggers or foreign keys between them.
      const moved = yield* sql<{ venue: string }>`
        with moved as (
          update escrow_v2_cursor set indexed_block = ${s(page.toBlock)}, indexed_hash = ${page.toHash.toLowerCase()},
            updated_at = now()
          where venue = ${venue} and indexed_block = ${s(page.fromBlock - 1n)}
          returning venue
        ), inserted as (
          insert into escrow_v2_events (venue, block_number, log_index, block_hash, tx_hash, contract, event, args)
          select ${venue}, b, l, bh, th, c, e, a from rows from (
            unnest(${events.map((e) => s(e.blockNumber))}::bigint[]), unnest(${events.map((e) => e.logIndex)}::int[]),
            unnest(${events.map((e) => e.blockHash.toLowerCase())}::text[]),
            unnest(${events.map((e) => e.txHash.toLowerCase())}::text[]),
            unnest(${events.map((e) => e.contract)}::text[]), unnest(${events.map((e) => e.decoded.eventName)}::text[]),
            jsonb_array_elements(${jsonSafeText(events.map((e) => e.decoded.args))}::jsonb)
          ) as t(b, l, bh, th, c, e, a)
          where ${guard}
        )${sql.join("", false, "")(writes.map((w, i) => sql`, ${sql.literal(`w${i}`)} as (${w})`))}
        select venue${wake} from moved`
      if (moved.length === 0) {
        const cursor = yield* v2Cursor(venue)
        return yield* Effect.fail(
          new CursorMoved({ venue, expected: page.fromBlock - 1n, actual: cursor?.indexedBlock ?? null }),
        )
      }
      return events.length
    }),
  )

/** The page's events folded into the rows they touch (read now), as guarded writes: the rows' upserts and secrets. */
const foldedWrites = (sql: SqlClient.SqlClient, page: IngestV2Page, guard: Statement.Fragment) =>
  Effect.gen(function* () {
    const { venue, events } = page
    const keys = touchedKeysV2(events)
    const state = yield* loadTouchedV2(venue, keys)
    const more = [...balanceOwnersOf(state)].filter((o) => !keys.balances.has(o) && !state.balances.has(o))
    if (more.length > 0) yield* loadBalancesV2(venue, more, state)
    const { secrets } = applyEventsV2(state, events)
    const writes = stateWrites(sql, venue, state, guard)
    if (secrets.length > 0) {
      writes.push(
        guardedRows(
          sql,
          "escrow_v2_secrets",
          secrets.map((x) => ({
            venue,
            fill_digest: x.fillDigest,
            event: x.event,
            hashlock: x.hashlock,
            secret: x.secret,
            tx_hash: x.txHash,
            block_number: s(x.blockNumber),
            block_hash: x.blockHash,
          })),
          guard,
          "on conflict do nothing",
        ),
      )
    }
    return writes
  })

/**
 * `insert into table` of `rows` where `guard` holds, then `conflict`. The rows travel as one JSON array, typed by the
 * table's own row type (`jsonb_populate_recordset`): a guard needs a SELECT, where a VALUES list's parameters would
 * not take the columns' types. Values are JSON-safe: integers wider than 2^53 as decimal strings, jsonb as objects.
 */
const guardedRows = (
  sql: SqlClient.SqlClient,
  table: string,
  rows: ReadonlyArray<Record<string, unknown>>,
  guard: Statement.Fragment,
  conflict: string,
) => {
  const columns = sql.literal(Object.keys(rows[0] ?? {}).join(", "))
  return sql`
    insert into ${sql.literal(table)} (${columns})
    select ${columns} from jsonb_populate_recordset(null::${sql.literal(table)}, ${JSON.stringify(rows)}::jsonb)
    where ${guard}
    ${sql.literal(conflict)}`
}

/**
 * The tables a page reads by key while pages add to them: the watcher keeps their planner statistics current during
 * a backlog (src/Sql/BulkStatistics.ts).
 */
export const TOUCHED_TABLES_V2: ReadonlyArray<KeyedTable> = [
  { table: "escrow_v2_orders", keys: ["venue", "order_key"] },
  { table: "escrow_v2_balances", keys: ["venue", "owner"] },
  { table: "escrow_v2_locks", keys: ["venue", "fill_digest"] },
  { table: "escrow_v2_payments", keys: ["venue", "fill_digest"] },
]

/** The upserts of every row of `state` (the touched ones), where `guard` holds: one fragment per table with rows. */
const stateWrites = (
  sql: SqlClient.SqlClient,
  venue: string,
  state: IndexStateV2,
  guard: Statement.Fragment,
): Array<Statement.Fragment> => {
  const writes: Array<Statement.Fragment> = []
  const orders = [...state.orders.values()]
  if (orders.length > 0) {
    writes.push(
      guardedRows(
        sql,
        "escrow_v2_orders",
        orders.map((o) => ({
          venue,
          owner: o.owner,
          order_id: o.orderId,
          order_key: o.orderKey,
          operator: o.operator,
          quote_signer: o.quoteSigner,
          available: s(o.available),
          locked: s(o.locked),
          close_requested: o.closeRequested,
          close_dex: o.closeDex,
          close_to_margin: o.closeToMargin,
          created_block: s(o.createdBlock),
          block_number: s(o.blockNumber),
          block_hash: o.blockHash,
        })),
        guard,
        `on conflict (venue, order_key) do update set owner = excluded.owner, order_id = excluded.order_id,
        operator = excluded.operator, quote_signer = excluded.quote_signer, available = excluded.available,
        locked = excluded.locked, close_requested = excluded.close_requested, close_dex = excluded.close_dex,
        close_to_margin = excluded.close_to_margin, block_number = excluded.block_number,
        block_hash = excluded.block_hash`,
      ),
    )
  }
  const balances = [...state.balances.values()]
  if (balances.length > 0) {
    writes.push(
      guardedRows(
        sql,
        "escrow_v2_balances",
        balances.map((b) => ({
          venue,
          owner: b.owner,
          balance: s(b.balance),
          block_number: s(b.blockNumber),
          block_hash: b.blockHash,
        })),
        guard,
        `on conflict (venue, owner) do update set balance = excluded.balance, block_number = excluded.block_number,
        block_hash = excluded.block_hash`,
      ),
    )
  }
  const locks = [...state.locks.values()]
  if (locks.length > 0) {
    writes.push(
      guardedRows(
        sql,
        "escrow_v2_locks",
        locks.map((l) => ({
          venue,
          fill_digest: l.fillDigest,
          state: l.state,
          order_key: l.orderKey,
          owner: l.owner,
          order_id: l.orderId,
          sequence: s(l.sequence),
          payer: l.payer,
          recipient: l.recipient,
          amount_in: s(l.amountIn),
          amount_out: s(l.amountOut),
          dex: l.dex,
          to_margin: l.toMargin,
          hashlock: l.hashlock,
          hashlock_index: l.hashlockIndex,
          expiry: s(l.expiry),
          taker_expiry: s(l.takerExpiry),
          pay_key: l.payKey,
          pay_by: s(l.payBy),
          quote_set_digest: l.quoteSetDigest,
          quote_index: sOrNull(l.quoteIndex),
          refused: l.refused,
          to_owner: l.toOwner,
          secret: l.secret,
          fill: l.fill,
          created_block: s(l.createdBlock),
          tx_hash: l.txHash,
          block_number: s(l.blockNumber),
          block_hash: l.blockHash,
        })),
        guard,
        `on conflict (venue, fill_digest) do update set state = excluded.state, amount_out = excluded.amount_out,
        refused = excluded.refused, to_owner = excluded.to_owner, secret = excluded.secret,
        block_number = excluded.block_number, block_hash = excluded.block_hash`,
      ),
    )
  }
  const payments = [...state.payments.values()]
  if (payments.length > 0) {
    writes.push(
      guardedRows(
        sql,
        "escrow_v2_payments",
        payments.map((p) => ({
          venue,
          fill_digest: p.fillDigest,
          state: p.state,
          payer: p.payer,
          payee: p.payee,
          amount_in: s(p.amountIn),
          hashlock: p.hashlock,
          expiry: s(p.expiry),
          pay_key: p.payKey,
          pay_by: s(p.payBy),
          pay_take_digest: p.payTakeDigest,
          secret: p.secret,
          fill: p.fill,
          created_block: s(p.createdBlock),
          tx_hash: p.txHash,
          block_number: s(p.blockNumber),
          block_hash: p.blockHash,
        })),
        guard,
        `on conflict (venue, fill_digest) do update set state = excluded.state, secret = excluded.secret,
        amount_in = excluded.amount_in, block_number = excluded.block_number, block_hash = excluded.block_hash`,
      ),
    )
  }
  return writes
}
