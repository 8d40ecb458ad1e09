/**
 * Transfer intents (migration 0012). A row is written once with its funding decision (a withdrawal preparation
 * for the shortfall, or none); `take_id` and `cancelled_at` are each set at most once, under the row lock, and
 * never both. Every change journals `transfer.*` for the master in its own transaction.
 */
import { SqlClient } from "@effect/sql"
import { Effect, Option } from "effect"
import { appendJournal } from "../Sql/Journal.ts"

export interface TransferRow {
  readonly id: string
  readonly master: string
  readonly client_transfer_id: string
  readonly client_take_id: string
  readonly from_venue: string
  readonly to_venue: string
  readonly amount_in: string
  readonly min_out: string
  readonly max_parts: number
  readonly payer: string
  readonly recipient: string
  readonly from_chain_id: number
  readonly to_chain_id: number
  /** Base units the payer's wallet lacked at creation; null when it was covered. */
  readonly shortfall: string | null
  readonly preparation_id: string | null
  readonly take_id: string | null
  readonly error: string
  readonly cancelled_at: Date | null
  readonly created_at: Date
  readonly updated_at: Date
  /**
   * The preparation's signed amount (base units: the shortfall plus the venue's fee, if it charges one), typed data
   * and creation time (null without a preparation).
   */
  readonly preparation_amount: string | null
  readonly preparation_typed_data: unknown
  readonly preparation_created_at: Date | null
  /** Every fill of the take final; null before a take exists. */
  readonly take_final: boolean | null
  /** The take's settlement version, fixed at creation (migration 0027): 2 needs `pay_key` before the take. */
  readonly take_version: 1 | 2
  /** The client's pay key for a v2 take (lowercase address); null until given. */
  readonly pay_key: string | null
}

const SELECT = (sql: SqlClient.SqlClient) => sql`
  select t.id, t.master, t.client_transfer_id, t.client_take_id, t.from_venue, t.to_venue,
    t.amount_in::text as amount_in, t.min_out::text as min_out, t.max_parts, t.payer, t.recipient,
    t.from_chain_id::int as from_chain_id, t.to_chain_id::int as to_chain_id, t.shortfall::text as shortfall,
    t.preparation_id, t.take_id, t.error, t.cancelled_at, t.created_at, t.updated_at,
    t.take_version::int as take_version, t.pay_key,
    p.amount::text as preparation_amount, p.typed_data as preparation_typed_data, p.created_at as preparation_created_at,
    case when t.take_id is null then null
         else not exists (select 1 from fills f where f.take_id = t.take_id and not f.final) end as take_final
  from transfers t left join withdrawal_preparations p on p.id = t.preparation_id`

/** The take's client id of a transfer: deterministic, 45 characters, within the client id pattern. */
export const clientTakeIdOf = (transferId: string) => `transfer:${transferId}`

/** Journal kinds (literals: the stream's documentation test reads them from this file). */
export const TRANSFER_EVENT = {
  created: "transfer.created",
  takeCreated: "transfer.take_created",
  cancelled: "transfer.cancelled",
  payKeyGiven: "transfer.pay_key_given",
} as const

const journal = (kind: string, row: TransferRow) =>
  appendJournal({
    kind,
    master: row.master,
    payload: {
      transfer_id: row.id,
      client_transfer_id: row.client_transfer_id,
      from: row.from_venue,
      to: row.to_venue,
      amount_in: row.amount_in,
      shortfall: row.shortfall,
      take_id: row.take_id,
      cancelled_at: row.cancelled_at === null ? null : row.cancelled_at.toISOString(),
    },
  })

/**
 * Runs `effect` in one transaction (a savepoint inside a caller's). The Transfers service composes an intent's
 * steps in it (the insert or the pay key, and the take with its chain read), so they commit together or not at all.
 */
export const inTransaction = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) => sql.withTransaction(effect))

export const findTransfer = (id: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<TransferRow>`${SELECT(sql)} where t.id = ${id}::uuid`.pipe(Effect.map((rows) => Option.fromNullable(rows[0]))),
  )

export const findTransferByClientId = (master: string, clientTransferId: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<TransferRow>`${SELECT(sql)} where t.master = ${master} and t.client_transfer_id = ${clientTransferId}`.pipe(
      Effect.map((rows) => Option.fromNullable(rows[0])),
    ),
  )

export interface NewTransfer {
  readonly id: string
  readonly master: string
  readonly clientTransferId: string
  readonly from: string
  readonly to: string
  readonly amountIn: bigint
  readonly minOut: bigint
  readonly maxParts: number
  readonly payer: string
  readonly recipient: string
  readonly fromChainId: number
  readonly toChainId: number
  readonly shortfall: bigint | null
  readonly preparationId: string | null
  readonly takeVersion: 1 | 2
}

/**
 * Inserts the intent and journals `transfer.created`, unless (master, client id) exists: then false and nothing
 * written. Run it inside the caller's transaction: a concurrent insert of the same client id waits here until the
 * first commits (then false) or rolls back (then this one inserts).
 */
