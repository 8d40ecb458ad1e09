import { SqlClient } from "@effect/sql"
import { Effect, Option } from "effect"
import { deactivateQuoteSets } from "../QuoteIdentities/Repo.ts"
import { appendJournal } from "../Sql/Journal.ts"
import { takeTokenStatement } from "../Sql/RateLimiter.ts"

export interface CredentialRow {
  readonly id: string
  readonly master: string
  readonly quote_identity_id: string
  readonly scopes: ReadonlyArray<string>
  readonly label: string | null
  readonly created_at: Date
  readonly rotated_at: Date | null
  readonly revoked_at: Date | null
}

const columns = "id, master, quote_identity_id, scopes, label, created_at, rotated_at, revoked_at"

export type IssueOutcome =
  | { readonly _tag: "Issued"; readonly row: CredentialRow }
  | { readonly _tag: "IdentityUnavailable" }
  | { readonly _tag: "AlreadyIssued" }

/** One live credential per credential identity; the identity must be the master's and not revoked. */
export const insertCredential = (p: {
  id: string
  master: string
  identityId: string
  tokenHash: Buffer
  scopes: ReadonlyArray<string>
  label: string | null
  nowMs: number
}) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql.withTransaction(
      Effect.gen(function* () {
        const identity = yield* sql`
          select 1 from quote_identities
          where id = ${p.identityId} and master = ${p.master} and kind = 'credential' and revoked_at is null
          for update`
        if (identity.length === 0) return { _tag: "IdentityUnavailable" } as IssueOutcome
        const rows = yield* sql<CredentialRow>`
          insert into credentials (id, master, quote_identity_id, token_hash, scopes, label, created_at)
          values (${p.id}, ${p.master}, ${p.identityId}, ${p.tokenHash}, ${`{${p.scopes.join(",")}}`}::text[], ${p.label},
                  ${new Date(p.nowMs)})
          on conflict do nothing
          returning ${sql.unsafe(columns)}`
        const row = rows[0]
        if (!row) return { _tag: "AlreadyIssued" } as IssueOutcome
        yield* appendJournal({
          kind: "credential.issued",
          master: p.master,
          payload: { credential_id: p.id, identity_id: p.identityId, scopes: p.scopes },
        })
        return { _tag: "Issued", row } as IssueOutcome
      }),
    ),
  )

export const listCredentials = (master: string) =>
  Effect.flatMap(
    SqlClient.SqlClient,
    (sql) =>
      sql<CredentialRow>`select ${sql.unsafe(columns)} from credentials where master = ${master} order by created_at, id`,
  )

/** A live credential by the SHA-256 of its bearer, with its identity (for authentication). */
export const findLiveCredentialByHash = (tokenHash: Buffer) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<CredentialRow>`
      select ${sql.unsafe(columns)} from credentials c
      where token_hash = ${tokenHash} and revoked_at is null`.pipe(Effect.map((rows) => Option.fromNullable(rows[0]))),
  )

/**
 * Authentication and the request budget of an `mk_` bearer in one round trip: the live credential
 * by the SHA-256 of its token, and one token taken from its bucket (`credential:<id>`, as
 * takeToken would). `allowed` false: the credential is live but its budget is exhausted (nothing
 * taken). None: unknown or revoked (nothing charged).
 */
export const chargeLiveCredential = (tokenHash: Buffer, bucket: { readonly rate: number; readonly burst: number }) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<CredentialRow & { allowed: boolean }>`
      with c as (
        select ${sql.unsafe(columns)} from credentials where token_hash = ${tokenHash} and revoked_at is null
      ), taken as (
        ${takeTokenStatement(sql, sql`select 'credential:' || id::text as key from c`, bucket)}
      )
      select c.*, exists (select 1 from taken) as allowed from c`.pipe(
      Effect.map((rows) => Option.fromNullable(rows[0])),
    ),
  )

/** The row lock of a credential's identity (none when the credential is not the master's). */
const lockIdentityOf = (credentialId: string, master: string) =>
  Effect.flatMap(
    SqlClient.SqlClient,
    (sql) => sql`
      select 1 from quote_identities
      where id = (select quote_identity_id from credentials where id = ${credentialId} and master = ${master})
      for update`,
  )

/**
 * Replaces the bearer (the old one stops working at once) and clears the identity's current quotes
 * by advancing its cancel epoch. The identity and its signing key stay.
 */
export const rotateCredential = (p: { id: string; master: string; tokenHash: Buffer; nowMs: number }) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql.withTransaction(
      Effect.gen(function* () {
        // Identity first, then the credential, as issuing does: a rotation or revocation that locked the credential
        // first deadlocked with an issue for the same identity (the issue's unique check waited on it; 500).
        yield* lockIdentityOf(p.id, p.master)
        const rows = yield* sql<CredentialRow>`
          update credentials set token_hash = ${p.tokenHash}, rotated_at = ${new Date(p.nowMs)}
          where id = ${p.id} and master = ${p.master} and revoked_at is null
          returning ${sql.unsafe(columns)}`
        const row = rows[0]
        if (!row) return Option.none<CredentialRow>()
        yield* sql`update quote_identities set cancel_epoch = cancel_epoch + 1 where id = ${row.quote_identity_id}`
        yield* sql`
          update quote_sets set active = false, deactivated_at = now(), deactivated_reason = 'rotated'
          where quote_identity_id = ${row.quote_identity_id} and active`
        yield* appendJournal({
          kind: "credential.rotated",
          master: p.master,
          payload: { credential_id: p.id, identity_id: row.quote_identity_id },
        })
        return Option.some(row)
      }),
    ),
  )

/**
 * Revokes a credential and its identity atomically: bearer revoked, lease expired, generation
 * advanced, every quote cleared (cancel epoch advanced, sets deactivated). Irreversible.
 */
export const revokeCredentialAndIdentity = (p: { credentialId: string; master: string; nowMs: number }) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql.withTransaction(
      Effect.gen(function* () {
        // Identity first, then the credential, as issuing does: a rotation or revocation that locked the credential
        // first deadlocked with an issue for the same identity (the issue's unique check waited on it; 500).
        yield* lockIdentityOf(p.credentialId, p.master)
        const now = new Date(p.nowMs)
        const [credential] = yield* sql<{ quote_identity_id: string }>`
          update credentials set revoked_at = ${now}
          where id = ${p.credentialId} and master = ${p.master} and revoked_at is null
          returning quote_identity_id`
        if (!credential) return false
        yield* sql`
          update quote_identities set revoked_at = now(), lease_expires_at = least(lease_expires_at, now()),
            generation = generation + 1, cancel_epoch = cancel_epoch + 1
          where id = ${credential.quote_identity_id}`
        yield* deactivateQuoteSets(credential.quote_identity_id, "revoked")
        yield* appendJournal({
          kind: "credential.revoked",
          master: p.master,
          payload: { credential_id: p.credentialId, identity_id: credential.quote_identity_id },
        })
        return true
      }),
    ),
  )
