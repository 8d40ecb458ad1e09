import { SqlClient } from "@effect/sql"
import { Effect, Option } from "effect"
import { appendJournal } from "../Sql/Journal.ts"

/**
 * Order states:
 * - `preparing`: created; the owner has the sign items; nothing relayed.
 * - `awaiting_margin`: the owner's wallet lacked the amount at creation, so `to_sign` began with a
 *   `venue_transfer` (a venue withdrawal of the shortfall from the owner's margin to the owner's address
 *   on the escrow chain). All signatures are accepted and that withdrawal is with the WithdrawalDesk
 *   (`venue_transfer_id`). The order's OrderFunding entity relays `fund` once the withdrawal is `relayed` and the
 *   wallet holds the amount; a `failed` withdrawal fails the order; an `unknown` one is waited for (never
 *   signed around).
 * - `funding`: the owner's FundOrder and permit are accepted and the escrow `fund` transaction is
 *   with the relayer (idempotency key `fund:<order id>`).
 * - `funded`: the escrow's OrderFunded is indexed at the finalized head (v1: escrow_orders by order id; v2:
 *   escrow_v2_orders by (owner, order id), since v2 keys orders by both).
 * - `failed`: the fund transaction reverted, or the order's venue transfer failed (see `error`); the owner
 *   may prepare a new order.
 * - `closed`: the order's funds were released by a close (v2 also: a sticky close was requested and its last
 *   lock has ended, see settleClosedV2Orders).
 *
 * `escrow_version` (1|2, migration 0019) names the escrow every step uses (src/Chain/OrderEscrow.ts).
 */
export type OrderState = "preparing" | "awaiting_margin" | "funding" | "funded" | "failed" | "closed"

export interface OrderRow {
  readonly id: string
  readonly master: string
  readonly venue: string
  readonly receive_venue: string
  readonly owner_address: string
  readonly state: OrderState
  /** The escrow the order is funded on (src/Chain/OrderEscrow.ts). */
  readonly escrow_version: 1 | 2
  readonly amount: string
  readonly created_at: Date
  readonly updated_at: Date
  readonly client_order_id: string
  readonly quote_identity_id: string
  readonly quote_signer: string
  readonly fund_deadline: string
  readonly to_sign: ReadonlyArray<unknown>
  readonly signatures: Record<string, string> | null
  readonly error: string
  /** From the order's escrow index (final head: escrow_orders or escrow_v2_orders); "0" before funding. */
  readonly escrow_available: string
  /** Σ amount_out / Σ amount_in of the order's settled fills (migrations/0014). */
  readonly filled: string
  readonly received: string
  /** The withdrawal funding it from venue margin (state awaiting_margin and after), if any. */
  readonly venue_transfer_id: string | null
  /** That withdrawal's amount, venue ref, state, error and last change (null without one). */
  readonly vt_amount: string | null
  readonly vt_venue_ref: string | null
  readonly vt_state: string | null
  readonly vt_error: string | null
  readonly vt_at: Date | null
}

const select = `
  select o.id, o.master, o.venue, o.receive_venue, o.owner_address, o.state, o.escrow_version::int as escrow_version,
         o.amount::text, o.created_at,
         o.updated_at, o.client_order_id, o.quote_identity_id, o.quote_signer, o.fund_deadline::text, o.to_sign,
         o.signatures, o.error,
         coalesce(case when o.escrow_version = 2 then e2.available else e.available end, 0)::text as escrow_available,
         o.filled::text, o.received::text, o.venue_transfer_id,
         w.amount::text as vt_amount, w.venue_ref as vt_venue_ref, w.state as vt_state, w.error as vt_error,
         w.updated_at as vt_at
  from orders o left join escrow_orders e on e.venue = o.venue and e.order_id = o.id and o.escrow_version = 1
    left join escrow_v2_orders e2
      on e2.venue = o.venue and e2.owner = o.owner_address and e2.order_id = o.id and o.escrow_version = 2
    left join withdrawals w on w.id = o.venue_transfer_id`

export const findOrder = (id: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<OrderRow>`${sql.unsafe(select)} where o.id = ${id.toLowerCase()}`.pipe(
      Effect.map((rows) => Option.fromNullable(rows[0])),
    ),
  )