export const insertTransfer = (t: NewTransfer) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const inserted = yield* sql`
      insert into transfers (id, master, client_transfer_id, client_take_id, from_venue, to_venue, amount_in, min_out,
        max_parts, payer, recipient, from_chain_id, to_chain_id, shortfall, preparation_id, take_version, created_at,
        updated_at)
      values (${t.id}::uuid, ${t.master}, ${t.clientTransferId}, ${clientTakeIdOf(t.id)}, ${t.from}, ${t.to},
        ${t.amountIn.toString()}, ${t.minOut.toString()}, ${t.maxParts}, ${t.payer.toLowerCase()},
        ${t.recipient.toLowerCase()}, ${t.fromChainId}, ${t.toChainId},
        ${t.shortfall === null ? null : t.shortfall.toString()}, ${t.preparationId}, ${t.takeVersion}, now(), now())
      on conflict (master, client_transfer_id) do nothing
      returning id`
    if (inserted.length === 0) return false
    const row = yield* findTransfer(t.id)
    yield* journal(TRANSFER_EVENT.created, Option.getOrThrow(row))
    return true
  })

/**
 * The row locked for a decision about its take (`for update`): None when it does not exist. Only inside a
 * transaction.
 */
export const lockTransfer = (id: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<{ take_id: string | null; cancelled_at: Date | null }>`
      select take_id, cancelled_at from transfers where id = ${id}::uuid for update`.pipe(
      Effect.map((rows) => Option.fromNullable(rows[0])),
    ),
  )

/** Records the take of a transfer still waiting for one and journals `transfer.take_created`; false otherwise. */
export const attachTake = (id: string, takeId: string) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const updated = yield* sql`
      update transfers set take_id = ${takeId}::uuid, error = '', next_attempt_at = null, updated_at = now()
      where id = ${id}::uuid and take_id is null and cancelled_at is null
      returning id`
    if (updated.length === 0) return false
    yield* journal(TRANSFER_EVENT.takeCreated, Option.getOrThrow(yield* findTransfer(id)))
    return true
  })

export type PayKeyOutcome =
  | { readonly _tag: "NotFound" }
  | { readonly _tag: "NotV2" }
  | { readonly _tag: "Cancelled" }
  /** Another pay key was given first (or the take exists under it): nothing changed. */
  | { readonly _tag: "OtherKey" }
  /** Stored now, or the same key again (nothing changed then). */
  | { readonly _tag: "Given"; readonly changed: boolean }

/**
 * Stores the client's pay key of the master's v2 transfer, once, and journals `transfer.pay_key_given`; clears the
 * desk's retry delay so a transfer whose wallet is ready gets its take on the desk's next pass. Run it inside the
 * caller's transaction (the row stays locked until the caller's take decision commits).
 */
export const givePayKey = <E = never, R = never>(
  master: string,
  id: string,
  payKey: string,
  // Gates a new key only (beta access): the same key again is answered whatever the account's access since.
  access: Effect.Effect<void, E, R> = Effect.void as Effect.Effect<void, E, R>,
) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const [locked] = yield* sql<{
      master: string
      take_version: number
      pay_key: string | null
      cancelled_at: Date | null
    }>`select master, take_version::int as take_version, pay_key, cancelled_at from transfers
       where id = ${id}::uuid for update`
    if (locked === undefined || locked.master !== master) return { _tag: "NotFound" } as PayKeyOutcome
    if (locked.take_version !== 2) return { _tag: "NotV2" } as PayKeyOutcome
    const key = payKey.toLowerCase()
    if (locked.pay_key !== null) {
      return (locked.pay_key === key ? { _tag: "Given", changed: false } : { _tag: "OtherKey" }) as PayKeyOutcome
    }
    if (locked.cancelled_at !== null) return { _tag: "Cancelled" } as PayKeyOutcome
    yield* access
    yield* sql`update transfers set pay_key = ${key}, next_attempt_at = null, updated_at = now() where id = ${id}::uuid`
    yield* journal(TRANSFER_EVENT.payKeyGiven, Option.getOrThrow(yield* findTransfer(id)))
    return { _tag: "Given", changed: true } as PayKeyOutcome
  })

/** The desk's failed attempt at the take: why, and when to try again. */
export const deferTransfer = (id: string, error: string, retryAfterMs: number) =>
  Effect.flatMap(
    SqlClient.SqlClient,
    (sql) => sql`
      update transfers set error = ${error},
        next_attempt_at = now() + ${retryAfterMs}::bigint * interval '1 millisecond'
      where id = ${id}::uuid and take_id is null`,
  ).pipe(Effect.asVoid)

export type CancelOutcome =
  | { readonly _tag: "NotFound" }
  | { readonly _tag: "Cancelled"; readonly row: TransferRow }
  | { readonly _tag: "TakeCommitted"; readonly takeId: string }

