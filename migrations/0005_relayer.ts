import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * The transaction relayer (actors/TxRelayer.ts), the only nonce authority per (venue, signer):
 * - `relayer_requests`: one row per idempotency key (submission survives crashes: a request is a
 *   row before anything else happens). Status: queued → pending (signed, nonce allocated) →
 *   included → final | reverted | replaced (our nonce consumed by a transaction that is none of
 *   ours: dropped and replaced). A simulation revert ends a queued request as `reverted` with
 *   `simulated = true` and no nonce (no gas spent).
 * - `relayer_attempts`: every signed attempt (raw bytes, hash, fees), persisted before it is
 *   broadcast; replacements add attempts at the same nonce, so a receipt of any of them is ours.
 * - `relayer_nonces`: the next nonce per (venue, signer), locked while a nonce is allocated.
 */
export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    create table relayer_nonces (
      venue text not null,
      signer varchar(42) not null check (signer = lower(signer)),
      next_nonce bigint not null,
      primary key (venue, signer)
    )`
  yield* sql`
    create table relayer_requests (
      id bigserial primary key,
      idempotency_key text not null unique,
      venue text not null,
      chain_id bigint not null,
      signer varchar(42) not null check (signer = lower(signer)),
      target varchar(42) not null check (target = lower(target)),
      function_name text not null,
      calldata text not null,
      value numeric(78, 0) not null default 0,
      master varchar(42),
      status text not null
        check (status in ('queued', 'pending', 'included', 'final', 'reverted', 'replaced')),
      simulated boolean not null default false,
      nonce bigint,
      gas_limit numeric(78, 0),
      tx_hash varchar(66),
      block_number bigint,
      block_hash varchar(66),
      gas_used numeric(78, 0),
      revert_reason text,
      error text not null default '',
      created_at timestamptz not null default now(),
      updated_at timestamptz not null default now(),
      included_at timestamptz,
      final_at timestamptz,
      unique (venue, signer, nonce)
    )`
  yield* sql`
    create index relayer_requests_open on relayer_requests (venue, signer, id)
    where status in ('queued', 'pending', 'included')`
  yield* sql`
    create table relayer_attempts (
      tx_hash varchar(66) primary key,
      request_id bigint not null references relayer_requests (id),
      attempt integer not null,
      nonce bigint not null,
      raw_tx text not null,
      max_fee_per_gas numeric(78, 0) not null,
      max_priority_fee_per_gas numeric(78, 0) not null,
      gas_limit numeric(78, 0) not null,
      sent_block bigint,
      broadcasts integer not null default 0,
      broadcast_at timestamptz,
      created_at timestamptz not null default now(),
      unique (request_id, attempt)
    )`
})
