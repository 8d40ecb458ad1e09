import { SqlClient } from "@effect/sql"
import { Effect, Option } from "effect"

/** Withdrawal states that may still move funds (spec: they block unlinking and another withdrawal). */
export const OPEN_WITHDRAWAL_STATES = ["queued", "submitting", "unknown"] as const

export type AccountUse = "order" | "fill" | "withdrawal"

/**
 * How long after an order's fund deadline (Unix seconds, the FundOrder's) a `preparing` or `failed` order stops
 * using its account, when its escrow holds nothing for it: past the deadline `fund` reverts, and an hour lets any
 * fund mined before it reach the finalized head the index reads. Without this, an order never signed (or whose fund
 * or venue transfer failed) would block unlinking forever: nothing closes such an order.
 */
export const STALE_ORDER_GRACE_SECONDS = 3600

/**
 * The single place that decides whether a linked account is in use: an order that is not closed (except a
 * `preparing` or `failed` one past its fund deadline and grace with nothing escrowed for it, v1 or v2), a fill that
 * is not final (as payer, or on an order the account owns), or a queued, submitting or unknown withdrawal. Returns
 * the first use found. `nowMs`: the caller's Clock.
 */
export const accountInUse = (venue: string, address: string, nowMs: number) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) => {
    const owner = address.toLowerCase()
    const staleBefore = Math.floor(nowMs / 1000) - STALE_ORDER_GRACE_SECONDS
    return sql<{ use: AccountUse }>`
      (select 'order' as use from orders o
        where o.venue = ${venue} and o.owner_address = ${owner} and o.state <> 'closed'
          and not (o.state in ('preparing', 'failed') and o.fund_deadline < ${staleBefore}
            and not exists (select 1 from escrow_orders e where e.venue = o.venue and e.order_id = o.id
              and e.available + e.locked > 0)
            and not exists (select 1 from escrow_v2_orders e where e.venue = o.venue and e.owner = o.owner_address
              and e.order_id = o.id and e.available + e.locked > 0))
        limit 1)
      union all
      (select 'fill' from fills f
        where not f.final and ((f.taker_venue = ${venue} and f.payer = ${owner})
          or f.order_id in (select id from orders where venue = ${venue} and owner_address = ${owner}))
        limit 1)
      union all
      (select 'withdrawal' from withdrawals
        where venue = ${venue} and address = ${owner} and state in ${sql.in(OPEN_WITHDRAWAL_STATES)} limit 1)
      limit 1`.pipe(Effect.map((rows) => Option.fromNullable(rows[0]?.use)))
  })
