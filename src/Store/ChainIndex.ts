import { SqlClient, type SqlError } from "@effect/sql"
import { Data, Effect } from "effect"
import type { Address, Hex } from "viem"
import {
  applyEvents,
  emptyState,
  eventArgsJson,
  type IndexedEvent,
  type IndexState,
  type TouchedKeys,
  touchedKeys,
} from "../Chain/EscrowIndex.ts"
import { appendJournal } from "./Journal.ts"

/**
 * SQL of the chain index (migration 0004): the per-venue status row (what /health reads and the
 * watcher's cursor), the ingest of one block page in one transaction, and the reads of the
 * integrity check. Only the venue's watcher writes; anyone may read.
 */

/** Another writer moved the cursor first (a singleton hand-over overlapped): the page is dropped. */
export class CursorMoved extends Data.TaggedError("CursorMoved")<{
  readonly venue: string
  readonly expected: bigint
  readonly actual: bigint | null
}> {}

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
  indexed_hash, error, operator, operator_gas::text, integrity_checked_at, integrity_completed_at,
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

/** Operator action after investigating an alarm: clears the latch (the next check may latch again). */
export const clearIntegrityAlarm = (venue: string) =>
  Effect.flatMap(
    SqlClient.SqlClient,
    (sql) => sql`
      update chain_status set integrity_mismatch = false, integrity_error = '', updated_at = now()
      where venue = ${venue}`,
  ).pipe(Effect.asVoid)

/** Asks the venue's watcher (wherever it runs) for an integrity check at its next poll. */
export const requestIntegrityCheck = (venue: string) =>
  Effect.flatMap(
    SqlClient.SqlClient,
    (sql) => sql`update chain_status set integrity_requested_at = now() where venue = ${venue}`,
  ).pipe(Effect.asVoid)

