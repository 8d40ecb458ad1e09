import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * A quote identity's fade record: chances and fades of its current window (migration 0028: the marks whose chance was
 * recorded at or after `fade_window_started_at`, all when null; a fade counts in the window of its chance), read at a
 * cost that does not grow with the identity's fills (migrations/0038_fade_totals.ts). Triggers append each chance
 * and fade to `fade_deltas`; `foldFadeDeltas` moves them into `fade_totals`.
 */

export interface FadeRecord {
  readonly chances: number
  readonly fades: number
  readonly flagged: boolean
  readonly flagged_at: Date | null
  readonly window_started_at: Date | null
}

/**
 * The record of one identity, null when there is no such identity. One statement, so one snapshot: the totals
 * count only when folded in the identity's current window, and a fold deletes the deltas it adds in the same commit.
 */
export const identityFades = (identityId: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<FadeRecord>`
      select (coalesce(t.chances, 0) + d.chances)::int as chances, (coalesce(t.fades, 0) + d.fades)::int as fades,
             q.fade_flagged_at is not null as flagged, q.fade_flagged_at as flagged_at,
             q.fade_window_started_at as window_started_at
      from quote_identities q
      left join fade_totals t on t.identity_id = q.id and t.window_started_at is not distinct from q.fade_window_started_at
      cross join lateral (
        select count(*) filter (where kind = 'chance') as chances, count(*) filter (where kind = 'fade') as fades
        from fade_deltas where identity_id = q.id and chance_at >= coalesce(q.fade_window_started_at, '-infinity')
      ) d
      where q.id = ${identityId}::uuid`.pipe(Effect.map((rows) => rows[0] ?? null)),
  )

/**
 * Folds and window changes exclude each other (a transaction-scoped advisory lock): a fold reads each identity's
 * window and files its deltas under it, so no window may change between that read and its commit. A fold takes it
 * exclusively, a window change shared (window changes of different identities do not wait on each other).
 */
const FOLD_LOCK = 7_420_038

/**
 * Taken inside a transaction that changes an identity's window (src/QuoteIdentities/Repo.ts resume), before it reads
 * the time its window starts at (clock_timestamp(), not now(): a fold that ran before the lock was held cannot have
 * seen a mark made after it).
 */
export const lockFadeWindows = Effect.flatMap(SqlClient.SqlClient, (sql) =>
  Effect.asVoid(sql`select pg_advisory_xact_lock_shared(${FOLD_LOCK})`),
)

/**
 * Folds the deltas into the totals, in one transaction: the lock, then one statement that deletes every delta it
 * sees, drops those before their identity's window (windows only move forward, so they never count again) and adds
 * the rest to the identity's totals, replacing totals of an earlier window. Safe on every runner at once (the lock
 * queues them). Returns how many deltas it took.
 */
export const foldFadeDeltas = Effect.flatMap(SqlClient.SqlClient, (sql) =>
  sql.withTransaction(
    Effect.gen(function* () {
      yield* sql`select pg_advisory_xact_lock(${FOLD_LOCK})`
      const rows = yield* sql<{ n: number }>`
        with moved as (delete from fade_deltas returning identity_id, kind, chance_at),
        counted as (
          select m.identity_id, q.fade_window_started_at as window_started_at,
                 count(*) filter (where m.kind = 'chance') as chances, count(*) filter (where m.kind = 'fade') as fades
          from moved m join quote_identities q on q.id = m.identity_id
          where m.chance_at >= coalesce(q.fade_window_started_at, '-infinity')
          group by m.identity_id, q.fade_window_started_at
        ),
        folded as (
          insert into fade_totals as t (identity_id, window_started_at, chances, fades)
          select identity_id, window_started_at, chances, fades from counted order by identity_id
          on conflict (identity_id) do update set
            chances = case when t.window_started_at is not distinct from excluded.window_started_at
                           then t.chances + excluded.chances else excluded.chances end,
            fades = case when t.window_started_at is not distinct from excluded.window_started_at
                         then t.fades + excluded.fades else excluded.fades end,
            window_started_at = excluded.window_started_at
        )
        select count(*)::int as n from moved`
      return rows[0]?.n ?? 0
    }),
  ),
)