export const findOrderByClientId = (master: string, clientOrderId: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<OrderRow>`${sql.unsafe(select)} where o.master = ${master} and o.client_order_id = ${clientOrderId}`.pipe(
      Effect.map((rows) => Option.fromNullable(rows[0])),
    ),
  )

export interface NewOrder {
  readonly id: string
  readonly master: string
  readonly clientOrderId: string
  readonly venue: string
  readonly receiveVenue: string
  readonly owner: string
  readonly amount: bigint
  readonly identityId: string
  readonly quoteSigner: string
  readonly fundDeadline: bigint
  readonly toSign: ReadonlyArray<unknown>
  readonly escrowVersion: 1 | 2
  readonly nowMs: number
}

/**
 * Inserts the order unless the client id is taken; the linked account row is share-locked so an
 * unlink cannot slip in between (see unlinkIfUnused). Returns whether it was created.
 */
export const insertOrder = (o: NewOrder) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql.withTransaction(
      Effect.gen(function* () {
        const linked = yield* sql`
          select 1 from linked_accounts where master = ${o.master} and venue = ${o.venue} and address = ${o.owner}
          for share`
        if (linked.length === 0) return "not-linked" as const
        const now = new Date(o.nowMs)
        const inserted = yield* sql`
          insert into orders (id, master, venue, receive_venue, owner_address, state, amount, created_at, updated_at,
            client_order_id, quote_identity_id, quote_signer, fund_deadline, to_sign, escrow_version)
          values (${o.id}, ${o.master}, ${o.venue}, ${o.receiveVenue}, ${o.owner}, 'preparing', ${o.amount.toString()},
            ${now}, ${now}, ${o.clientOrderId}, ${o.identityId}, ${o.quoteSigner}, ${o.fundDeadline.toString()},
            ${JSON.stringify(o.toSign)}::jsonb, ${o.escrowVersion})
          on conflict (master, client_order_id) do nothing
          returning id`
        if (inserted.length === 0) return "exists" as const
        yield* appendJournal({
          kind: "order.created",
          master: o.master,
          payload: { order_id: o.id, identity_id: o.identityId, venue: o.venue, amount: o.amount.toString() },
        })
        return "created" as const
      }),
    ),
  )

/**
 * Moves the order to `funding` (once) from `from`: `preparing` with the owner's signatures (wallet
 * funding), or `awaiting_margin` (signatures already recorded) once the venue transfer landed.
 */
export const markFunding = (
  id: string,
  signatures: Record<string, string> | null,
  nowMs: number,
  from: "preparing" | "awaiting_margin" = "preparing",
) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql.withTransaction(
      Effect.gen(function* () {
        const rows = yield* sql<{ master: string; quote_identity_id: string }>`
          update orders set state = 'funding',
            signatures = coalesce(${signatures === null ? null : JSON.stringify(signatures)}::jsonb, signatures),
            updated_at = ${new Date(nowMs)}
          where id = ${id} and state = ${from}
          returning master, quote_identity_id`
        const row = rows[0]
        if (row) {
          yield* appendJournal({
            kind: "order.funding",
            master: row.master,
            payload: { order_id: id, identity_id: row.quote_identity_id },
          })
        }
        return row !== undefined
      }),
    ),
  )

/**
 * Records the owner's signatures (venue_transfer, fund_order, permit) and the queued withdrawal, and
 * moves the order from `preparing` to `awaiting_margin` (once).
 */
export const markAwaitingMargin = (
  id: string,
  signatures: Record<string, string>,
  withdrawalId: string,
  nowMs: number,
) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql.withTransaction(
      Effect.gen(function* () {
        const rows = yield* sql<{ master: string; quote_identity_id: string }>`
          update orders set state = 'awaiting_margin', signatures = ${JSON.stringify(signatures)}::jsonb,
            venue_transfer_id = ${withdrawalId}, updated_at = ${new Date(nowMs)}
          where id = ${id} and state = 'preparing'
          returning master, quote_identity_id`
        const row = rows[0]
        if (row) {
          yield* appendJournal({
            kind: "order.awaiting_margin",
            master: row.master,
            payload: { order_id: id, identity_id: row.quote_identity_id, withdrawal_id: withdrawalId },
          })
        }
        return row !== undefined
      }),
    ),
  )

