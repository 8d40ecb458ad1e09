import { SqlClient, type Statement } from "@effect/sql"
import { Effect, Option } from "effect"
import { identityFades } from "../Settlement/FadeRecord.ts"
import { lockFadeWindows } from "../Sql/FadeTotals.ts"
import { appendJournal } from "../Sql/Journal.ts"

export interface QuoteIdentityRow {
  readonly id: string
  readonly master: string
  readonly signer: string
  readonly kind: "browser" | "credential"
  readonly generation: string
  readonly lease_expires_at: Date
  readonly cancel_epoch: string
  readonly revoked_at: Date | null
}

const columns = "id, master, signer, kind, generation::text, lease_expires_at, cancel_epoch::text, revoked_at"

/**
 * A credential identity starts with an expired lease at generation 0: nothing it signs is
 * admissible until the first renewal (which advances the generation to 1).
 */
export const insertCredentialIdentity = (p: { id: string; master: string; signer: string; nowMs: number }) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql.withTransaction(
      Effect.gen(function* () {
        const now = new Date(p.nowMs)
        const rows = yield* sql<QuoteIdentityRow>`
          insert into quote_identities (id, master, signer, kind, lease_expires_at, created_at)
          values (${p.id}, ${p.master}, ${p.signer}, 'credential', ${now}, ${now})
          on conflict do nothing
          returning ${sql.unsafe(columns)}`
        if (rows[0]) {
          yield* appendJournal({
            kind: "quote_identity.created",
            master: p.master,
            payload: { identity_id: p.id, signer: p.signer, kind: "credential" },
          })
        }
        return Option.fromNullable(rows[0])
      }),
    ),
  )

export const findQuoteIdentity = (id: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<QuoteIdentityRow>`select ${sql.unsafe(columns)} from quote_identities where id = ${id}`.pipe(
      Effect.map((rows) => Option.fromNullable(rows[0])),
    ),
  )

export type RenewOutcome =
  | {
      readonly _tag: "Renewed"
      readonly generation: string
      readonly lease_expires_at: Date
      /** Database time left until the expiry (the TTL, less nothing: `now()` is the statement's). */
      readonly remaining_ms: number
    }
  | { readonly _tag: "NotFound" }
  | { readonly _tag: "Revoked" }

/**
 * Renews the lease in database time, in one statement and one round trip (no explicit transaction:
 * a single statement is atomic). Before expiry the generation is kept; after it the generation
 * advances, and in the same statement the sets of older generations are deactivated, so quote sets
 * signed for an old generation never become admissible again, whether or not the keeper saw the
 * expiry. A browser identity's lease is the far future. `master`, when given, restricts the
 * identity to that master's (a session); a credential's binding is checked by the caller.
 * A revoked identity is never renewed: revocation and renewal lock the same row, so they
 * serialise, and a renewal that waited for a revocation re-checks `revoked_at` and changes nothing.
 */
export const renewLease = (id: string, ttlSeconds: number, master: string | null = null) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<{ found: boolean; generation: string | null; lease_expires_at: Date | null; remaining_ms: number | null }>`
      with ${renewalCtes(sql, id, ttlSeconds, sql`(${master}::text is null or master = ${master})`)}
      select exists (select 1 from quote_identities
                     where id = ${id} and (${master}::text is null or master = ${master})) as found,
             r.generation::text as generation, r.lease_expires_at,
             (extract(epoch from r.lease_expires_at - now()) * 1000)::float8 as remaining_ms
      from (select 1) one left join renewed r on true`.pipe(
      Effect.map(([row]): RenewOutcome => {
        if (row?.generation != null && row.lease_expires_at !== null) {
          return {
            _tag: "Renewed",
            generation: row.generation,
            lease_expires_at: row.lease_expires_at,
            remaining_ms: row.remaining_ms ?? 0,
          }
        }
        return row?.found ? { _tag: "Revoked" } : { _tag: "NotFound" }
      }),
    ),
  )

export type CredentialRenewal =
  /** No live credential has this token (unknown, rotated away or revoked). */
  | { readonly _tag: "Unknown" }
  /** The credential's request budget is spent: nothing renewed. */
  | { readonly _tag: "BudgetSpent"; readonly credentialId: string }
  /** Charged, but the credential lacks the `quote` scope, or is bound to another identity: nothing renewed. */
  | { readonly _tag: "Unscoped" }
  | { readonly _tag: "Unbound" }
  | RenewOutcome

