import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import type { PublishedJournalRow } from "../Sql/Journal.ts"

/**
 * Reads of the published journal (rows with a cursor) for the stream and for snapshot cursors.
 * Rows are always read by cursor, never by id: cursors are gapless and assigned in commit order by
 * the JournalPublisher, so `cursor > $after order by cursor` never skips a row that commits later.
 */

/** One published journal row, ready to filter and to send. */
export interface JournalEvent {
  readonly cursor: bigint
  readonly kind: string
  /** Lowercase master address of a private event; null for a public one. */
  readonly master: string | null
  /** `data.identity_id` when present: the quote identity a maker credential must be bound to. */
  readonly identityId: string | null
  /** `data.from` / `data.to`: the venues of a trade (pair filter). */
  readonly from: string | null
  readonly to: string | null
  /** The event as sent, `{cursor, kind, at, data}`, encoded once. */
  readonly json: string
}

/** A published row as the event the stream sends (a read below, or the publisher's own hand-over). */
export const toEvent = (row: PublishedJournalRow): JournalEvent => ({
  cursor: BigInt(row.cursor),
  kind: row.kind,
  master: row.master,
  identityId: row.identity_id,
  from: row.from_venue,
  to: row.to_venue,
  json: `{"cursor":"${row.cursor}","kind":${JSON.stringify(row.kind)},"at":"${row.created_at.toISOString()}","data":${row.payload}}`,
})

/**
 * Up to `limit` published rows with a cursor above `after`, in cursor order. (Order by `j.cursor`:
 * a bare `cursor` would name the text output column and sort "10" before "9".)
 */
export const readJournalAfter = (after: bigint, limit: number) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<PublishedJournalRow>`
      select j.cursor::text as cursor, j.kind, j.master, j.created_at, j.payload::text as payload,
             j.payload->>'identity_id' as identity_id, j.payload->>'from' as from_venue,
             j.payload->>'to' as to_venue
      from journal j where j.cursor > ${after.toString()}
      order by j.cursor limit ${limit}`.pipe(Effect.map((rows) => rows.map(toEvent))),
  )

/** The highest published cursor, 0 when nothing is published yet. */
export const journalHead = Effect.flatMap(SqlClient.SqlClient, (sql) =>
  sql<{ head: string }>`select coalesce(max(cursor), 0)::text as head from journal`.pipe(
    Effect.map(([row]) => BigInt(row?.head ?? "0")),
  ),
)

/**
 * The oldest cursor still in the journal (retention). A stream may resume after `c` when
 * `c >= oldest - 1`; anything older lost rows and answers `cursor_expired`. None when no row is
 * published.
 */
export const oldestRetainedCursor = Effect.flatMap(SqlClient.SqlClient, (sql) =>
  sql<{ oldest: string | null }>`select min(cursor)::text as oldest from journal where cursor is not null`.pipe(
    Effect.map(([row]) => (row?.oldest == null ? null : BigInt(row.oldest))),
  ),
)

/**
 * Retention: deletes published rows with a cursor up to `through`, always keeping the newest
 * published row (the publisher continues numbering from the highest cursor in the table). Streams
 * resuming from a deleted cursor answer `cursor_expired`. Returns the number of rows deleted.
 */
export const pruneJournalThrough = (through: bigint) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<{ n: string }>`
      with gone as (
        delete from journal
        where cursor is not null and cursor <= ${through.toString()}
          and cursor < (select max(cursor) from journal)
        returning 1
      )
      select count(*)::text as n from gone`.pipe(Effect.map(([row]) => Number(row?.n ?? 0))),
  )
