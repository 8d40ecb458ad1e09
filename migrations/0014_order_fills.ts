import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * What an order has delivered and been paid through settled fills (actors/Settlement.ts): `filled` sums the
 * fills' amount_out (the order's token, maker venue) and `received` their amount_in (the taker venue's token),
 * both in base units. They advance in the same transaction that marks a fill settled, so each fill counts once.
 */
export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`alter table orders
    add column filled numeric(78, 0) not null default 0,
    add column received numeric(78, 0) not null default 0`
})