/** An `awaiting_margin` order with its venue transfer's state, for its OrderFunding entity. */
export interface AwaitingMarginOrder {
  readonly id: string
  readonly master: string
  readonly fund_deadline: string
  readonly venue: string
  readonly escrow_version: 1 | 2
  readonly owner_address: string
  readonly amount: string
  readonly to_sign: ReadonlyArray<unknown>
  readonly signatures: Record<string, string>
  readonly withdrawal_state: string
  readonly withdrawal_error: string
  /** The relayer already holds `fund:<id>` (a row an earlier version could leave behind; see OrderFunding). */
  readonly fund_relayed: boolean
}

export const awaitingMarginOrders = (limit: number, orderId?: string) =>
  Effect.flatMap(
    SqlClient.SqlClient,
    (sql) => sql<AwaitingMarginOrder>`
      select o.id, o.master, o.fund_deadline::text as fund_deadline, o.venue, o.escrow_version::int as escrow_version,
             o.owner_address, o.amount::text as amount, o.to_sign, o.signatures,
             w.state as withdrawal_state, w.error as withdrawal_error,
             exists (select 1 from relayer_requests r where r.idempotency_key = 'fund:' || o.id) as fund_relayed
      from orders o join withdrawals w on w.id = o.venue_transfer_id
      where o.state = 'awaiting_margin' ${orderId === undefined ? sql`` : sql`and o.id = ${orderId}`}
      order by o.updated_at limit ${limit}`,
  )

/** Fails an order that is still in `from`, journaling `order.failed` once. */
export const markFailed = (id: string, from: OrderState, error: string, nowMs: number) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql.withTransaction(
      Effect.gen(function* () {
        const rows = yield* sql<{ master: string; quote_identity_id: string }>`
          update orders set state = 'failed', error = ${error}, updated_at = ${new Date(nowMs)}
          where id = ${id} and state = ${from}
          returning master, quote_identity_id`
        const row = rows[0]
        if (row) {
          yield* appendJournal({
            kind: "order.failed",
            master: row.master,
            payload: { order_id: id, identity_id: row.quote_identity_id, error },
          })
        }
        return row !== undefined
      }),
    ),
  )

/**
 * Settles `funding` orders from chain facts: funded once the order's escrow index (finalized) holds the
 * order (v1 by order id, v2 by owner and order id) and the relayer has seen its fund transaction final too (the
 * two are read apart; a funded order never shows its fund as only `included`), failed when the fund transaction
 * reverted or was replaced (the relayer saw its nonce consumed by another transaction: the call did not happen;
 * an order the index holds went funded in the statement before). Each transition is journaled once; both facts
 * wake the order's funding entity.
 */
export const settleFundingOrders = (nowMs: number, orderId?: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql.withTransaction(
      Effect.gen(function* () {
        const now = new Date(nowMs)
        const only = orderId === undefined ? sql`` : sql`and o.id = ${orderId}`
        const funded = yield* sql<{ id: string; master: string; quote_identity_id: string }>`
          update orders o set state = 'funded', updated_at = ${now}
          where o.state = 'funding' ${only} and (
            (o.escrow_version = 1 and exists (
              select 1 from escrow_orders e where e.venue = o.venue and e.order_id = o.id))
            or (o.escrow_version = 2 and exists (
              select 1 from escrow_v2_orders e
              where e.venue = o.venue and e.owner = o.owner_address and e.order_id = o.id)))
          and not exists (
            select 1 from relayer_requests r
            where r.idempotency_key = 'fund:' || o.id and r.status in ('queued', 'pending', 'included'))
          returning o.id, o.master, o.quote_identity_id`
        const failed = yield* sql<{ id: string; master: string; quote_identity_id: string; error: string }>`
          update orders o set state = 'failed', updated_at = ${now},
            error = case when r.status = 'replaced'
              then 'the fund transaction was replaced (its nonce was consumed by another transaction); create a new order'
              else coalesce(nullif(r.revert_reason, ''), nullif(r.error, ''), 'the fund transaction failed') end
          from relayer_requests r
          where o.state = 'funding' ${only} and r.idempotency_key = 'fund:' || o.id
            and r.status in ('reverted', 'replaced')
          returning o.id, o.master, o.quote_identity_id, o.error`
        for (const o of funded) {
          yield* appendJournal({
            kind: "order.funded",
            master: o.master,
            payload: { order_id: o.id, identity_id: o.quote_identity_id },
          })
        }
        for (const o of failed) {
          yield* appendJournal({
            kind: "order.failed",
            master: o.master,
            payload: { order_id: o.id, identity_id: o.quote_identity_id, error: o.error },
          })
        }
        return funded.length + failed.length
      }),
    ),
  )

