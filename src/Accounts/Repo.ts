import { SqlClient } from "@effect/sql"
import { Effect, Option } from "effect"
import type { AccessLevel } from "../Access/Repo.ts"
import type { Consumed, IssuedChallenge } from "../Auth/Repo.ts"
import { appendJournal } from "../Sql/Journal.ts"

/** A browser identity never expires: its lease is the far future (spec: Quote identity lease). */
export const BROWSER_LEASE_EXPIRY = "9999-12-31T00:00:00Z"

export interface AccountRow {
  readonly master: string
  readonly access: AccessLevel
  readonly created_at: Date
  readonly quote_identity_id: string | null
}

/**
 * Creates the account and its browser quote identity on first sign-in; later sign-ins change
 * nothing. An admin may have created the account earlier (pre-granted access): that row is kept.
 */
export const ensureAccount = (p: { master: string; access: AccessLevel; identityId: string; nowMs: number }) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql.withTransaction(
      Effect.gen(function* () {
        const now = new Date(p.nowMs)
        const created = yield* sql`
          insert into accounts (master, access, created_at) values (${p.master}, ${p.access}, ${now})
          on conflict (master) do nothing returning master`
        yield* sql`
          insert into quote_identities (id, master, signer, kind, lease_expires_at, created_at)
          values (${p.identityId}, ${p.master}, ${p.master}, 'browser', ${BROWSER_LEASE_EXPIRY}, ${now})
          on conflict do nothing`
        if (created.length > 0) {
          yield* appendJournal({ kind: "account.created", master: p.master, payload: { master_address: p.master } })
        }
      }),
    ),
  )

export const findAccount = (master: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<AccountRow>`
      select a.master, a.access, a.created_at, q.id as quote_identity_id
      from accounts a left join quote_identities q on q.master = a.master and q.kind = 'browser'
      where a.master = ${master}`.pipe(Effect.map((rows) => Option.fromNullable(rows[0]))),
  )

// ---------------------------------------------------------------------------------------------
// Link challenges (the generic link message; the agent-approval venue's extra columns: VenueAgents.ts)
// ---------------------------------------------------------------------------------------------

export interface LinkChallenge extends IssuedChallenge {
  readonly master: string
  readonly venue: string
}

export const insertLinkChallenge = (p: {
  nonce: string
  master: string
  venue: string
  address: string
  message: string
  nowMs: number
  expiresMs: number
}) =>
  Effect.flatMap(
    SqlClient.SqlClient,
    (sql) => sql`
      insert into link_challenges (nonce, master, venue, address, message, expires_at, created_at)
      values (${p.nonce}, ${p.master}, ${p.venue}, ${p.address}, ${p.message}, ${new Date(p.expiresMs)},
              ${new Date(p.nowMs)})`,
  ).pipe(Effect.asVoid)

/**
 * Consumes a link challenge issued to this master only (another master's nonce is "unknown"), in one statement:
 * of two concurrent links exactly one gets it.
 */
export const consumeLinkChallenge = (nonce: string, master: string, nowMs: number) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    Effect.gen(function* () {
      const rows = yield* sql<LinkChallenge>`
        update link_challenges set consumed_at = ${new Date(nowMs)}
        where nonce = ${nonce} and master = ${master} and consumed_at is null
        returning nonce, master, venue, address, message, expires_at`
      if (rows[0]) return { _tag: "Consumed", challenge: rows[0] } as Consumed<LinkChallenge>
      const exists = yield* sql`select 1 from link_challenges where nonce = ${nonce} and master = ${master}`
      return (exists.length > 0 ? { _tag: "AlreadyUsed" } : { _tag: "Unknown" }) as Consumed<LinkChallenge>
    }),
  )
