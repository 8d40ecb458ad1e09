import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * Withdrawals relayed to the venues (WithdrawalDesk) and the Aster agents that act for linked accounts.
 *
 * - `withdrawals` (core columns from 0003, read by the ACCOUNT_IN_USE rule) gains what the desk needs: the
 *   preparation it came from, the exact typed data and signature it relays, the venue nonce (the key for
 *   evidence), the outcome (`venue_ref`, `error`, `relayed_at`) and a `revision` bumped by every change. At most
 *   one queued, submitting or unknown withdrawal per venue account, enforced here.
 * - `withdrawal_preparations`: what prepare built, keyed by its EIP-712 digest, so a submit can only relay typed
 *   data this service built for that account; one withdrawal per preparation.
 * - `withdrawal_nonces`: a strictly increasing nonce clock per venue account (two prepares in one millisecond
 *   must not share a venue nonce).
 * - `venue_agents`: one agent key per venue account, AES-256-GCM encrypted (src/Accounts/VenueAgents.ts).
 * - Sign-in and link challenges of the agent-approval venue carry the typed data they issued and, for a new
 *   agent, its encrypted key until the approval is verified.
 */
export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    create table withdrawal_preparations (
      id uuid primary key,
      master varchar(42) not null,
      venue text not null,
      address varchar(42) not null check (address = lower(address)),
      target text not null check (target in ('wallet', 'signer')),
      destination varchar(42) not null check (destination = lower(destination)),
      amount numeric(78, 0) not null check (amount > 0),
      venue_amount text not null,
      action text not null,
      nonce bigint not null,
      typed_data jsonb not null,
      digest varchar(66) not null unique,
      replayable_until timestamptz not null,
      expires_at timestamptz not null,
      created_at timestamptz not null
    )`
  yield* sql`create index withdrawal_preparations_account on withdrawal_preparations (venue, address, created_at)`
  yield* sql`
    create table withdrawal_nonces (
      venue text not null,
      address varchar(42) not null,
      last_ms bigint not null,
      primary key (venue, address)
    )`
  yield* sql`alter table withdrawals
    add column preparation_id uuid unique references withdrawal_preparations (id),
    add column target text check (target in ('wallet', 'signer')),
    add column nonce bigint,
    add column typed_data jsonb,
    add column signature text,
    add column venue_ref text,
    add column error text not null default '',
    add column revision bigint not null default 1,
    add column submitted_at timestamptz,
    add column relayed_at timestamptz,
    add column replayable_until timestamptz,
    add column next_check_at timestamptz,
    add column checks integer not null default 0`
  yield* sql`alter table withdrawals add constraint withdrawals_state
    check (state in ('queued', 'submitting', 'relayed', 'failed', 'unknown'))`
  // A queued, submitting or unknown withdrawal blocks another on the same venue account (spec: Withdrawal state).
  yield* sql`create unique index withdrawals_one_open on withdrawals (venue, address)
    where state in ('queued', 'submitting', 'unknown')`
  yield* sql`create index withdrawals_history on withdrawals (master, created_at desc, id desc)`
  yield* sql`create index withdrawals_relayed on withdrawals (venue, address, relayed_at) where state = 'relayed'`
  yield* sql`
    create table venue_agents (
      venue text not null,
      address varchar(42) not null check (address = lower(address)),
      agent_address varchar(42) not null check (agent_address = lower(agent_address)),
      key_ciphertext bytea not null,
      expires_at timestamptz,
      registered_at timestamptz,
      created_at timestamptz not null,
      updated_at timestamptz not null,
      primary key (venue, address)
    )`
  yield* sql`alter table auth_challenges
    add column venue text,
    add column typed_data jsonb,
    add column agent_address varchar(42),
    add column agent_key_ciphertext bytea`
  yield* sql`alter table link_challenges
    add column typed_data jsonb,
    add column agent_address varchar(42),
    add column agent_key_ciphertext bytea`
})
