import { SqlClient } from "@effect/sql"
import { Effect, Option } from "effect"
import { takeTokenStatement } from "../Sql/RateLimiter.ts"

// ---------------------------------------------------------------------------------------------
// Sign-in challenges (SIWE; the agent-approval venue's extra columns: src/Accounts/VenueAgents.ts)
// ---------------------------------------------------------------------------------------------

export interface IssuedChallenge {
  readonly nonce: string
  readonly address: string
  readonly message: string
  readonly expires_at: Date
}

export type Consumed<A> =
  | { readonly _tag: "Consumed"; readonly challenge: A }
  | { readonly _tag: "AlreadyUsed" }
  | { readonly _tag: "Unknown" }

export const insertSiweChallenge = (p: {
  nonce: string
  address: string
  message: string
  nowMs: number
  expiresMs: number
}) =>
  Effect.flatMap(
    SqlClient.SqlClient,
    (sql) => sql`
      insert into auth_challenges (nonce, address, message, expires_at, created_at)
      values (${p.nonce}, ${p.address}, ${p.message}, ${new Date(p.expiresMs)}, ${new Date(p.nowMs)})`,
  ).pipe(Effect.asVoid)

/**
 * Marks the challenge used and returns it, in one statement: of two concurrent verifies exactly one
 * gets it. The nonce is spent whether or not the signature then verifies.
 */
export const consumeSiweChallenge = (nonce: string, nowMs: number) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    Effect.gen(function* () {
      const rows = yield* sql<IssuedChallenge>`
        update auth_challenges set consumed_at = ${new Date(nowMs)}
        where nonce = ${nonce} and consumed_at is null
        returning nonce, address, message, expires_at`
      if (rows[0]) return { _tag: "Consumed", challenge: rows[0] } as Consumed<IssuedChallenge>
      const exists = yield* sql`select 1 from auth_challenges where nonce = ${nonce}`
      return (exists.length > 0 ? { _tag: "AlreadyUsed" } : { _tag: "Unknown" }) as Consumed<IssuedChallenge>
    }),
  )

// ---------------------------------------------------------------------------------------------
// Sessions: only the SHA-256 of the token is stored
// ---------------------------------------------------------------------------------------------

export interface SessionRow {
  readonly id: string
  readonly master: string
  readonly expires_at: Date
  readonly revoked_at: Date | null
}

export const insertSession = (p: { id: string; tokenHash: Buffer; master: string; nowMs: number; expiresMs: number }) =>
  Effect.flatMap(
    SqlClient.SqlClient,
    (sql) => sql`
      insert into sessions (id, token_hash, master, created_at, expires_at)
      values (${p.id}, ${p.tokenHash}, ${p.master}, ${new Date(p.nowMs)}, ${new Date(p.expiresMs)})`,
  ).pipe(Effect.asVoid)

export const findSessionByHash = (tokenHash: Buffer) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<SessionRow>`select id, master, expires_at, revoked_at from sessions where token_hash = ${tokenHash}`.pipe(
      Effect.map((rows) => Option.fromNullable(rows[0])),
    ),
  )

/**
 * The session of `tokenHash` and, when it is live at `nowMs` (not revoked, not expired), one token of its request
 * budget taken, in one round trip (the HTTP middleware's path; a credential's is chargeLiveCredential). A dead
 * session is returned uncharged, for its refusal. `allowed` false with a live session: its budget is spent. The
 * expiry is compared as authenticateHeader judges it (both on the caller's clock, at millisecond precision: sessions
 * are written with a JS Date).
 */
export const chargeLiveSession = (
  tokenHash: Buffer,
  nowMs: number,
  bucket: { readonly rate: number; readonly burst: number },
) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<SessionRow & { allowed: boolean }>`
      with s as (
        select id, master, expires_at, revoked_at from sessions where token_hash = ${tokenHash}
      ), taken as (
        ${takeTokenStatement(
          sql,
          sql`select 'session:' || id::text as key from s where revoked_at is null and expires_at > ${new Date(nowMs)}`,
          bucket,
        )}
      )
      select s.*, exists (select 1 from taken) as allowed from s`.pipe(
      Effect.map((rows) => Option.fromNullable(rows[0])),
    ),
  )

export const revokeSession = (id: string, nowMs: number) =>
  Effect.flatMap(
    SqlClient.SqlClient,
    (sql) => sql`update sessions set revoked_at = ${new Date(nowMs)} where id = ${id} and revoked_at is null`,
  ).pipe(Effect.asVoid)
