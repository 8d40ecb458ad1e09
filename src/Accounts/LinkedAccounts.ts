import { SqlClient } from "@effect/sql"
import { Effect, Option } from "effect"
import { appendJournal } from "../Sql/Journal.ts"
import { accountInUse } from "./Usage.ts"

export interface LinkedAccountRow {
  readonly venue: string
  readonly address: string
  readonly venue_wallet: string | null
  readonly expires_at: Date | null
  readonly linked_at: Date
}

export const listLinkedAccounts = (master: string) =>
  Effect.flatMap(
    SqlClient.SqlClient,
    (sql) => sql<LinkedAccountRow>`
      select venue, address, venue_wallet, expires_at, linked_at
      from linked_accounts where master = ${master} order by venue`,
  )

export const findLinkedAccount = (master: string, venue: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<LinkedAccountRow>`
      select venue, address, venue_wallet, expires_at, linked_at
      from linked_accounts where master = ${master} and venue = ${venue}`.pipe(
      Effect.map((rows) => Option.fromNullable(rows[0])),
    ),
  )

export type LinkOutcome =
  | { readonly _tag: "Linked"; readonly row: LinkedAccountRow }
  | { readonly _tag: "VenueTaken" }
  | { readonly _tag: "AddressTaken" }

/** Links unless this master already has the venue, or another master owns the address there. */
export const insertLinkedAccount = (p: {
  master: string
  venue: string
  address: string
  venueWallet: string | null
  expiresMs: number | null
  nowMs: number
}) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql.withTransaction(
      Effect.gen(function* () {
        const rows = yield* sql<LinkedAccountRow>`
          insert into linked_accounts (master, venue, address, venue_wallet, expires_at, linked_at)
          values (${p.master}, ${p.venue}, ${p.address}, ${p.venueWallet},
                  ${p.expiresMs === null ? null : new Date(p.expiresMs)}, ${new Date(p.nowMs)})
          on conflict do nothing
          returning venue, address, venue_wallet, expires_at, linked_at`
        const row = rows[0]
        if (row) {
          yield* appendJournal({
            kind: "account.linked",
            master: p.master,
            payload: { venue: p.venue, address: p.address },
          })
          return { _tag: "Linked", row } as LinkOutcome
        }
        const mine = yield* sql`select 1 from linked_accounts where master = ${p.master} and venue = ${p.venue}`
        return (mine.length > 0 ? { _tag: "VenueTaken" } : { _tag: "AddressTaken" }) as LinkOutcome
      }),
    ),
  )

/**
 * Unlinks unless the account is in use. The link row is locked first, and every writer that
 * starts a use of a linked account (orders, takes, withdrawals) locks it too, so a use cannot slip
 * in between the check and the delete.
 */
export const unlinkIfUnused = (master: string, venue: string, nowMs: number) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql.withTransaction(
      Effect.gen(function* () {
        const [row] = yield* sql<LinkedAccountRow>`
          select venue, address, venue_wallet, expires_at, linked_at
          from linked_accounts where master = ${master} and venue = ${venue} for update`
        if (!row) return { _tag: "NotLinked" } as const
        const use = yield* accountInUse(venue, row.address, nowMs)
        if (Option.isSome(use)) return { _tag: "InUse", use: use.value } as const
        yield* sql`delete from linked_accounts where master = ${master} and venue = ${venue}`
        yield* appendJournal({ kind: "account.unlinked", master, payload: { venue, address: row.address } })
        return { _tag: "Unlinked", row } as const
      }),
    ),
  )
