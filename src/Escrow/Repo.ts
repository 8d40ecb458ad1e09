import { SqlClient } from "@effect/sql"
import { Effect, Option } from "effect"
import { isZeroOrder, ZERO_ADDRESS, ZERO_ORDER_ID } from "../Domain/Close.ts"

/**
 * The escrow as a master sees it (GET /v1/escrow, the close routes): the orders and zero-id balances that the
 * master's linked addresses own, from the chain indexes (written up to the finalized head only) of both escrows of
 * each venue — v1 (escrow_orders, escrow_balances) and v2 (escrow_v2_orders keyed by (owner, order id),
 * escrow_v2_balances) — each with its `closing` flag from the close queue (a close of the same escrow version).
 * On each venue the owner is the address linked on that venue.
 */

export interface EscrowOrderRow {
  readonly venue: string
  /** The escrow holding it (src/Chain/OrderEscrow.ts); not part of the API's shape. */
  readonly escrow_version: 1 | 2
  readonly order_id: string
  readonly owner: string
  readonly available: string
  readonly locked: string
  readonly operator: string
  readonly closing: boolean
}

/**
 * Orders that hold funds (available or locked) or have a close pending, and non-zero balances (or one with a
 * close pending), of the master's linked address on each of `venues`, on both escrows; ordered by venue, then
 * order id (the zero id first), then escrow version.
 */
export const escrowOrdersOf = (master: string, venues: ReadonlyArray<string>) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    venues.length === 0
      ? Effect.succeed([] as ReadonlyArray<EscrowOrderRow>)
      : sql<EscrowOrderRow>`
          with linked as (
            select venue, lower(address) as owner from linked_accounts
            where master = ${master.toLowerCase()} and ${sql.in("venue", venues as Array<string>)}
          ),
          pending as (
            select c.venue, c.escrow_version, c.order_id, c.owner
            from closes c join linked l on l.venue = c.venue and l.owner = c.owner
            where c.state = 'pending'
          )
          select o.venue, 1 as escrow_version, o.order_id, o.owner, o.available::text, o.locked::text, o.operator,
                 (p.order_id is not null) as closing
          from escrow_orders o
          join linked l on l.venue = o.venue and l.owner = o.owner
          left join pending p
            on p.venue = o.venue and p.escrow_version = 1 and p.order_id = o.order_id and p.owner = o.owner
          where o.available > 0 or o.locked > 0 or p.order_id is not null
          union all
          select b.venue, 1, ${ZERO_ORDER_ID} as order_id, b.owner, b.balance::text, '0', ${ZERO_ADDRESS},
                 (p.order_id is not null) as closing
          from escrow_balances b
          join linked l on l.venue = b.venue and l.owner = b.owner
          left join pending p
            on p.venue = b.venue and p.escrow_version = 1 and p.order_id = ${ZERO_ORDER_ID} and p.owner = b.owner
          where b.balance > 0 or p.order_id is not null
          union all
          select o.venue, 2, o.order_id, o.owner, o.available::text, o.locked::text, o.operator,
                 (p.order_id is not null) as closing
          from escrow_v2_orders o
          join linked l on l.venue = o.venue and l.owner = o.owner
          left join pending p
            on p.venue = o.venue and p.escrow_version = 2 and p.order_id = o.order_id and p.owner = o.owner
          where o.available > 0 or o.locked > 0 or p.order_id is not null
          union all
          select b.venue, 2, ${ZERO_ORDER_ID} as order_id, b.owner, b.balance::text, '0', ${ZERO_ADDRESS},
                 (p.order_id is not null) as closing
          from escrow_v2_balances b
          join linked l on l.venue = b.venue and l.owner = b.owner
          left join pending p
            on p.venue = b.venue and p.escrow_version = 2 and p.order_id = ${ZERO_ORDER_ID} and p.owner = b.owner
          where b.balance > 0 or p.order_id is not null
          order by venue, order_id, escrow_version`,
  )

/**
 * One order (or, for the zero id, `owner`'s balance) of a venue's escrow `version` as indexed, with its closing
 * flag. None when the index has no such order, or for the zero id no balance row. A v1 order is found by id alone
 * (the caller checks its owner); a v2 order by (owner, id), as v2 keys them.
 */
export const escrowOrderOf = (venue: string, orderId: string, owner: string, version: 1 | 2 = 1) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) => {
    const id = orderId.toLowerCase()
    const who = owner.toLowerCase()
    const closing = sql`exists (select 1 from closes c
      where c.venue = ${venue} and c.escrow_version = ${version} and c.order_id = ${id} and c.owner = ${who}
        and c.state = 'pending') as closing`
    const query =
      version === 2
        ? isZeroOrder(id)
          ? sql<EscrowOrderRow>`
              select venue, 2 as escrow_version, ${ZERO_ORDER_ID} as order_id, owner, balance::text as available,
                     '0' as locked, ${ZERO_ADDRESS} as operator, ${closing}
              from escrow_v2_balances where venue = ${venue} and owner = ${who}`
          : sql<EscrowOrderRow>`
              select venue, 2 as escrow_version, order_id, owner, available::text, locked::text, operator, ${closing}
              from escrow_v2_orders where venue = ${venue} and owner = ${who} and order_id = ${id}`
        : isZeroOrder(id)
          ? sql<EscrowOrderRow>`
              select venue, 1 as escrow_version, ${ZERO_ORDER_ID} as order_id, owner, balance::text as available,
                     '0' as locked, ${ZERO_ADDRESS} as operator, ${closing}
              from escrow_balances where venue = ${venue} and owner = ${who}`
          : sql<EscrowOrderRow>`
              select venue, 1 as escrow_version, order_id, owner, available::text, locked::text, operator, ${closing}
              from escrow_orders where venue = ${venue} and order_id = ${id}`
    return query.pipe(Effect.map((rows) => Option.fromNullable(rows[0])))
  })
