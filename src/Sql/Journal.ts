import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/** Channel a writer pings so the publisher wakes at once instead of at its next poll. */
export const JOURNAL_PENDING_CHANNEL = "journal_pending"
/** Channel the publisher notifies with the highest cursor it assigned. */
export const JOURNAL_PUBLISHED_CHANNEL = "journal_published"
/** Serialises publishers: only one transaction assigns cursors at a time, even during a singleton hand-over. */
const PUBLISHER_LOCK = 7_210_001

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
 * Appends journal rows (in this order) and pings the publisher, and sends `also` (the change's own wake-ups), in
 * one statement: one round trip. Call it inside the state change's own transaction so that the rows exist if and
 * only if the change committed; NOTIFY is transactional too (delivered at commit, once per transaction for the
 * same channel and payload).
 */
export const appendJournalRows = (entries: ReadonlyArray<JournalEntry>, also: ReadonlyArray<Notification> = []) => {
  const notifications = [{ channel: JOURNAL_PENDING_CHANNEL, payload: "1" }, ...also]
  return Effect.flatMap(
    SqlClient.SqlClient,
    (sql) => sql`
      with appended as (
        insert into journal (kind, master, payload)
        select k, m, p from rows from (
          unnest(${entries.map((e) => e.kind)}::text[]), unnest(${entries.map((e) => e.master)}::text[]),
          jsonb_array_elements(${JSON.stringify(entries.map((e) => e.payload ?? null))}::jsonb)
        ) as t(k, m, p)
        returning id
      )
      select pg_notify(n.channel, n.payload)
      from unnest(${notifications.map((n) => n.channel)}::text[], ${notifications.map((n) => n.payload)}::text[])
        as n(channel, payload)
      where exists (select 1 from appended)`,
  ).pipe(Effect.asVoid)
}

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
    sql.withTransaction(
      Effect.gen(function* () {
        // The lock first, in its own statement: the assignment's snapshot must see what the previous holder committed.
        yield* sql`select pg_advisory_xact_lock(${PUBLISHER_LOCK})`
        // Assigns, and announces the highest cursor when there was one, in one statement.
        const [row] = yield* sql<{ published: number; last: string | null }>`
          with base as (select coalesce(max(cursor), 0) as c from journal),
          todo as (
            select id, row_number() over (order by id) as rn
            from journal where cursor is null order by id limit ${limit}
          ),
          assigned as (
            update journal j set cursor = base.c + todo.rn, published_at = now()
            from todo, base where j.id = todo.id
            returning j.cursor
          ),
          summary as (select count(*)::int as published, max(cursor)::text as last from assigned)
          select published, last, (select pg_notify(${JOURNAL_PUBLISHED_CHANNEL}, last) where published > 0)::text
          from summary`
        return { published: row?.published ?? 0, last: BigInt(row?.last ?? 0) }
      }),
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
