import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * The journal (outbox): one row per state change, written in the change's own transaction.
 * `cursor` is assigned later by the JournalPublisher in commit order; `id` is only an insertion
 * order and may commit out of order, so readers page by cursor, never by id.
 */
export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    create table journal (
      id bigserial primary key,
      cursor bigint unique,
      kind text not null,
      master varchar(42),
      payload jsonb not null,
      created_at timestamptz not null default now(),
      published_at timestamptz
    )`
  yield* sql`create index journal_unpublished on journal (id) where cursor is null`
})
