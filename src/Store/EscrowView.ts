import { SqlClient } from "@effect/sql"
import { Effect, Option } from "effect"
import { isZeroOrder, ZERO_ADDRESS, ZERO_ORDER_ID } from "../Domain/Close.ts"

/**
 * The escrow as a master sees it (GET /v1/escrow, the close routes): the orders and zero-id balances that the
 * master's linked addresses own, from the chain index (written up to the finalized head only), each with its
 * `closing` flag from the close queue. On each venue the owner is the address linked on that venue.
 */

export interface EscrowOrderRow {
  readonly venue: string
  readonly order_id: string
  readonly owner: string
  readonly available: string
  readonly locked: string
  readonly operator: string
  readonly closing: boolean
}

/**
 * Orders that hold funds (available or locked) or have a close pending, and non-zero balances (or one with a
 * close pending), of the master's linked address on each of `venues`; ordered by venue, then order id (the
 * zero id first).
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
            select c.venue, c.order_id, c.owner from closes c join linked l on l.venue = c.venue and l.owner = c.owner
            where c.state = 'pending'
          )
          select o.venue, o.order_id, o.owner, o.available::text, o.locked::text, o.operator,
                 (p.order_id is not null) as closing
          from escrow_orders o
          join linked l on l.venue = o.venue and l.owner = o.owner
          left join pending p on p.venue = o.venue and p.order_id = o.order_id and p.owner = o.owner
          where o.available > 0 or o.locked > 0 or p.order_id is not null
          union all
          select b.venue, ${ZERO_ORDER_ID} as order_id, b.owner, b.balance::text, '0', ${ZERO_ADDRESS},
                 (p.order_id is not null) as closing
          from escrow_balances b
          join linked l on l.venue = b.venue and l.owner = b.owner
          left join pending p on p.venue = b.venue and p.order_id = ${ZERO_ORDER_ID} and p.owner = b.owner
          where b.balance > 0 or p.order_id is not null
          order by venue, order_id`,
  )

/**
 * One order (or, for the zero id, `owner`'s balance) of a venue as indexed, with its closing flag. None when the
 * index has no such order, or for the zero id no balance row.
 */
export const escrowOrderOf = (venue: string, orderId: string, owner: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) => {
    const id = orderId.toLowerCase()
    const who = owner.toLowerCase()
    const closing = sql`exists (select 1 from closes c
      where c.venue = ${venue} and c.order_id = ${id} and c.owner = ${who} and c.state = 'pending') as closing`
    const query = isZeroOrder(id)
      ? sql<EscrowOrderRow>`
          select venue, ${ZERO_ORDER_ID} as order_id, owner, balance::text as available, '0' as locked,
                 ${ZERO_ADDRESS} as operator, ${closing}
          from escrow_balances where venue = ${venue} and owner = ${who}`
      : sql<EscrowOrderRow>`
          select venue, order_id, owner, available::text, locked::text, operator, ${closing}
          from escrow_orders where venue = ${venue} and order_id = ${id}`
    return query.pipe(Effect.map((rows) => Option.fromNullable(rows[0])))
  })
