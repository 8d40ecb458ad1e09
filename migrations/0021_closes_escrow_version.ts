import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * Closes on the v2 escrow (settlement v2; src/Chain/OrderEscrow.ts). `closes.escrow_version` names the escrow a
 * close was relayed to (1 = the venue's `escrow`, 2 = its `escrow_v2`), so the close queue reads finality from the
 * right index and GET /v1/escrow flags the right order as closing. An owner may hold the same order id (the zero id
 * at least) on both escrows of a venue, so "one pending close per order" becomes per (venue, escrow version, order,
 * owner).
 */
export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`alter table closes
    add column escrow_version smallint not null default 1 check (escrow_version in (1, 2))`
  yield* sql`drop index closes_one_pending`
  yield* sql`create unique index closes_one_pending on closes (venue, escrow_version, order_id, owner)
    where state = 'pending'`
})
