import { SqlClient } from "@effect/sql"
import { Effect, Option } from "effect"

/** Withdrawal states that may still move funds (spec: they block unlinking and another withdrawal). */
export const OPEN_WITHDRAWAL_STATES = ["queued", "submitting", "unknown"] as const

export type AccountUse = "order" | "fill" | "withdrawal"

/**
 * The single place that decides whether a linked account is in use: an order that is not closed,
 * a fill that is not final (as payer, or on an order the account owns), or a queued, submitting or
 * unknown withdrawal. Returns the first use found.
 */
export const accountInUse = (venue: string, address: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) => {
    const owner = address.toLowerCase()
    return sql<{ use: AccountUse }>`
      (select 'order' as use from orders
        where venue = ${venue} and owner_address = ${owner} and state <> 'closed' limit 1)
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
