import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * An identity's chances and fades of its current window counted over `settlement_v2_marks` themselves: the read
 * before migration 0038's totals, the reference the fade-totals test compares with and fades.ts measures.
 */
export const fadesOverMarks = (identityId: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    Effect.map(
      sql<{ chances: number; fades: number }>`
        select (select count(*)::int from settlement_v2_marks c where c.identity_id = q.id and c.kind = 'chance'
                  and c.created_at >= coalesce(q.fade_window_started_at, '-infinity')) as chances,
               (select count(*)::int from settlement_v2_marks f
                  join settlement_v2_marks c on c.fill_id = f.fill_id and c.kind = 'chance'
                  where f.identity_id = q.id and f.kind = 'fade'
                    and c.created_at >= coalesce(q.fade_window_started_at, '-infinity')) as fades
        from quote_identities q where q.id = ${identityId}::uuid`,
      ([r]) => ({ chances: r!.chances, fades: r!.fades }),
    ),
  )
