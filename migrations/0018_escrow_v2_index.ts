import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * The v2 escrow index (settlement v2, SettlementEscrowV2 beside v1), written by the VenueWatcher of each venue whose
 * config names `escrow_v2` (actors/EscrowV2Ingest.ts), one transaction per block page like the v1 index:
 * - `escrow_v2_cursor`: per venue, the last block of the v2 escrow whose events are indexed (finalized only);
 * - `escrow_v2_events`: every ingested v2 log, once;
 * - orders keyed by (owner, order_id) (the contract's orderKey = keccak256(owner, orderId) kept beside, unique),
 *   zero-id balances, locks and payments keyed by Fill digest, and secrets once public (a claim or a reveal).
 * Every state row carries the block number and hash of the event that last changed it.
 */
export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    create table escrow_v2_cursor (
      venue text primary key,
      escrow varchar(42) not null,
      indexed_block bigint not null,
      indexed_hash varchar(66),
      updated_at timestamptz not null default now()
    )`
  yield* sql`
    create table escrow_v2_events (
      venue text not null,
      block_number bigint not null,
      log_index integer not null,
      block_hash varchar(66) not null,
      tx_hash varchar(66) not null,
      contract varchar(42) not null,
      event text not null,
      args jsonb not null,
      primary key (venue, block_number, log_index)
    )`
  yield* sql`
    create table escrow_v2_orders (
      venue text not null,
      owner varchar(42) not null,
      order_id varchar(66) not null,
      order_key varchar(66) not null,
      operator varchar(42) not null,
      quote_signer varchar(42) not null,
      available numeric(78, 0) not null,
      locked numeric(78, 0) not null,
      close_requested boolean not null default false,
      close_dex bigint,
      close_to_margin boolean,
      created_block bigint not null,
      block_number bigint not null,
      block_hash varchar(66) not null,
      primary key (venue, owner, order_id),
      unique (venue, order_key)
    )`
  yield* sql`
    create table escrow_v2_balances (
      venue text not null,
      owner varchar(42) not null,
      balance numeric(78, 0) not null,
      block_number bigint not null,
      block_hash varchar(66) not null,
      primary key (venue, owner)
    )`
  yield* sql`
    create table escrow_v2_locks (
      venue text not null,
      fill_digest varchar(66) not null,
      state text not null check (state in ('locked', 'claimed', 'refunded', 'cancelled')),
      order_key varchar(66) not null,
      owner varchar(42) not null,
      order_id varchar(66) not null,
      sequence numeric(20, 0) not null,
      payer varchar(42) not null,
      recipient varchar(42) not null,
      amount_in numeric(78, 0) not null,
      amount_out numeric(78, 0) not null,
      dex bigint not null,
      to_margin boolean not null,
      hashlock varchar(66) not null,
      hashlock_index bigint not null,
      expiry bigint not null,
      taker_expiry bigint not null,
      pay_key varchar(42) not null,
      pay_by bigint not null,
      quote_set_digest varchar(66),
      quote_index numeric(78, 0),
      refused boolean,
      to_owner boolean,
      secret varchar(66),
      fill jsonb,
      created_block bigint not null,
      tx_hash varchar(66) not null,
      block_number bigint not null,
      block_hash varchar(66) not null,
      primary key (venue, fill_digest)
    )`
  yield* sql`create index escrow_v2_locks_order on escrow_v2_locks (venue, owner, order_id)`
  yield* sql`
    create table escrow_v2_payments (
      venue text not null,
      fill_digest varchar(66) not null,
      state text not null check (state in ('held', 'claimed', 'refunded')),
      payer varchar(42) not null,
      payee varchar(42) not null,
      amount_in numeric(78, 0) not null,
      hashlock varchar(66) not null,
      expiry bigint not null,
      pay_key varchar(42) not null,
      pay_by bigint not null,
      pay_take_digest varchar(66),
      secret varchar(66),
      fill jsonb,
      created_block bigint not null,
      tx_hash varchar(66) not null,
      block_number bigint not null,
      block_hash varchar(66) not null,
      primary key (venue, fill_digest)
    )`
  yield* sql`
    create table escrow_v2_secrets (
      venue text not null,
      fill_digest varchar(66) not null,
      event text not null check (event in ('Claimed', 'PaymentClaimed')),
      hashlock varchar(66) not null,
      secret varchar(66) not null,
      tx_hash varchar(66) not null,
      block_number bigint not null,
      block_hash varchar(66) not null,
      primary key (venue, fill_digest, event)
    )`
  yield* sql`create index escrow_v2_secrets_hashlock on escrow_v2_secrets (hashlock)`
})
