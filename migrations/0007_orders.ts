import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * Orders as makers prepare them: the client's idempotency id, the quote identity whose signer is
 * fixed in the FundOrder, the exact sign items returned at creation (for recovery), the owner's
 * signatures once given, and the error of a failed funding.
 */
export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`alter table orders
    add column client_order_id text,
    add column quote_identity_id uuid references quote_identities (id),
    add column quote_signer varchar(42),
    add column fund_deadline bigint,
    add column to_sign jsonb,
    add column signatures jsonb,
    add column error text not null default ''`
  yield* sql`create unique index orders_client_id on orders (master, client_order_id)`
})
