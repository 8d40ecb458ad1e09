import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * Transfer intents (src/Transfers/Repo.ts, actors/TransferDesk.ts): an optional venue withdrawal `to: signer`
 * that prefunds the payer's wallet on the `from` chain, then a take.
 *
 * - One row per (master, client_transfer_id); the request's parameters are kept as given so an identical repeat
 *   answers the same intent and one with other parameters is a STATE_CONFLICT.
 * - `client_take_id` is derived from `client_transfer_id` (src/Domain/TransferIds.ts), so two racing identical
 *   creates reach the same take through the take's own idempotency.
 * - `preparation_id`: the withdrawal preparation answered as `withdrawal_preparation` when the payer's wallet was
 *   short at creation (`shortfall` base units); the withdrawal submitted from it is found through
 *   `withdrawals.preparation_id`, so nothing here has to be written when the client submits it.
 * - `take_id` is set once, in the transaction that creates the take, and only while `cancelled_at` is null; a
 *   cancel is only possible while `take_id` is null. Both take the row lock, so exactly one of them wins.
 * - `error` / `next_attempt_at`: the desk's last failed attempt at the take (no liquidity, chain down) and when it
 *   tries again.
 */
export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    create table transfers (
      id uuid primary key,
      master varchar(42) not null,
      client_transfer_id text not null,
      client_take_id text not null,
      from_venue text not null,
      to_venue text not null,
      amount_in numeric(78, 0) not null check (amount_in > 0),
      min_out numeric(78, 0) not null,
      max_parts int not null check (max_parts between 1 and 8),
      payer varchar(42) not null check (payer = lower(payer)),
      recipient varchar(42) not null check (recipient = lower(recipient)),
      from_chain_id bigint not null,
      to_chain_id bigint not null,
      shortfall numeric(78, 0),
      preparation_id uuid unique references withdrawal_preparations (id),
      take_id uuid unique references takes (id),
      error text not null default '',
      next_attempt_at timestamptz,
      cancelled_at timestamptz,
      created_at timestamptz not null,
      updated_at timestamptz not null,
      check ((shortfall is null) = (preparation_id is null)),
      check (take_id is null or cancelled_at is null)
    )`
  yield* sql`create unique index transfers_client_id on transfers (master, client_transfer_id)`
  yield* sql`create index transfers_listing on transfers (master, created_at desc, id desc)`
  // The desk's work: waiting for a withdrawal, or for the wallet, before the take.
  yield* sql`create index transfers_waiting on transfers (created_at) where take_id is null and cancelled_at is null`
})