/**
 * A credential's renewal in one statement and one round trip (DESIGN §4): resolves the live credential by its
 * token's SHA-256, takes one token of its request budget (charged whatever follows, as any authenticated request),
 * and renews identity `id` only when the budget allowed it, the credential has the `quote` scope and is bound to
 * `id`. Revoking a credential revokes its identity, so a live credential's identity renews unless revoked in
 * between (then Revoked). The statement is the function renew_lease_with_credential (migrations/0034: the same
 * rate_buckets upsert as takeTokenStatement and the same renewal as renewalCtes, with its plan cached).
 */
export const renewLeaseWithCredential = (
  id: string,
  ttlSeconds: number,
  tokenHash: Buffer,
  bucket: { readonly rate: number; readonly burst: number },
) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<{
      credential_id: string | null
      allowed: boolean
      scoped: boolean
      bound: boolean
      generation: string | null
      lease_expires_at: Date | null
      remaining_ms: number | null
    }>`select * from renew_lease_with_credential(${id}, ${ttlSeconds}, ${tokenHash}, ${bucket.rate}, ${bucket.burst})`.pipe(
      Effect.map(([row]): CredentialRenewal => {
        if (row === undefined || row.credential_id === null) return { _tag: "Unknown" }
        if (!row.allowed) return { _tag: "BudgetSpent", credentialId: row.credential_id }
        if (!row.scoped) return { _tag: "Unscoped" }
        if (!row.bound) return { _tag: "Unbound" }
        if (row.generation === null || row.lease_expires_at === null) return { _tag: "Revoked" }
        return {
          _tag: "Renewed",
          generation: row.generation,
          lease_expires_at: row.lease_expires_at,
          remaining_ms: row.remaining_ms ?? 0,
        }
      }),
    ),
  )

/**
 * The renewal as two CTEs, `renewed` (generation, lease_expires_at of the renewed identity; no row
 * when it is revoked or `condition` fails) and the deactivation of older-generation sets (renewLease).
 * renew_lease_with_credential (migrations/0034) holds the same two: a change here needs a migration there.
 */
const renewalCtes = (sql: SqlClient.SqlClient, id: string, ttlSeconds: number, condition: Statement.Fragment) =>
  sql`renewed as (
        update quote_identities set
          generation = case when kind = 'credential' and lease_expires_at <= now()
            then generation + 1 else generation end,
          lease_expires_at = case when kind = 'browser' then lease_expires_at
            else now() + make_interval(secs => ${ttlSeconds}) end
        where id = ${id} and revoked_at is null and ${condition}
        returning generation, lease_expires_at
      ), cleared as (
        update quote_sets s set active = false, deactivated_at = now(), deactivated_reason = 'lease_expired'
        from renewed r
        where s.quote_identity_id = ${id} and s.active and s.identity_generation < r.generation
      )`

/** Deactivates the identity's active quote sets (inside the caller's transaction). */
export const deactivateQuoteSets = (identityId: string, reason: string) =>
  Effect.flatMap(
    SqlClient.SqlClient,
    (sql) => sql`
      update quote_sets set active = false, deactivated_at = now(), deactivated_reason = ${reason}
      where quote_identity_id = ${identityId} and active`,
  )

export type ExpiryOutcome =
  /** This call journaled the expiry of `generation` (and deactivated its sets). */
  | { readonly _tag: "Expired"; readonly generation: string }
  /** The lease of `generation` is live for `remaining_ms` more (database time): look again then. */
  | {
      readonly _tag: "Live"
      readonly generation: string
      readonly expires_at: Date
      readonly remaining_ms: number
    }
  /** Nothing to do: unknown, revoked or browser identity, or this generation's expiry is journaled already. */
  | { readonly _tag: "Done" }

/**
 * The dead-man switch firing for one identity (the lease entity, actors/QuoteIdentityLease.ts): when its lease
 * ended by `atMs` (database time when absent), one guarded UPDATE marks the generation's expiry journaled
 * (once per generation, whoever runs it and however often), with its quote sets deactivated and one
 * `quote_identity.lease_expired` event, all in one transaction; `runner` is recorded as the one that did it.
 * Accepted fills and on-chain signatures are not touched. Otherwise it answers how long the lease still runs.
 */
