import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * The journal publisher's batch as one function call: one round trip instead of four (BEGIN, the advisory lock,
 * the assignment, COMMIT), the publisher's share being ~13% of a settlement's statements.
 *
 * Why a function: the assignment must run with a snapshot taken after the lock is held (it reads the highest
 * cursor and the rows still without one, which the previous holder may just have committed), so the lock cannot
 * share the assignment's statement. In READ COMMITTED each query of a VOLATILE function takes a fresh snapshot:
 * the assignment's is taken once the lock is held, as the two statements did. Called outside a transaction, the
 * call is its own transaction and the transaction-scoped lock is released when it ends.
 *
 * journal_publish(lim, lock_key, channel): assigns the next cursors (gapless, in id order) to at most `lim`
 * committed rows without one, notifies `channel` with the highest cursor when there was one, and returns how many
 * it published and that cursor (as text; null when none). src/Sql/Journal.ts calls it.
 */
export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql.unsafe(`
    create function journal_publish(lim int, lock_key bigint, channel text)
    returns table (published int, last text)
    language plpgsql volatile as $fn$
    begin
      perform pg_advisory_xact_lock(lock_key);
      with base as (select coalesce(max(j.cursor), 0) as c from journal j),
      todo as (
        select j.id, row_number() over (order by j.id) as rn
        from journal j where j.cursor is null order by j.id limit lim
      ),
      assigned as (
        update journal j set cursor = base.c + todo.rn, published_at = now()
        from todo, base where j.id = todo.id
        returning j.cursor
      )
      select count(*)::int, max(a.cursor)::text into published, last from assigned a;
      if published > 0 then
        perform pg_notify(channel, last);
      end if;
      return next;
    end
    $fn$`)
})
