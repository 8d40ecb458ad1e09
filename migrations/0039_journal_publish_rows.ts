import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * journal_publish (0033) that also returns the rows it published, so that the publisher can hand them to its own
 * process's stream tail (src/Sql/Journal.ts `JournalFeed`) instead of that tail reading them back after the
 * announcement: one statement and one round trip less per publication, on the path of every stream delivery.
 *
 * journal_publish_rows(lim, lock_key, channel): the same lock, snapshot, gapless assignment in id order and
 * announcement of the highest cursor on `channel` as journal_publish, returning each row it gave a cursor, in cursor
 * order, as the stream reads it (src/Stream/JournalReader.ts): cursor as text, kind, master, created_at, the payload
 * as text and the three fields the stream filters on. No row when nothing was waiting. journal_publish stays for a
 * runner of the previous version during a rolling start.
 */
export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql.unsafe(`
    create function journal_publish_rows(lim int, lock_key bigint, channel text)
    returns table (
      pub_cursor text, pub_kind text, pub_master text, pub_created_at timestamptz, pub_payload text,
      pub_identity_id text, pub_from text, pub_to text
    )
    language plpgsql volatile as $fn$
    declare
      n int;
    begin
      perform pg_advisory_xact_lock(lock_key);
      return query
        with base as (select coalesce(max(j.cursor), 0) as c from journal j),
        todo as (
          select j.id, row_number() over (order by j.id) as rn
          from journal j where j.cursor is null order by j.id limit lim
        ),
        assigned as (
          update journal j set cursor = base.c + todo.rn, published_at = now()
          from todo, base where j.id = todo.id
          returning j.cursor, j.kind, j.master, j.created_at, j.payload
        )
        select a.cursor::text, a.kind::text, a.master::text, a.created_at::timestamptz, a.payload::text,
               a.payload->>'identity_id', a.payload->>'from', a.payload->>'to'
        from assigned a order by a.cursor;
      get diagnostics n = row_count;
      if n > 0 then
        -- The lock is still held: the highest cursor is the one just assigned.
        perform pg_notify(channel, (select max(j.cursor)::text from journal j));
      end if;
    end
    $fn$`)
})
