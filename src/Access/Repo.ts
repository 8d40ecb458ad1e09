import { SqlClient } from "@effect/sql"
import { Effect, Option } from "effect"
import { appendJournal } from "../Sql/Journal.ts"

/** An account's beta access (spec: Beta access): only `granted` may make new commitments. */
export type AccessLevel = "granted" | "required" | "suspended"

/** The account's access, or none when the address has no account yet. */
export const findAccess = (master: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<{ access: AccessLevel }>`select access from accounts where master = ${master}`.pipe(
      Effect.map((rows) => Option.fromNullable(rows[0]?.access)),
    ),
  )

/**
 * The app's grant (admin only), journaled as `account.access_changed` in the same transaction. Creates the
 * account row when the address has not signed in yet (its first sign-in keeps it: src/Accounts/Repo.ts).
 */
export const setAccess = (p: { master: string; access: AccessLevel; nowMs: number; by: string }) =>
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
