import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { appendJournal, journalNotify, journalRowsInsert } from "../Sql/Journal.ts"

/**
 * The pay key's signatures on a settlement-v2 take (DESIGN §10.2): the payment authorisation (PayTake over the
 * take's Fill digests, stored once in takes.pay_authorization for the Settlement actor's payTake) and early cancels
 * (CancelFill per fill, fills.cancel_signature, relayed only on the abort path). Callers verify the signatures; this
 * module stores them under the take's row lock with their journal row, rechecking what may have changed since.
 */

export type PayAuthorizeOutcome =
  | { readonly _tag: "Authorized" }
  | { readonly _tag: "AlreadyAuthorized" }
  | { readonly _tag: "LocksNotFinal" }
  | { readonly _tag: "PayByPassed" }
  | { readonly _tag: "Cancelled" }
  | { readonly _tag: "Missing" }

/**
 * Stores the payment authorisation when every fill's lock is final and `locked` in the v2 index (the same digests
 * the caller verified), payBy has not passed (database time) and no fill of the take has the pay key's cancel
 * (`Cancelled`: the payment is one payTake for every fill, so it would pay for a lock being released; DESIGN §6).
 * A take already authorised keeps its first signature (`AlreadyAuthorized`: a retry changes nothing).
 */
export const authorizePay = (p: { readonly takeId: string; readonly master: string; readonly signature: string }) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    Effect.flatMap(readiness(sql, p), (ready) =>
      ready === undefined ? authorizeLocked(sql, p) : Effect.succeed(ready),
    ),
  )

/**
 * The outcome a take not ready to authorise gets, read in one statement outside a transaction; undefined when it is
 * ready (then authorizeLocked re-checks all of it under the row lock). Each outcome but LocksNotFinal is final for
 * the take (a missing take stays missing, an authorisation stays, payBy stays passed); LocksNotFinal is what the
 * locked read would answer a moment earlier. A client that posts before the service's index has its locks final
 * retries: one statement a retry instead of four (BEGIN, two reads, COMMIT).
 */
const readiness = (sql: SqlClient.SqlClient, p: { readonly takeId: string; readonly master: string }) =>
  Effect.map(
    sql<{ authorized: boolean; pay_open: boolean; cancelled: boolean; fills: number; locked: number }>`
      select pay_authorization is not null as authorized,
        coalesce(pay_by >= extract(epoch from now()), false) as pay_open,
        exists (select 1 from fills f where f.take_id = t.id and f.cancel_signature is not null) as cancelled,
        (select count(*)::int from fills f where f.take_id = t.id) as fills,
        (select count(*)::int from fills f join escrow_v2_locks l
           on l.venue = f.maker_venue and l.fill_digest = f.fill_digest and l.state = 'locked'
         where f.take_id = t.id) as locked
      from takes t where id = ${p.takeId}::uuid and master = ${p.master} and escrow_version = 2`,
    ([row]) => (row === undefined ? { _tag: "Missing" as const } : (notReady(row) ?? locksNotFinal(row))),
  )

/** A found take's refusal before its locks are counted (the same rules with and without the row lock). */
const notReady = (row: {
  readonly authorized: boolean
  readonly pay_open: boolean
  readonly cancelled: boolean
}): PayAuthorizeOutcome | undefined =>
  row.authorized
    ? { _tag: "AlreadyAuthorized" }
    : row.cancelled
      ? { _tag: "Cancelled" }
      : row.pay_open
        ? undefined
        : { _tag: "PayByPassed" }

/** LocksNotFinal unless the take has fills and every one is `locked` in the v2 index. */
const locksNotFinal = (locks: { readonly fills: number; readonly locked: number }): PayAuthorizeOutcome | undefined =>
  locks.fills === 0 || locks.locked !== locks.fills ? { _tag: "LocksNotFinal" } : undefined

const authorizeLocked = (
  sql: SqlClient.SqlClient,
  p: { readonly takeId: string; readonly master: string; readonly signature: string },
) =>
  sql.withTransaction(
    Effect.gen(function* () {
      // The take's row lock orders this with storeCancels: a cancel stored before it is seen here. The cancels are
      // read by the next statement, not this one: this statement's snapshot is taken before it waits for the lock,
      // so a cancel committed while it waited would be missed (storeCancels locks the row without changing it).
      const rows = yield* sql<{ authorized: boolean; pay_open: boolean; pay_key: string }>`
          select pay_authorization is not null as authorized, pay_key_address as pay_key,
            coalesce(pay_by >= extract(epoch from now()), false) as pay_open
          from takes t where id = ${p.takeId}::uuid and master = ${p.master} and escrow_version = 2 for update`
      const row = rows[0]
      if (row === undefined) return { _tag: "Missing" } as PayAuthorizeOutcome
      const [locks] = yield* sql<{ fills: number; locked: number; cancelled: boolean }>`
          select count(*)::int as fills, count(l.fill_digest)::int as locked,
            coalesce(bool_or(f.cancel_signature is not null), false) as cancelled
          from fills f left join escrow_v2_locks l
            on l.venue = f.maker_venue and l.fill_digest = f.fill_digest and l.state = 'locked'
          where f.take_id = ${p.takeId}::uuid`
      const refused = notReady({ ...row, cancelled: locks!.cancelled })
      if (refused !== undefined) return refused
      const notFinal = locksNotFinal(locks!)
      if (notFinal !== undefined) return notFinal
      // The authorisation and its journal row (with the publisher's ping): one statement.
      const entry = {
        kind: "take.pay_authorized",
        master: p.master,
        payload: { take_id: p.takeId, pay_key: row.pay_key },
      }
      yield* sql`
          with updated as (
            update takes set pay_authorization = ${p.signature}, pay_authorized_at = now(), updated_at = now()
            where id = ${p.takeId}::uuid
            returning id
          ), appended as (${journalRowsInsert(sql, [entry], sql`exists (select 1 from updated)`)})
          ${journalNotify(sql, [])}
          where exists (select 1 from appended)`
      return { _tag: "Authorized" } as PayAuthorizeOutcome
    }),
  )

/**
 * Stores the pay key's CancelFill signatures (fill id → signature, verified by the caller) on fills of the take that
 * have none yet; a fill that already has one keeps it. Returns the fill ids newly stored (journaled once). Under the
 * take's row lock, as authorizeLocked: a cancel and an authorisation never both pass unseen by each other. A cancel
 * stored before any authorisation is relayed at once and the take is never paid; one stored after it is relayed
 * only once no payment can come (payBy passed, src/Domain/SettlementStepV2.ts).
 */
export const storeCancels = (p: {
  readonly takeId: string
  readonly master: string
  readonly cancels: ReadonlyMap<string, string>
}) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql.withTransaction(
      Effect.gen(function* () {
        const stored: Array<string> = []
        yield* sql`select 1 from takes where id = ${p.takeId}::uuid for update`
        for (const [fillId, signature] of p.cancels) {
          const updated = yield* sql<{ id: string }>`
            update fills set cancel_signature = ${signature}, updated_at = now()
            where id = ${fillId}::uuid and take_id = ${p.takeId}::uuid and cancel_signature is null
            returning id::text as id`
          if (updated.length > 0) stored.push(fillId)
        }
        if (stored.length > 0) {
          yield* appendJournal({
            kind: "take.cancel_signed",
            master: p.master,
            payload: { take_id: p.takeId, fill_ids: stored },
          })
        }
        return stored
      }),
    ),
  )
