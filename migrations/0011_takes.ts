import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * Takes and their fills (DESIGN §10; src/Takes/Repo.ts, actors/Settlement.ts).
 *
 * `takes`: one row per (master, client_take_id). The request's parameters are kept as given, so a repeat with the
 * same parameters answers the same take and one with others is a STATE_CONFLICT. `to_sign` holds the exact sign
 * items answered at creation (one `permit` for Σ amount_in to the taker escrow, one `margin_move` per fill) so
 * GET /v1/takes/{id} can answer them again for recovery. `pay_deadline`: an unsigned take's reservations release
 * at this instant (database time), whether or not a sweep has marked it `expired` yet.
 *
 * Take `state`: reserved (answered, unsigned) → signed (signatures stored, Settlement drives the fills) →
 * settled (every fill settled) | partial (every fill final, some not settled) | failed (no fill settled);
 * reserved → expired (pay window passed unsigned).
 *
 * `fills` (core columns in 0003): one row per fill. `fill_key` is the on-chain bytes32 fillId (the fill's UUID
 * as 16 bytes, left-padded with zeros). `fill` is the signed Fill message in wire form (decimal strings,
 * lowercase addresses) exactly as answered in `to_sign`; `signature` the payer's signature once given.
 * The secret behind `hashlock` is generated at creation and kept only as `secret_ciphertext` (AES-256-GCM, see
 * src/Settlement/FillSecrets.ts); it is revealed on chain by `claim` only.
 *
 * Fill `state` (final = true for the last five):
 *   reserved → signed → locking → locked → paying → paid → claiming → claimed → settled
 *   reserved → expired          (pay window passed before the signatures came: nothing on chain)
 *   locking  → failed           (lock reverted: nothing moved)
 *   locked/paying → cancelled   (payment reverted or never final: cancelLock returned the order's funds)
 *   any on-chain stage → refunded (lock and/or payment expired: refund / refundPayment)
 * `*_key` columns are the TxRelayer idempotency keys of the fill's transactions (lock, pay, claim, claimPayment,
 * cancelLock, refund, refundPayment), set before the request is submitted.
 */
export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    create table takes (
      id uuid primary key,
      master varchar(42) not null,
      client_take_id text not null,
      from_venue text not null,
      to_venue text not null,
      amount_in numeric(78, 0) not null,
      min_out numeric(78, 0) not null,
      payer varchar(42) not null check (payer = lower(payer)),
      recipient varchar(42) not null check (recipient = lower(recipient)),
      max_parts int not null,
      total_in numeric(78, 0) not null,
      total_out numeric(78, 0) not null,
      state text not null,
      pay_deadline timestamptz not null,
      to_sign jsonb not null,
      permit_signature text,
      signed_at timestamptz,
      error text not null default '',
      created_at timestamptz not null,
      updated_at timestamptz not null
    )`
  yield* sql`create unique index takes_client_id on takes (master, client_take_id)`
  yield* sql`create index takes_open on takes (state, pay_deadline) where state in ('reserved', 'signed')`
  yield* sql`
    alter table fills
      add column fill_key varchar(66) not null,
      add column maker_venue text not null,
      add column sequence bigint not null,
      add column quote_index int not null,
      add column quote_identity_id uuid not null,
      add column amount_in numeric(78, 0) not null,
      add column amount_out numeric(78, 0) not null,
      add column payee varchar(42) not null,
      add column recipient varchar(42) not null,
      add column hashlock varchar(66) not null,
      add column secret_ciphertext bytea not null,
      add column maker_expiry bigint not null,
      add column taker_expiry bigint not null,
      add column fill jsonb not null,
      add column signature text,
      add column lock_key text,
      add column pay_key text,
      add column claim_key text,
      add column claim_payment_key text,
      add column cancel_key text,
      add column refund_key text,
      add column refund_payment_key text,
      add column revealed_at timestamptz,
      add column settled_at timestamptz,
      add column error text not null default ''`
  yield* sql`create unique index fills_fill_key on fills (fill_key)`
  yield* sql`create index fills_take on fills (take_id)`
  yield* sql`create index fills_set on fills (order_id, sequence) where not final or state = 'settled'`
  yield* sql`create index fills_open on fills (state) where not final`
  yield* sql`create index fills_settled on fills (settled_at desc, id desc) where state = 'settled'`
})
