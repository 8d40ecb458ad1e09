import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * Accounts (one per master address), their browser quote identity, sign-in challenges, sessions,
 * linked venue accounts and link challenges. Tokens are stored only as SHA-256 digests.
 */
export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    create table accounts (
      master varchar(42) primary key check (master = lower(master)),
      access text not null check (access in ('granted', 'required', 'suspended')),
      created_at timestamptz not null
    )`
  yield* sql`
    create table quote_identities (
      id uuid primary key,
      master varchar(42) not null references accounts (master),
      signer varchar(42) not null check (signer = lower(signer)),
      kind text not null check (kind in ('browser', 'credential')),
      generation bigint not null default 0,
      lease_expires_at timestamptz not null,
      cancel_epoch bigint not null default 0,
      revoked_at timestamptz,
      created_at timestamptz not null
    )`
  yield* sql`create unique index quote_identities_one_browser on quote_identities (master) where kind = 'browser'`
  yield* sql`
    create table auth_challenges (
      nonce text primary key,
      address varchar(42) not null,
      message text not null,
      expires_at timestamptz not null,
      consumed_at timestamptz,
      created_at timestamptz not null
    )`
  yield* sql`
    create table sessions (
      id uuid primary key,
      token_hash bytea not null unique,
      master varchar(42) not null references accounts (master),
      created_at timestamptz not null,
      expires_at timestamptz not null,
      revoked_at timestamptz
    )`
  yield* sql`create index sessions_master on sessions (master)`
  yield* sql`
    create table linked_accounts (
      master varchar(42) not null references accounts (master),
      venue text not null,
      address varchar(42) not null check (address = lower(address)),
      venue_wallet varchar(42),
      expires_at timestamptz,
      linked_at timestamptz not null,
      primary key (master, venue)
    )`
  // One owner per venue account: an address links to at most one master on a venue.
  yield* sql`create unique index linked_accounts_venue_address on linked_accounts (venue, address)`
  yield* sql`
    create table link_challenges (
      nonce text primary key,
      master varchar(42) not null,
      venue text not null,
      address varchar(42) not null,
      message text not null,
      expires_at timestamptz not null,
      consumed_at timestamptz,
      created_at timestamptz not null
    )`
  // Token buckets: unlogged (a crash only refills budgets), one row per key.
  yield* sql`
    create unlogged table rate_buckets (
      key text primary key,
      tokens double precision not null,
      updated_at timestamptz not null
    )`
})
