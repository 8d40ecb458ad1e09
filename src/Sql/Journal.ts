import { SqlClient, type Statement } from "@effect/sql"
import { Effect } from "effect"

/** Channel a writer pings so the publisher wakes at once instead of at its next poll. */
export const JOURNAL_PENDING_CHANNEL = "journal_pending"
/** Channel the publisher notifies with the highest cursor it assigned. */
export const JOURNAL_PUBLISHED_CHANNEL = "journal_published"
/** Serialises publishers: only one transaction assigns cursors at a time, even during a singleton hand-over. */
export const PUBLISHER_LOCK = 7_210_001

export interface JournalEntry {
  readonly kind: string
  /** Lowercase master address for private events; null for public ones. */
  readonly master: string | null
  readonly payload: unknown
}

export interface JournalStats {
  readonly unpublished: number
  /** Age of the oldest row still without a cursor, whole seconds (0 when none). */
  readonly oldestUnpublishedSeconds: number
}

/** A notification sent with a journal row (same transaction, same statement). */
export interface Notification {
  readonly channel: string
  readonly payload: string
}

/**
 * The insert of journal rows (in this order), returning their ids: a fragment for a statement's `with` (a state
 * change that writes its journal rows in its own statement). `when`: a condition the rows are written under (say,
 * that the statement's update changed a row).
 */
export const journalRowsInsert = (
  sql: SqlClient.SqlClient,
  entries: ReadonlyArray<JournalEntry>,
  when: Statement.Fragment = sql`true`,
) => sql`
  insert into journal (kind, master, payload)
  select k, m, p from rows from (
    unnest(${entries.map((e) => e.kind)}::text[]), unnest(${entries.map((e) => e.master)}::text[]),
    jsonb_array_elements(${JSON.stringify(entries.map((e) => e.payload ?? null))}::jsonb)
  ) as t(k, m, p)
  where ${when}
  returning id`

/**
 * The publisher's ping and `also` sent: a fragment selecting one `pg_notify` per notification (a statement may add a
 * `where`). NOTIFY is transactional: delivered at commit, once per transaction for the same channel and payload.
 */
export const journalNotify = (sql: SqlClient.SqlClient, also: ReadonlyArray<Notification>) => {
  const notifications = [{ channel: JOURNAL_PENDING_CHANNEL, payload: "1" }, ...also]
  return sql`
    select pg_notify(n.channel, n.payload)
    from unnest(${notifications.map((n) => n.channel)}::text[], ${notifications.map((n) => n.payload)}::text[])
      as n(channel, payload)`
}

/**
 * Appends journal rows (in this order) and pings the publisher, and sends `also` (the change's own wake-ups), in
 * one statement: one round trip. Call it inside the state change's own transaction so that the rows exist if and
 * only if the change committed.
 */
export const appendJournalRows = (entries: ReadonlyArray<JournalEntry>, also: ReadonlyArray<Notification> = []) =>
  Effect.flatMap(
    SqlClient.SqlClient,
    (sql) => sql`
      with appended as (${journalRowsInsert(sql, entries)})
      ${journalNotify(sql, also)}
      where exists (select 1 from appended)`,
  ).pipe(Effect.asVoid)

/** One journal row: appendJournalRows of one. */
export const appendJournal = (entry: JournalEntry, also: ReadonlyArray<Notification> = []) =>
  appendJournalRows([entry], also)

/**
 * Gives the committed rows that have no cursor yet the next cursors, in id order, and returns how
 * many it published and the highest cursor. Only rows visible now (committed) can be selected, so a
 * row whose transaction commits later simply receives a later cursor: cursors are gapless,
 * increasing and never reassigned.
 */
export const publishJournalBatch = (limit: number) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    // One round trip (migration 0033): the advisory lock, then the assignment under a snapshot taken once the lock
    // is held (it must see what the previous holder committed), and the announcement of the highest cursor.
    sql<{ published: number; last: string | null }>`
      select published, last from journal_publish(${limit}, ${PUBLISHER_LOCK}, ${JOURNAL_PUBLISHED_CHANNEL})`.pipe(
      Effect.map(([row]) => ({ published: row?.published ?? 0, last: BigInt(row?.last ?? 0) })),
    ),
  )

export const journalStats = Effect.flatMap(SqlClient.SqlClient, (sql) =>
  sql<{ unpublished: string; oldest: string | null }>`
    select count(*)::text as unpublished,
           floor(extract(epoch from (now() - min(created_at))))::text as oldest
    from journal where cursor is null`.pipe(
    Effect.map(
      ([row]): JournalStats => ({
        unpublished: Number(row?.unpublished ?? 0),
        oldestUnpublishedSeconds: Math.max(0, Number(row?.oldest ?? 0)),
      }),
    ),
  ),
)