/** A finished check: completed (no mismatch found) or the differing key, which latches. */
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
            integrity_requested_at = case when integrity_requested_at <= ${requestedBefore ?? checkedAt}
              then null else integrity_requested_at end,
            updated_at = now()
          where venue = ${venue}`
        if (mismatch !== null) yield* latchIntegrityAlarm(venue, mismatch, checkedAt)
      }),
    ),
  )

// ------------------------------------------------------------------ ingest

const CHUNK = 1000
const chunks = <T>(xs: ReadonlyArray<T>): Array<ReadonlyArray<T>> => {
  const out: Array<ReadonlyArray<T>> = []
  for (let i = 0; i < xs.length; i += CHUNK) out.push(xs.slice(i, i + CHUNK))
  return out
}

export interface IngestPage {
  readonly venue: string
  readonly chainId: number
  readonly fromBlock: bigint
  readonly toBlock: bigint
  /** Hash of `toBlock`: the cursor's hash, re-checked at every poll. */
  readonly toHash: Hex
  readonly events: ReadonlyArray<IndexedEvent>
}

/**
 * Indexes one page in one transaction: the cursor row is locked and must still be `fromBlock - 1`
 * (so a page is applied exactly once even if two watchers overlap during a hand-over), the events
 * are inserted, the rows they touch are loaded, folded and written back, and the cursor moves to
 * `toBlock`. One journal row summarises a page that held events.
 */
export const ingestPage = (
  page: IngestPage,
): Effect.Effect<number, CursorMoved | SqlError.SqlError, SqlClient.SqlClient> =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql.withTransaction(
      Effect.gen(function* () {
        const { venue } = page
        const [cursor] = yield* sql<{ b: string | null }>`
          select indexed_block::text as b from chain_status where venue = ${venue} for update`
        const actual = cursor?.b === undefined || cursor.b === null ? null : BigInt(cursor.b)
        if (actual !== page.fromBlock - 1n) {
          return yield* Effect.fail(new CursorMoved({ venue, expected: page.fromBlock - 1n, actual }))
        }
        const events = page.events
        if (events.length > 0) {
          for (const part of chunks(events)) {
            yield* sql`insert into escrow_events ${sql.insert(
              part.map((e) => ({
                venue,
                block_number: e.blockNumber.toString(),
                log_index: e.logIndex,
                block_hash: e.blockHash.toLowerCase(),
                tx_hash: e.txHash.toLowerCase(),
                contract: e.contract,
                event: e.decoded.eventName,
                args: JSON.stringify(eventArgsJson(e)),
              })),
            )}`
          }
          const state = yield* loadTouched(venue, touchedKeys(events))
          const appends = applyEvents(state, events)
          yield* writeState(venue, state)
          for (const part of chunks(appends.fills)) {
            yield* sql`insert into escrow_fills ${sql.insert(
              part.map((f) => ({
                venue,
                fill_id: f.fillId,
                side: f.side,
                fill: JSON.stringify(f.fill),
                fill_digest: f.fillDigest,
                quote_set_digest: f.quoteSetDigest,
                quote_index: f.quoteIndex === null ? null : f.quoteIndex.toString(),
                tx_hash: f.txHash,
                block_number: f.blockNumber.toString(),
                block_hash: f.blockHash,
              })),
            )} on conflict do nothing`
          }
          for (const part of chunks(appends.closes)) {
            yield* sql`insert into escrow_closes ${sql.insert(
              part.map((c) => ({
                venue,
                block_number: c.blockNumber.toString(),
                log_index: c.logIndex,
                order_id: c.orderId,
                owner: c.owner,
                caller: c.caller,
                amount: c.amount.toString(),
                dex: c.dex,
                to_margin: c.toMargin,
                refused: c.refused,
                by_operator: c.byOperator,
                nonce: c.nonce.toString(),
                tx_hash: c.txHash,
                block_hash: c.blockHash,
              })),
            )}`
          }
          for (const part of chunks(appends.nonces)) {
            yield* sql`insert into escrow_used_nonces ${sql.insert(
              part.map((n) => ({
                venue,
                owner: n.owner,
                nonce: n.nonce.toString(),
                reason: n.reason,
                block_number: n.blockNumber.toString(),
                block_hash: n.blockHash,
              })),
            )} on conflict do nothing`
          }
          const blocks = new Map<string, string>()
          for (const e of events) blocks.set(e.blockNumber.toString(), e.blockHash.toLowerCase())
          yield* sql`insert into chain_blocks ${sql.insert(
            [...blocks].map(([n, h]) => ({ venue, block_number: n, block_hash: h })),
          )} on conflict do nothing`
          const kinds: Record<string, number> = {}
          for (const e of events) kinds[e.decoded.eventName] = (kinds[e.decoded.eventName] ?? 0) + 1
          yield* appendJournal({
            kind: "chain.indexed",
            master: null,
            payload: {
              venue,
              chain_id: page.chainId,
              from_block: page.fromBlock.toString(),
              to_block: page.toBlock.toString(),
              events: events.length,
              kinds,
            },
          })
        }
        const toHash = page.toHash.toLowerCase()
        yield* sql`
          insert into chain_blocks (venue, block_number, block_hash)
          values (${venue}, ${page.toBlock.toString()}, ${toHash}) on conflict do nothing`
        yield* sql`
          update chain_status set indexed_block = ${page.toBlock.toString()}, indexed_hash = ${toHash},
            updated_at = now()
          where venue = ${venue}`
        return events.length
      }),
    ),
  )

interface RawOrder {
  order_id: string
  owner: string
  operator: string
  quote_signer: string
  available: string
  locked: string
  created_block: string
  block_number: string
  block_hash: string
}
interface RawBalance {
  owner: string
  balance: string
  block_number: string
  block_hash: string
}
interface RawLock {
  fill_id: string
  order_id: string
  payer: string
  recipient: string
  amount_out: string
  hashlock: string
  expiry: string
  state: string
  refused: boolean | null
  secret: string | null
  created_block: string
  block_number: string
  block_hash: string
}
interface RawPayment {
  fill_id: string
  payer: string
  payee: string
  amount_in: string
  hashlock: string
  expiry: string
  state: string
  secret: string | null
  created_block: string
  block_number: string
  block_hash: string
}
interface RawLegacy {
  contract: string
  offer_id: string
  owner: string
  amount: string
  refund_at: string
  reclaimed: boolean
  created_block: string
  block_number: string
  block_hash: string
}

const fillState = (
  state: IndexState,
  orders: ReadonlyArray<RawOrder>,
  balances: ReadonlyArray<RawBalance>,
  locks: ReadonlyArray<RawLock>,
  payments: ReadonlyArray<RawPayment>,
  legacy: ReadonlyArray<RawLegacy>,
) => {
  for (const r of orders) {
    state.orders.set(r.order_id, {
      orderId: r.order_id as Hex,
      owner: r.owner as Address,
      operator: r.operator as Address,
      quoteSigner: r.quote_signer as Address,
      available: BigInt(r.available),
      locked: BigInt(r.locked),
      createdBlock: BigInt(r.created_block),
      blockNumber: BigInt(r.block_number),
      blockHash: r.block_hash as Hex,
    })
  }
  for (const r of balances) {
    state.balances.set(r.owner, {
      owner: r.owner as Address,
      balance: BigInt(r.balance),
      blockNumber: BigInt(r.block_number),
      blockHash: r.block_hash as Hex,
    })
  }
  for (const r of locks) {
    state.locks.set(r.fill_id, {
      fillId: r.fill_id as Hex,
      orderId: r.order_id as Hex,
      payer: r.payer as Address,
      recipient: r.recipient as Address,
      amountOut: BigInt(r.amount_out),
      hashlock: r.hashlock as Hex,
      expiry: BigInt(r.expiry),
      state: r.state as "locked",
      refused: r.refused,
      secret: r.secret as Hex | null,
      createdBlock: BigInt(r.created_block),
      blockNumber: BigInt(r.block_number),
      blockHash: r.block_hash as Hex,
    })
  }
  for (const r of payments) {
    state.payments.set(r.fill_id, {
      fillId: r.fill_id as Hex,
      payer: r.payer as Address,
      payee: r.payee as Address,
      amountIn: BigInt(r.amount_in),
      hashlock: r.hashlock as Hex,
      expiry: BigInt(r.expiry),
      state: r.state as "held",
      secret: r.secret as Hex | null,
      createdBlock: BigInt(r.created_block),
      blockNumber: BigInt(r.block_number),
      blockHash: r.block_hash as Hex,
    })
  }
  for (const r of legacy) {
    state.legacy.set(`${r.contract}:${r.offer_id}`, {
      contract: r.contract as Address,
      offerId: BigInt(r.offer_id),
      owner: r.owner as Address,
      amount: BigInt(r.amount),
      refundAt: BigInt(r.refund_at),
      reclaimed: r.reclaimed,
      createdBlock: BigInt(r.created_block),
      blockNumber: BigInt(r.block_number),
      blockHash: r.block_hash as Hex,
    })
  }
  return state
}

const ORDER_COLS = `order_id, owner, operator, quote_signer, available::text, locked::text, created_block::text,
  block_number::text, block_hash`
const BALANCE_COLS = `owner, balance::text, block_number::text, block_hash`
const LOCK_COLS = `fill_id, order_id, payer, recipient, amount_out::text, hashlock, expiry::text, state, refused,
  secret, created_block::text, block_number::text, block_hash`
const PAYMENT_COLS = `fill_id, payer, payee, amount_in::text, hashlock, expiry::text, state, secret,
  created_block::text, block_number::text, block_hash`
const LEGACY_COLS = `contract, offer_id::text, owner, amount::text, refund_at::text, reclaimed, created_block::text,
  block_number::text, block_hash`

/** Loads exactly the rows a page touches (locked for the rest of the transaction). */
const loadTouched = (venue: string, keys: TouchedKeys) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    Effect.gen(function* () {
      const some = <A extends object>(
        set: Set<string>,
        q: (ids: Array<string>) => Effect.Effect<ReadonlyArray<A>, SqlError.SqlError>,
      ) => (set.size === 0 ? Effect.succeed([] as ReadonlyArray<A>) : q([...set]))
      const orders = yield* some(
        keys.orders,
        (ids) =>
          sql<RawOrder>`select ${sql.literal(ORDER_COLS)} from escrow_orders
          where venue = ${venue} and ${sql.in("order_id", ids)} for update`,
      )
      const balances = yield* some(
        keys.balances,
        (ids) =>
          sql<RawBalance>`select ${sql.literal(BALANCE_COLS)} from escrow_balances
          where venue = ${venue} and ${sql.in("owner", ids)} for update`,
      )
      const locks = yield* some(
        keys.locks,
        (ids) =>
          sql<RawLock>`select ${sql.literal(LOCK_COLS)} from escrow_locks
          where venue = ${venue} and ${sql.in("fill_id", ids)} for update`,
      )
      const payments = yield* some(
        keys.payments,
        (ids) =>
          sql<RawPayment>`select ${sql.literal(PAYMENT_COLS)} from escrow_payments
          where venue = ${venue} and ${sql.in("fill_id", ids)} for update`,
      )
      const legacy = yield* some(
        keys.legacy,
        (ids) =>
          sql<RawLegacy>`select ${sql.literal(LEGACY_COLS)} from legacy_offers
          where venue = ${venue} and (contract || ':' || offer_id::text) in ${sql.in(ids)} for update`,
      )
      return fillState(emptyState(), orders, balances, locks, payments, legacy)
    }),
  )

/** Upserts every row of `state` (the touched ones: that is all `loadTouched` + the fold put there). */
const writeState = (venue: string, state: IndexState) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    Effect.gen(function* () {
      for (const part of chunks([...state.orders.values()])) {
        yield* sql`insert into escrow_orders ${sql.insert(
          part.map((o) => ({
            venue,
            order_id: o.orderId,
            owner: o.owner,
            operator: o.operator,
            quote_signer: o.quoteSigner,
            available: o.available.toString(),
            locked: o.locked.toString(),
            created_block: o.createdBlock.toString(),
            block_number: o.blockNumber.toString(),
            block_hash: o.blockHash,
          })),
        )} on conflict (venue, order_id) do update set owner = excluded.owner, operator = excluded.operator,
          quote_signer = excluded.quote_signer, available = excluded.available, locked = excluded.locked,
          block_number = excluded.block_number, block_hash = excluded.block_hash`
      }
      for (const part of chunks([...state.balances.values()])) {
        yield* sql`insert into escrow_balances ${sql.insert(
          part.map((b) => ({
            venue,
            owner: b.owner,
            balance: b.balance.toString(),
            block_number: b.blockNumber.toString(),
            block_hash: b.blockHash,
          })),
        )} on conflict (venue, owner) do update set balance = excluded.balance,
          block_number = excluded.block_number, block_hash = excluded.block_hash`
      }
      for (const part of chunks([...state.locks.values()])) {
        yield* sql`insert into escrow_locks ${sql.insert(
          part.map((l) => ({
            venue,
            fill_id: l.fillId,
            order_id: l.orderId,
            payer: l.payer,
            recipient: l.recipient,
            amount_out: l.amountOut.toString(),
            hashlock: l.hashlock,
            expiry: l.expiry.toString(),
            state: l.state,
            refused: l.refused,
            secret: l.secret,
            created_block: l.createdBlock.toString(),
            block_number: l.blockNumber.toString(),
            block_hash: l.blockHash,
          })),
        )} on conflict (venue, fill_id) do update set state = excluded.state, refused = excluded.refused,
          secret = excluded.secret, amount_out = excluded.amount_out,
          block_number = excluded.block_number, block_hash = excluded.block_hash`
      }
      for (const part of chunks([...state.payments.values()])) {
        yield* sql`insert into escrow_payments ${sql.insert(
          part.map((p) => ({
            venue,
            fill_id: p.fillId,
            payer: p.payer,
            payee: p.payee,
            amount_in: p.amountIn.toString(),
            hashlock: p.hashlock,
            expiry: p.expiry.toString(),
            state: p.state,
            secret: p.secret,
            created_block: p.createdBlock.toString(),
            block_number: p.blockNumber.toString(),
            block_hash: p.blockHash,
          })),
        )} on conflict (venue, fill_id) do update set state = excluded.state, secret = excluded.secret,
          block_number = excluded.block_number, block_hash = excluded.block_hash`
      }
      for (const part of chunks([...state.legacy.values()])) {
        yield* sql`insert into legacy_offers ${sql.insert(
          part.map((o) => ({
            venue,
            contract: o.contract,
            offer_id: o.offerId.toString(),
            owner: o.owner,
            amount: o.amount.toString(),
            refund_at: o.refundAt.toString(),
            reclaimed: o.reclaimed,
            created_block: o.createdBlock.toString(),
            block_number: o.blockNumber.toString(),
            block_hash: o.blockHash,
          })),
        )} on conflict (venue, contract, offer_id) do update set reclaimed = excluded.reclaimed,
          block_number = excluded.block_number, block_hash = excluded.block_hash`
      }
    }),
  )

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
