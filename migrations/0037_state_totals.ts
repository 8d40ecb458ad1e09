import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * Rows of closes and withdrawals by state, kept as totals so that /metrics does not count both tables on every
 * scrape (src/Sql/StateTotals.ts; test/bench/metrics.ts: 189 ms at 100,000 rows each, 939 ms at 1,000,000).
 *
 * A row's insert, state change or delete appends its deltas (+1 to its new state, −1 to its old) to `state_deltas`
 * by trigger, inside the writer's transaction: an insert into a table without keys, so no writer waits on another
 * and none can deadlock on it. The janitor folds the deltas into `state_totals` from time to time; a read sums both
 * in one snapshot, so it counts every committed row exactly once whether or not its delta was folded yet.
 *
 * Both tables are locked by the triggers' creation until this migration commits, so the totals counted here are
 * exact: no writer can change a state between the count and the trigger.
 */
export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    create table state_totals (
      kind text not null,
      state text not null,
      n bigint not null,
      primary key (kind, state)
    )`
  // A queue: rows come and go with every fold. Vacuumed after a thousand dead rows rather than a fifth of the table,
  // so a read's scan of it stays short (the table's pages are reused, not grown).
  yield* sql`
    create table state_deltas (kind text not null, state text not null, delta int not null)
    with (autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 1000)`
  yield* sql.unsafe(`
    create function state_deltas_append() returns trigger language plpgsql as $fn$
    begin
      if tg_op <> 'INSERT' then
        insert into state_deltas (kind, state, delta) values (tg_table_name, old.state, -1);
      end if;
      if tg_op <> 'DELETE' then
        insert into state_deltas (kind, state, delta) values (tg_table_name, new.state, 1);
      end if;
      return null;
    end
    $fn$`)
  for (const table of ["closes", "withdrawals"]) {
    yield* sql.unsafe(`
      create trigger ${table}_state_rows after insert or delete on ${table}
      for each row execute function state_deltas_append()`)
    yield* sql.unsafe(`
      create trigger ${table}_state_change after update of state on ${table}
      for each row when (old.state is distinct from new.state) execute function state_deltas_append()`)
    yield* sql.unsafe(`
      insert into state_totals (kind, state, n)
      select '${table}', state, count(*) from ${table} group by state`)
  }
})