/**
 * Cancels the master's transfer while it has no take. A repeat answers the cancelled row again; once the take is
 * committed, TakeCommitted. Another master's transfer is NotFound.
 */
export const cancelTransfer = (master: string, id: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql.withTransaction(
      Effect.gen(function* () {
        const [locked] = yield* sql<{ master: string; take_id: string | null; cancelled_at: Date | null }>`
          select master, take_id, cancelled_at from transfers where id = ${id}::uuid for update`
        if (locked === undefined || locked.master !== master) return { _tag: "NotFound" } as CancelOutcome
        if (locked.take_id !== null) return { _tag: "TakeCommitted", takeId: locked.take_id } as CancelOutcome
        if (locked.cancelled_at === null) {
          yield* sql`update transfers set cancelled_at = now(), updated_at = now() where id = ${id}::uuid`
          yield* journal(TRANSFER_EVENT.cancelled, Option.getOrThrow(yield* findTransfer(id)))
        }
        return { _tag: "Cancelled", row: Option.getOrThrow(yield* findTransfer(id)) } as CancelOutcome
      }),
    ),
  )

/**
 * One page of the master's transfers, newest first by (created_at, id), strictly after the transfer `after`
 * (a UUID of the master's: None when it is not one). Reads `limit + 1` rows to tell whether more follow.
 */
export const transfersPage = (master: string, after: string | undefined, limit: number) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    if (after !== undefined) {
      const [anchor] = yield* sql`select 1 from transfers where id = ${after}::uuid and master = ${master}`
      if (anchor === undefined) return Option.none<{ rows: ReadonlyArray<TransferRow>; hasMore: boolean }>()
    }
    const rows =
      after === undefined
        ? yield* sql<TransferRow>`
            ${SELECT(sql)} where t.master = ${master}
            order by t.created_at desc, t.id desc limit ${limit + 1}`
        : yield* sql<TransferRow>`
            ${SELECT(sql)} where t.master = ${master}
              and (t.created_at, t.id) < (select created_at, id from transfers where id = ${after}::uuid)
            order by t.created_at desc, t.id desc limit ${limit + 1}`
    return Option.some({ rows: rows.slice(0, limit), hasMore: rows.length > limit })
  })

/**
 * Transfers the desk may complete: no take, not cancelled, not deferred, a v2 one with its pay key, and either its
 * funding withdrawal relayed or (v2 only) no preparation at all. A v1 transfer without a preparation got its take
 * at creation or was never stored; a v2 one gets it when the pay key is given, and here if that attempt was refused.
 */
export const dueTransfers = (limit: number, id?: string) =>
  Effect.flatMap(
    SqlClient.SqlClient,
    (sql) => sql<TransferRow>`
      ${SELECT(sql)}
      where t.take_id is null and t.cancelled_at is null ${id === undefined ? sql`` : sql`and t.id = ${id}::uuid`}
        and (t.next_attempt_at is null or t.next_attempt_at <= now())
        and (t.take_version = 1 or t.pay_key is not null)
        and ((t.preparation_id is null and t.take_version = 2) or exists (
          select 1 from withdrawals w where w.preparation_id = t.preparation_id and w.state = 'relayed'))
      order by t.created_at limit ${limit}`,
  )

/**
 * Where a transfer without a take can still get one (the TransferDesk entity, one per transfer, looks again while
 * so): not cancelled, its take's version has what it needs to start (v1, or the v2 pay key given), and its funding,
 * if any, can still come (a withdrawal of its preparation that has not failed, or a preparation not yet signed and
 * not expired). A failed withdrawal or an expired preparation leave nothing to do but cancel.
 */
const DESK_PENDING = (sql: SqlClient.SqlClient) => sql`
  t.take_id is null and t.cancelled_at is null and (t.take_version = 1 or t.pay_key is not null)
  and (t.preparation_id is null
    or exists (select 1 from withdrawals w where w.preparation_id = t.preparation_id and w.state <> 'failed')
    or (not exists (select 1 from withdrawals w where w.preparation_id = t.preparation_id)
      and exists (select 1 from withdrawal_preparations p where p.id = t.preparation_id and p.expires_at > now())))`

/** Transfers the desk still has to give a take (start-up adoption of the TransferDesk entities). */
export const deskPendingTransfers = Effect.flatMap(SqlClient.SqlClient, (sql) =>
  sql<{ id: string }>`select t.id::text as id from transfers t where ${DESK_PENDING(sql)}`.pipe(
    Effect.map((rows) => rows.map((r) => r.id)),
  ),
)

/** Whether this transfer is still pending for the desk, and how long until its next attempt is due (ms, ≥ 0). */
export const deskState = (id: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<{ pending: boolean; wait_ms: number }>`
      select ${DESK_PENDING(sql)} as pending,
        greatest(0, coalesce(extract(epoch from (t.next_attempt_at - now())) * 1000, 0))::float8 as wait_ms
      from transfers t where t.id = ${id}::uuid`.pipe(Effect.map((rows) => rows[0])),
  )
