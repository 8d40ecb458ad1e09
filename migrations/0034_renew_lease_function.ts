import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * A maker credential's lease renewal as one function call (src/QuoteIdentities/Repo.ts renewLeaseWithCredential).
 *
 * Why a function: the renewal is the hottest statement a maker bot causes (a renewal every few seconds per quote
 * identity), and as one ad-hoc statement PostgreSQL planned its five CTEs on every call: 0.5-0.6 ms of planning
 * against ~0.3 ms of execution (EXPLAIN ANALYZE, 32 identities). PL/pgSQL caches the plan per connection, which
 * halves the database's CPU per renewal (test/bench/lease.ts).
 *
 * The body is the statement it replaces, word for word in meaning: resolve the live credential by its token's
 * SHA-256; take one token of its request budget (the rate_buckets upsert of src/Sql/RateLimiter.ts
 * takeTokenStatement, charged whatever follows); renew identity p_id (the generation advances after expiry, and sets
 * of older generations are deactivated, as renewalCtes does for a session's renewal) only when the budget allowed
 * it, the credential has the `quote` scope and is bound to p_id. Called outside a transaction it is one
 * transaction, as the statement was. `#variable_conflict use_column`: the output names are also column names.
 */
export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql.unsafe(`
    create function renew_lease_with_credential(
      p_id uuid, p_ttl_seconds float8, p_token_hash bytea, p_rate float8, p_burst float8)
    returns table (credential_id text, allowed boolean, scoped boolean, bound boolean, generation text,
                   lease_expires_at timestamptz, remaining_ms float8)
    language plpgsql volatile as $fn$
    #variable_conflict use_column
    begin
      return query
      with c as (
        select id, quote_identity_id, scopes from credentials where token_hash = p_token_hash and revoked_at is null
      ), taken as (
        insert into rate_buckets as b (key, tokens, updated_at)
        select 'credential:' || c.id::text, p_burst - 1, clock_timestamp() from c
        on conflict (key) do update set
          tokens = least(p_burst, b.tokens + extract(epoch from clock_timestamp() - b.updated_at) * p_rate) - 1,
          updated_at = clock_timestamp()
        where least(p_burst, b.tokens + extract(epoch from clock_timestamp() - b.updated_at) * p_rate) >= 1
        returning b.key
      ), renewed as (
        update quote_identities q set
          generation = case when q.kind = 'credential' and q.lease_expires_at <= now()
            then q.generation + 1 else q.generation end,
          lease_expires_at = case when q.kind = 'browser' then q.lease_expires_at
            else now() + make_interval(secs => p_ttl_seconds) end
        where q.id = p_id and q.revoked_at is null
          and exists (select 1 from c, taken where c.quote_identity_id = p_id and 'quote' = any(c.scopes))
        returning q.generation, q.lease_expires_at
      ), cleared as (
        update quote_sets s set active = false, deactivated_at = now(), deactivated_reason = 'lease_expired'
        from renewed r
        where s.quote_identity_id = p_id and s.active and s.identity_generation < r.generation
      )
      select (select c.id::text from c), exists (select 1 from taken),
             coalesce((select 'quote' = any(c.scopes) from c), false),
             coalesce((select c.quote_identity_id = p_id from c), false),
             r.generation::text, r.lease_expires_at,
             (extract(epoch from r.lease_expires_at - now()) * 1000)::float8
      from (select 1) one left join renewed r on true;
    end
    $fn$`)
})