export const expireLease = (p: { readonly id: string; readonly runner: string | null; readonly atMs?: number }) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql.withTransaction(
      Effect.gen(function* () {
        const at = p.atMs === undefined ? null : new Date(p.atMs)
        const [expired] = yield* sql<{ master: string; generation: string; lease_expires_at: Date }>`
          update quote_identities set lease_expiry_journaled_generation = generation, lease_expired_by = ${p.runner}
          where id = ${p.id} and kind = 'credential' and revoked_at is null
            and lease_expires_at <= coalesce(${at}::timestamptz, now())
            and lease_expiry_journaled_generation is distinct from generation
          returning master, generation::text, lease_expires_at`
        if (expired !== undefined) {
          yield* deactivateQuoteSets(p.id, "lease_expired")
          yield* appendJournal({
            kind: "quote_identity.lease_expired",
            master: expired.master,
            payload: {
              identity_id: p.id,
              generation: expired.generation,
              expires_at: expired.lease_expires_at.toISOString(),
            },
          })
          return { _tag: "Expired", generation: expired.generation } satisfies ExpiryOutcome as ExpiryOutcome
        }
        const [live] = yield* sql<{ generation: string; lease_expires_at: Date; remaining_ms: number }>`
          select generation::text as generation, lease_expires_at,
                 (extract(epoch from lease_expires_at - coalesce(${at}::timestamptz, now())) * 1000)::float8
                   as remaining_ms
          from quote_identities
          where id = ${p.id} and kind = 'credential' and revoked_at is null
            and lease_expiry_journaled_generation is distinct from generation`
        return live === undefined || live.remaining_ms <= 0
          ? ({ _tag: "Done" } as ExpiryOutcome)
          : ({
              _tag: "Live",
              generation: live.generation,
              expires_at: live.lease_expires_at,
              remaining_ms: live.remaining_ms,
            } as ExpiryOutcome)
      }),
    ),
  )

export type ResumeOutcome =
  | { readonly _tag: "Resumed" }
  /** Not flagged: nothing changed (a retry after a lost answer lands here). */
  | { readonly _tag: "NotFlagged" }
  | { readonly _tag: "NotFound" }
  | { readonly _tag: "Revoked" }

/**
 * The owner's action on a fade flag (DESIGN §10: "not routed to until its owner acts"; settlement v2): clears
 * `fade_flagged_at` and starts a new counting window (`fade_window_started_at`, migration 0028), so the fades
 * that raised the flag are not counted again and the identity is flagged anew only on fades of fills whose chance
 * comes after this. One transaction with `quote_identity.fade_resumed` (the closed window's counts). The row is
 * locked first: settlement's flagging (src/Settlement/RepoV2.ts flagIfFading) locks it too, so the two serialise.
 * `master` restricts it to the owner's identities; a revoked identity is never resumed.
 */
export const resumeFadedIdentity = (p: { readonly id: string; readonly master: string }) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql.withTransaction(
      Effect.gen(function* () {
        const [row] = yield* sql<{ revoked: boolean; flagged_at: Date | null }>`
          select revoked_at is not null as revoked, fade_flagged_at as flagged_at from quote_identities
          where id = ${p.id}::uuid and master = ${p.master} for update`
        if (row === undefined) return { _tag: "NotFound" } as ResumeOutcome
        if (row.revoked) return { _tag: "Revoked" } as ResumeOutcome
        if (row.flagged_at === null) return { _tag: "NotFlagged" } as ResumeOutcome
        // A fold files deltas under the window it read: none may run while this one changes. The window starts once
        // the lock is held (clock_timestamp, not the transaction's start), so a fold that ran before it cannot have
        // filed a mark of the new window under the old one.
        yield* lockFadeWindows
        const closed = yield* identityFades(p.id)
        const [resumed] = yield* sql<{ window_started_at: Date }>`
          update quote_identities set fade_flagged_at = null, fade_window_started_at = clock_timestamp()
          where id = ${p.id}::uuid
          returning fade_window_started_at as window_started_at`
        if (resumed === undefined) return { _tag: "NotFound" } as ResumeOutcome
        yield* appendJournal({
          kind: "quote_identity.fade_resumed",
          master: p.master,
          payload: {
            identity_id: p.id,
            flagged_at: row.flagged_at.toISOString(),
            chances: closed?.chances ?? 0,
            fades: closed?.fades ?? 0,
            window_started_at: resumed.window_started_at.toISOString(),
          },
        })
        return { _tag: "Resumed" } as ResumeOutcome
      }),
    ),
  )
