import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { LOCK_CLASS, STREAM_SLOTS_LOCK } from "../Sql/AdvisoryLock.ts"

/**
 * The stream's connection slots in the database (migration 0025), shared by every process serving
 * GET /v1/stream on it, so the spec's 256 and the shares within it are global, not per process.
 *
 * Why rows with a heartbeat, and not advisory locks held per slot: a slot must outlive the pooled
 * connection that took it, the three limits (total, token-less share, per client) and the change of kind
 * at the subscription are one counted query over rows, and a dead process's slots must go without anyone
 * releasing them: its rows stop being refreshed and stop counting after SLOT_LIFETIME_SECONDS. Counting
 * and inserting run under one transaction-scoped advisory lock, so two admissions on two runners never
 * both take the last slot.
 */

/** A slot not refreshed for this long belongs to a dead process (refreshed every SLOT_HEARTBEAT). */
export const SLOT_LIFETIME_SECONDS = 10

export interface SlotLimits {
  readonly total: number
  readonly perClient: number
  readonly anonymous: number
}

export type SlotKind = "anonymous" | "reserve" | "signed"

const lock = (sql: SqlClient.SqlClient) => sql`select pg_advisory_xact_lock(${LOCK_CLASS}, ${STREAM_SLOTS_LOCK})`

/**
 * Takes a slot for a new connection, or says which limit refused it. The slot is `anonymous` while there is
 * room among the token-less connections, else `reserve` (one of the slots kept for subscriptions with a token).
 */
export const acquireSlot = (p: { id: string; holder: string; client: string; limits: SlotLimits }) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql.withTransaction(
      Effect.gen(function* () {
        yield* lock(sql)
        const [row] = yield* sql<{ total: number; mine: number; kind: SlotKind | null }>`
          with dead as (
            delete from stream_slots where heartbeat_at <= now() - make_interval(secs => ${SLOT_LIFETIME_SECONDS})
          ), live as (
            select client, kind from stream_slots
            where heartbeat_at > now() - make_interval(secs => ${SLOT_LIFETIME_SECONDS})
          ), counts as (
            select count(*)::int as total,
                   (count(*) filter (where client = ${p.client}))::int as mine,
                   (count(*) filter (where kind = 'anonymous'))::int as anonymous
            from live
          ), taken as (
            insert into stream_slots (id, holder, client, kind)
            select ${p.id}, ${p.holder}, ${p.client},
                   case when anonymous < ${p.limits.anonymous} then 'anonymous' else 'reserve' end
            from counts where total < ${p.limits.total} and mine < ${p.limits.perClient}
            returning kind
          )
          select total, mine, (select kind from taken) as kind from counts`
        if (row?.kind != null) return { _tag: "Taken" as const, kind: row.kind }
        return { _tag: "Refused" as const, reason: (row?.total ?? 0) >= p.limits.total ? "full" : "client" } as const
      }),
    ),
  )

/** The subscription carries a token: the slot is kept as `signed` (it leaves the token-less share). */
export const signSlot = (id: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) => sql`update stream_slots set kind = 'signed' where id = ${id}`)

/**
 * A `reserve` slot whose subscription has no token: it becomes `anonymous` if the token-less share has room
 * across every process; false when it has none (the connection is refused and the slot released).
 */
export const settleReserveAnonymously = (id: string, anonymous: number) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql.withTransaction(
      Effect.gen(function* () {
        yield* lock(sql)
        const rows = yield* sql<{ id: string }>`
          update stream_slots set kind = 'anonymous'
          where id = ${id} and kind = 'reserve'
            and (select count(*) from stream_slots
                 where kind = 'anonymous'
                   and heartbeat_at > now() - make_interval(secs => ${SLOT_LIFETIME_SECONDS})) < ${anonymous}
          returning id`
        return rows.length > 0
      }),
    ),
  )

export const releaseSlot = (id: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) => sql`delete from stream_slots where id = ${id}`)

/**
 * Keeps this process's open slots alive (database time). Only the ids it still holds: a slot whose release
 * failed is no longer refreshed and expires like a dead process's.
 */
export const refreshSlots = (ids: ReadonlyArray<string>) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    ids.length === 0
      ? Effect.void
      : sql`update stream_slots set heartbeat_at = now() where id in ${sql.in(ids)}`.pipe(Effect.asVoid),
  )
