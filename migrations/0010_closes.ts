import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * Closes of escrow orders (src/Escrow/Closes.ts, actors/CloseQueue.ts):
 * - `close_queues`: one row per (owner, chain). Every enqueue locks it (`select … for update`) before it counts
 *   the owner's pending closes and inserts, so the limit of 10 pending closes per owner and chain holds across
 *   any number of processes.
 * - `closes`: one row per accepted close. `kind` signed (the owner's CloseOffer, relayed as `closeWithSig`) or
 *   managed (`operatorClose` by this service's operator). State: pending (the order's `closing` flag) → final |
 *   reverted | expired; an expired close whose transaction still ends later records that outcome (expired →
 *   final | reverted). Signed closes are de-duplicated by the CloseOffer's EIP-712 digest and by (escrow, owner,
 *   nonce), never by signature bytes. At most one pending close per (venue, order, owner). `relay_key` is the
 *   TxRelayer idempotency key of its transaction.
 */
export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    create table close_queues (
      owner varchar(42) not null check (owner = lower(owner)),
      chain_id bigint not null,
      primary key (owner, chain_id)
    )`
  yield* sql`
    create table closes (
      id uuid primary key,
      kind text not null check (kind in ('signed', 'managed')),
      master varchar(42) not null,
      venue text not null,
      chain_id bigint not null,
      escrow varchar(42) not null check (escrow = lower(escrow)),
      order_id varchar(66) not null check (order_id = lower(order_id)),
      owner varchar(42) not null check (owner = lower(owner)),
      amount numeric(78, 0) not null,
      dex bigint not null,
      to_margin boolean not null,
      nonce numeric(78, 0),
      deadline bigint,
      digest varchar(66) unique,
      signature text,
      relay_key text not null unique,
      state text not null check (state in ('pending', 'final', 'reverted', 'expired')),
      refused boolean,
      released numeric(78, 0),
      tx_hash varchar(66),
      error text not null default '',
      created_at timestamptz not null,
      updated_at timestamptz not null,
      ended_at timestamptz,
      check ((kind = 'signed') = (digest is not null and nonce is not null and deadline is not null))
    )`
  yield* sql`create unique index closes_one_pending on closes (venue, order_id, owner) where state = 'pending'`
  yield* sql`create unique index closes_owner_nonce on closes (escrow, owner, nonce) where nonce is not null`
  yield* sql`create index closes_queue on closes (owner, chain_id) where state = 'pending'`
  yield* sql`create index closes_open on closes (created_at) where state in ('pending', 'expired')`
  yield* sql`create index closes_master on closes (master, created_at)`
})
