import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * The chain layer's read side, written by the VenueWatcher of each venue:
 * - `chain_status`: one row per venue, what /health reports (shared by every runner), plus the
 *   watcher's cursor (the last block whose events are indexed, always at or below the finalized head);
 * - `chain_blocks`: the hash of every indexed block that held an event, and of every page end, so
 *   that a changed hash at or below finality is detected instead of silently rewritten;
 * - `escrow_events`: every ingested log, once (primary key venue + block + log index);
 * - the state rebuilt from those events: orders, zero-id balances, locks, payments, fills, closes,
 *   used close nonces and legacy offers. Every row carries the block number and hash of the event
 *   that last changed it.
 */
export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    create table chain_status (
      venue text primary key,
      chain_id bigint not null,
      latest_block bigint,
      latest_hash varchar(66),
      safe_block bigint,
      finalized_block bigint,
      finalized_hash varchar(66),
      finalized_at timestamptz,
      head_seen_at timestamptz,
      checked_at timestamptz,
      indexed_block bigint,
      indexed_hash varchar(66),
      error text not null default '',
      operator varchar(42),
      operator_gas numeric(78, 0),
      integrity_checked_at timestamptz,
      integrity_completed_at timestamptz,
      integrity_requested_at timestamptz,
      integrity_error text not null default '',
      integrity_mismatch boolean not null default false,
      updated_at timestamptz not null default now()
    )`
  yield* sql`
    create table chain_blocks (
      venue text not null,
      block_number bigint not null,
      block_hash varchar(66) not null,
      primary key (venue, block_number)
    )`
  yield* sql`
    create table escrow_events (
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
  yield* sql`create index escrow_events_tx on escrow_events (tx_hash)`
  yield* sql`
    create table escrow_orders (
      venue text not null,
      order_id varchar(66) not null,
      owner varchar(42) not null,
      operator varchar(42) not null,
      quote_signer varchar(42) not null,
      available numeric(78, 0) not null,
      locked numeric(78, 0) not null,
      created_block bigint not null,
      block_number bigint not null,
      block_hash varchar(66) not null,
      primary key (venue, order_id)
    )`
  yield* sql`create index escrow_orders_owner on escrow_orders (venue, owner)`
  yield* sql`
    create table escrow_balances (
      venue text not null,
      owner varchar(42) not null,
      balance numeric(78, 0) not null,
      block_number bigint not null,
      block_hash varchar(66) not null,
      primary key (venue, owner)
    )`
  yield* sql`
    create table escrow_locks (
      venue text not null,
      fill_id varchar(66) not null,
      order_id varchar(66) not null,
      payer varchar(42) not null,
      recipient varchar(42) not null,
      amount_out numeric(78, 0) not null,
      hashlock varchar(66) not null,
      expiry bigint not null,
      state text not null check (state in ('locked', 'claimed', 'refunded', 'cancelled')),
      refused boolean,
      secret varchar(66),
      created_block bigint not null,
      block_number bigint not null,
      block_hash varchar(66) not null,
      primary key (venue, fill_id)
    )`
  yield* sql`
    create table escrow_payments (
      venue text not null,
      fill_id varchar(66) not null,
      payer varchar(42) not null,
      payee varchar(42) not null,
      amount_in numeric(78, 0) not null,
      hashlock varchar(66) not null,
      expiry bigint not null,
      state text not null check (state in ('held', 'claimed', 'refunded')),
      secret varchar(66),
      created_block bigint not null,
      block_number bigint not null,
      block_hash varchar(66) not null,
      primary key (venue, fill_id)
    )`
  yield* sql`
    create table escrow_fills (
      venue text not null,
      fill_id varchar(66) not null,
      side text not null check (side in ('maker', 'taker')),
      fill jsonb not null,
      fill_digest varchar(66) not null,
      quote_set_digest varchar(66),
      quote_index bigint,
      tx_hash varchar(66) not null,
      block_number bigint not null,
      block_hash varchar(66) not null,
      primary key (venue, fill_id, side)
    )`
  yield* sql`
    create table escrow_closes (
      venue text not null,
      block_number bigint not null,
      log_index integer not null,
      order_id varchar(66) not null,
      owner varchar(42) not null,
      caller varchar(42) not null,
      amount numeric(78, 0) not null,
      dex bigint not null,
      to_margin boolean not null,
      refused boolean not null,
      by_operator boolean not null,
      nonce numeric(78, 0) not null,
      tx_hash varchar(66) not null,
      block_hash varchar(66) not null,
      primary key (venue, block_number, log_index)
    )`
  yield* sql`create index escrow_closes_order on escrow_closes (venue, order_id)`
  yield* sql`
    create table escrow_used_nonces (
      venue text not null,
      owner varchar(42) not null,
      nonce numeric(78, 0) not null,
      reason text not null check (reason in ('closed', 'invalidated')),
      block_number bigint not null,
      block_hash varchar(66) not null,
      primary key (venue, owner, nonce)
    )`
  yield* sql`
    create table legacy_offers (
      venue text not null,
      contract varchar(42) not null,
      offer_id numeric(78, 0) not null,
      owner varchar(42) not null,
      amount numeric(78, 0) not null,
      refund_at bigint not null,
      reclaimed boolean not null default false,
      created_block bigint not null,
      block_number bigint not null,
      block_hash varchar(66) not null,
      primary key (venue, contract, offer_id)
    )`
  yield* sql`create index legacy_offers_owner on legacy_offers (venue, owner)`
})
