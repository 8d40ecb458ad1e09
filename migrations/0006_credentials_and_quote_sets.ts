import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * Maker credentials (`mk_…`, stored as SHA-256) bound one-to-one to a credential quote identity,
 * and quote sets: what a quote identity has published for an order. A set is admissible only while
 * it is active, its identity's lease is live at the set's generation and its cancel epoch is the
 * identity's current one (rotation and revocation bump the epoch to clear every quote at once).
 */
export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`alter table quote_identities add column lease_expiry_journaled_generation bigint`
  // A signer belongs to one credential identity forever: a new signer needs a new identity.
  yield* sql`create unique index quote_identities_credential_signer on quote_identities (signer)
    where kind = 'credential'`
  yield* sql`
    create table credentials (
      id uuid primary key,
      master varchar(42) not null references accounts (master),
      quote_identity_id uuid not null references quote_identities (id),
      token_hash bytea not null unique,
      scopes text[] not null,
      label text,
      created_at timestamptz not null,
      rotated_at timestamptz,
      revoked_at timestamptz
    )`
  yield* sql`create unique index credentials_one_live_per_identity on credentials (quote_identity_id)
    where revoked_at is null`
  yield* sql`
    create table quote_sets (
      id uuid primary key,
      order_id varchar(66) not null references orders (id),
      quote_identity_id uuid not null references quote_identities (id),
      identity_generation bigint not null,
      cancel_epoch bigint not null,
      sequence bigint not null,
      valid_until timestamptz not null,
      quote_size numeric(78, 0) not null,
      quotes jsonb not null,
      signature text not null,
      active boolean not null,
      created_at timestamptz not null,
      deactivated_at timestamptz,
      deactivated_reason text,
      unique (order_id, sequence)
    )`
  yield* sql`create index quote_sets_active on quote_sets (quote_identity_id) where active`
})
