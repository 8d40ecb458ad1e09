import { SqlClient } from "@effect/sql"
import { Effect, Option } from "effect"
import { appendJournal } from "../Sql/Journal.ts"

export interface QuoteSetRow {
  readonly id: string
  readonly order_id: string
  readonly quote_identity_id: string
  readonly identity_generation: string
  readonly cancel_epoch: string
  readonly sequence: string
  readonly valid_until: Date
  readonly quote_size: string
  readonly quotes: ReadonlyArray<Record<string, unknown>>
  readonly signature: string
  readonly active: boolean
  readonly created_at: Date
  /** Settlement v2 (migrations/0019), null on a v1 set: the signed issuedAt (chain seconds) and hashlock tree. */
  readonly issued_at: string | null
  readonly hashlock_root: string | null
  readonly hashlock_count: number | null
}

// `hashlocks` (up to MAX_HASHLOCK_COUNT entries) is read only where needed: quoteSetHashlocks.
const columns = `id, order_id, quote_identity_id, identity_generation::text, cancel_epoch::text, sequence::text,
  valid_until, quote_size::text, quotes, signature, active, created_at, issued_at::text, hashlock_root,
  hashlock_count`

export const latestQuoteSet = (orderId: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<QuoteSetRow>`select ${sql.unsafe(columns)} from quote_sets where order_id = ${orderId}
      order by sequence desc limit 1`.pipe(Effect.map((rows) => Option.fromNullable(rows[0]))),
  )

/** A v2 set's published hashlocks (lowercase hex, by index); empty for a v1 set or an unknown id. */
export const quoteSetHashlocks = (quoteSetId: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<{ hashlocks: ReadonlyArray<string> | null }>`select hashlocks from quote_sets where id = ${quoteSetId}`.pipe(
      Effect.map((rows) => rows[0]?.hashlocks ?? []),
    ),
  )

export type PublishOutcome =
  | { readonly _tag: "Published"; readonly row: QuoteSetRow }
  | { readonly _tag: "Stale"; readonly last: string }
  | { readonly _tag: "LeaseExpired" }
  | { readonly _tag: "IdentityRevoked" }

export interface NewQuoteSet {
  readonly id: string
  readonly orderId: string
  readonly master: string
  readonly identityId: string
  readonly generation: bigint
  readonly sequence: bigint
  readonly validUntilSeconds: bigint
  readonly quoteSize: bigint
  readonly quotes: ReadonlyArray<Record<string, unknown>>
  readonly signature: string
  /** Present exactly for a v2 order's set; checked by the caller (signature, root of `hashlocks`, count). */
  readonly v2?: {
    readonly issuedAt: bigint
    readonly hashlockRoot: string
    readonly hashlockCount: number
    /** Lowercase hex, by index. */
    readonly hashlocks: ReadonlyArray<string>
  }
}

/**
 * Admits a quote set, in one transaction with the identity row locked: the identity must not be
 * revoked, its lease must be live in database time at the set's generation (else LeaseExpired:
 * quotes of an old generation never become active again), and the sequence must exceed every
 * earlier one of the order. The new set supersedes the order's active set.
 */
export const publishQuoteSet = (q: NewQuoteSet) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql.withTransaction(
      Effect.gen(function* () {
        const [identity] = yield* sql<{ live: boolean; generation: string; cancel_epoch: string; revoked: boolean }>`
          select lease_expires_at > now() as live, generation::text, cancel_epoch::text, revoked_at is not null as revoked
          from quote_identities where id = ${q.identityId} for update`
        if (!identity || identity.revoked) return { _tag: "IdentityRevoked" } as PublishOutcome
        if (!identity.live || BigInt(identity.generation) !== q.generation) {
          return { _tag: "LeaseExpired" } as PublishOutcome
        }
        const [last] = yield* sql<{ sequence: string }>`
          select max(sequence)::text as sequence from quote_sets where order_id = ${q.orderId}`
        if (last?.sequence != null && BigInt(last.sequence) >= q.sequence) {
          return { _tag: "Stale", last: last.sequence } as PublishOutcome
        }
        yield* sql`update quote_sets set active = false, deactivated_at = now(), deactivated_reason = 'superseded'
          where order_id = ${q.orderId} and active`
        const [row] = yield* sql<QuoteSetRow>`
          insert into quote_sets (id, order_id, quote_identity_id, identity_generation, cancel_epoch, sequence,
            valid_until, quote_size, quotes, signature, active, created_at, issued_at, hashlock_root, hashlock_count,
            hashlocks)
          values (${q.id}, ${q.orderId}, ${q.identityId}, ${q.generation.toString()}, ${identity.cancel_epoch},
            ${q.sequence.toString()}, to_timestamp(${Number(q.validUntilSeconds)}), ${q.quoteSize.toString()},
            ${JSON.stringify(q.quotes)}::jsonb, ${q.signature}, true, now(), ${q.v2?.issuedAt.toString() ?? null},
            ${q.v2?.hashlockRoot ?? null}, ${q.v2?.hashlockCount ?? null},
            ${q.v2 === undefined ? null : JSON.stringify(q.v2.hashlocks)}::jsonb)
          returning ${sql.unsafe(columns)}`
        yield* appendJournal({
          kind: "quote_set.published",
          master: q.master,
          payload: { order_id: q.orderId, identity_id: q.identityId, sequence: q.sequence.toString() },
        })
        return { _tag: "Published", row: row! } as PublishOutcome
      }),
    ),
  )

export const cancelQuoteSets = (orderId: string, master: string, identityId: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql.withTransaction(
      Effect.gen(function* () {
        const rows = yield* sql`update quote_sets set active = false, deactivated_at = now(),
            deactivated_reason = 'cancelled'
          where order_id = ${orderId} and active returning id`
        if (rows.length > 0) {
          yield* appendJournal({
            kind: "quote_set.cancelled",
            master,
            payload: { order_id: orderId, identity_id: identityId },
          })
        }
        return rows.length
      }),
    ),
  )
