import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * A quote identity's fade record (chances and fades of its current window, src/Settlement/FadeRecord.ts) kept as
 * totals, so that reading it (an identity's view, each identity of a list, every fade) no longer counts every
 * chance the identity ever had: a window without a flag never resets, so that count grew with its fills.
 *
 * Each `chance` or `fade` mark appends a delta by trigger, inside the writer's transaction (an insert into a table
 * without keys: no writer waits on another). A delta carries its chance's time, the time that places a mark in a
 * window (a fade counts in the window of its chance). The janitor folds deltas into `fade_totals` (one row per
 * identity, for the window it was folded in); a read takes the totals only when their window is the identity's
 * current one, plus the deltas in that window, in one snapshot. Marks are never updated or deleted.
 *
 * `settlement_v2_marks` is locked by the trigger's creation, then `quote_identities` against window changes, until
 * this migration commits (the writers' own order: a fade's mark, then its identity), so the totals counted here are
 * exact.
 */
export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    create table fade_totals (
      identity_id uuid primary key,
      window_started_at timestamptz,
      chances bigint not null,
      fades bigint not null
    )`
  // A queue: rows come and go with every fold (vacuumed after a thousand dead rows, as state_deltas).
  yield* sql`
    create table fade_deltas (identity_id uuid not null, kind text not null, chance_at timestamptz not null)
    with (autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 1000)`
  yield* sql`create index fade_deltas_identity on fade_deltas (identity_id)`
  yield* sql.unsafe(`
    create function fade_deltas_append() returns trigger language plpgsql as $fn$
    begin
      insert into fade_deltas (identity_id, kind, chance_at)
      select new.identity_id, new.kind,
             case when new.kind = 'chance' then new.created_at
                  else (select c.created_at from settlement_v2_marks c where c.fill_id = new.fill_id and c.kind = 'chance')
             end
      where new.kind = 'chance'
         or exists (select 1 from settlement_v2_marks c where c.fill_id = new.fill_id and c.kind = 'chance');
      return null;
    end
    $fn$`)
  yield* sql`
    create trigger settlement_v2_marks_fade_deltas after insert on settlement_v2_marks
    for each row when (new.kind in ('chance', 'fade')) execute function fade_deltas_append()`
  yield* sql`lock table quote_identities in share mode`
  yield* sql`
    insert into fade_totals (identity_id, window_started_at, chances, fades)
    select q.id, q.fade_window_started_at,
           (select count(*) from settlement_v2_marks c where c.identity_id = q.id and c.kind = 'chance'
              and c.created_at >= coalesce(q.fade_window_started_at, '-infinity')),
           (select count(*) from settlement_v2_marks f
              join settlement_v2_marks c on c.fill_id = f.fill_id and c.kind = 'chance'
              where f.identity_id = q.id and f.kind = 'fade'
                and c.created_at >= coalesce(q.fade_window_started_at, '-infinity'))
    from quote_identities q
    where exists (select 1 from settlement_v2_marks m where m.identity_id = q.id and m.kind = 'chance')`
})