/**
 * A funded v2 order whose close was requested (sticky: no lock can be added, and every lock that ends later pays
 * its owner) and that holds nothing any more goes `closed`, journaled once. A sticky close can end with locks
 * outstanding, so this runs in the order's OrderFunding passes rather than only when the close is final.
 */
export const settleClosedV2Orders = (nowMs: number, orderId?: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql.withTransaction(
      Effect.gen(function* () {
        const closed = yield* sql<{ id: string; master: string; quote_identity_id: string }>`
        update orders o set state = 'closed', updated_at = ${new Date(nowMs)}
        from escrow_v2_orders e
        where o.state = 'funded' and o.escrow_version = 2 ${orderId === undefined ? sql`` : sql`and o.id = ${orderId}`}
          and e.venue = o.venue and e.owner = o.owner_address
          and e.order_id = o.id and e.close_requested and e.available = 0 and e.locked = 0
        returning o.id, o.master, o.quote_identity_id::text`
        for (const o of closed) {
          yield* appendJournal({
            kind: "order.closed",
            master: o.master,
            payload: { order_id: o.id, identity_id: o.quote_identity_id },
          })
        }
        return closed.length
      }),
    ),
  )

/**
 * Orders the OrderFunding entity (actors/OrderFunding.ts, one per order) still has to drive: awaiting_margin,
 * funding, and funded v2 orders whose sticky close the index shows (they go closed once drained). `venue`
 * restricts them to one venue (an escrow index page of that venue may have changed them).
 *
 * Runs on every index page with events and every adoption beat, on every runner, so it reads the live orders only
 * (partial indexes of migration 0041), never the history: the funded v2 orders each look up their index row by
 * key (the lateral's `limit 1` keeps the planner from hashing every closed order's row instead).
 */
export const fundingPendingOrders = (venue?: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<{ id: string }>`
      select o.id::text as id from orders o
      where o.state in ('awaiting_margin', 'funding') ${venue === undefined ? sql`` : sql`and o.venue = ${venue}`}
      union all
      select o.id::text from orders o
      cross join lateral (
        select 1 from escrow_v2_orders e
        where e.venue = o.venue and e.owner = o.owner_address and e.order_id = o.id and e.close_requested limit 1
      ) as e
      where o.state = 'funded' and o.escrow_version = 2
        ${venue === undefined ? sql`` : sql`and o.venue = ${venue}`}`.pipe(Effect.map((rows) => rows.map((r) => r.id))),
  )

/** What the OrderFunding entity of this order has left: the order's state and whether a sticky close is indexed. */
export const orderFundingState = (id: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<{ state: OrderState; close_requested: boolean }>`
      select o.state, coalesce(e.close_requested, false) as close_requested from orders o
      left join escrow_v2_orders e on o.escrow_version = 2 and e.venue = o.venue and e.owner = o.owner_address
        and e.order_id = o.id
      where o.id = ${id}`.pipe(Effect.map((rows) => rows[0])),
  )

export interface OrderTransaction {
  readonly kind: string
  readonly chain_id: number
  readonly hash: string | null
  readonly status: string
  readonly error: string
  readonly at: Date
}

/** The order's relayed transactions (funding so far), from the relayer's records. */
export const orderTransactions = (id: string) =>
  Effect.flatMap(
    SqlClient.SqlClient,
    (sql) => sql<OrderTransaction>`
      select function_name as kind, chain_id::int as chain_id, tx_hash as hash, status,
             coalesce(nullif(revert_reason, ''), error) as error, updated_at as at
      from relayer_requests where idempotency_key in (${`fund:${id}`}) order by id`,
  )
