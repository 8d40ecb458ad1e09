import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

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

/** Consumes a link challenge issued to this master only; another master's nonce is "unknown". */
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
