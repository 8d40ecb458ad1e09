import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * The fade record's totals (migrations/0038_fade_totals.ts): the janitor's fold of the chances' and fades' deltas
 * into them, and the lock a change of an identity's window takes. The record's read is the Settlement concept's
 * (src/Settlement/FadeRecord.ts).
 */

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
