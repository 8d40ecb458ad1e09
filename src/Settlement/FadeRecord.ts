import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * A quote identity's fade record: chances and fades of its current window (migration 0028: the marks whose chance was
 * recorded at or after `fade_window_started_at`, all when null; a fade counts in the window of its chance), read at a
 * cost that does not grow with the identity's fills (migrations/0038_fade_totals.ts). Triggers append each chance
 * and fade to `fade_deltas`; the janitor moves them into `fade_totals` (src/Sql/FadeTotals.ts).
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
