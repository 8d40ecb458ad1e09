import { SqlClient } from "@effect/sql"
import { Effect, Option } from "effect"
import { appendJournal } from "../Sql/Journal.ts"

export type Access = "granted" | "required" | "suspended"

/** A browser identity never expires: its lease is the far future (spec: Quote identity lease). */
export const BROWSER_LEASE_EXPIRY = "9999-12-31T00:00:00Z"

export interface AccountRow {
  readonly master: string
  readonly access: Access
  readonly created_at: Date
  readonly quote_identity_id: string | null
}

/**
 * Creates the account and its browser quote identity on first sign-in; later sign-ins change
 * nothing. An admin may have created the account earlier (pre-granted access): that row is kept.
 */
export const ensureAccount = (p: { master: string; access: Access; identityId: string; nowMs: number }) =>
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

/** The app's grant (admin only). Creates the account row when the address has not signed in yet. */
export const setAccess = (p: { master: string; access: Access; nowMs: number; by: string }) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql.withTransaction(
      Effect.gen(function* () {
        yield* sql`
          insert into accounts (master, access, created_at) values (${p.master}, ${p.access}, ${new Date(p.nowMs)})
          on conflict (master) do update set access = excluded.access`
        yield* appendJournal({
          kind: "account.access_changed",
          master: p.master,
          payload: { master_address: p.master, access: p.access, by: p.by },
        })
      }),
    ),
  )
