import { SqlClient, type Statement } from "@effect/sql"
import { Context, Effect, Layer, type Scope } from "effect"

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
 * A published journal row as the stream reads it (src/Stream/JournalReader.ts turns it into the event it sends):
 * the cursor as text, the payload as text, and the payload's fields the stream filters on.
 */
export interface PublishedJournalRow {
  readonly cursor: string
  readonly kind: string
  readonly master: string | null
  readonly created_at: Date
  readonly payload: string
  readonly identity_id: string | null
  readonly from_venue: string | null
  readonly to_venue: string | null
}

/**
 * Gives the committed rows that have no cursor yet the next cursors, in id order, and returns how
 * many it published, the highest cursor and the rows it published, in cursor order. Only rows visible
 * now (committed) can be selected, so a row whose transaction commits later simply receives a later
 * cursor: cursors are gapless, increasing and never reassigned. Called outside a transaction, the
 * answer arrives once the assignment is committed.
 */
export const publishJournalBatch = (limit: number) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    // One round trip (migrations 0033, 0039): the advisory lock, then the assignment under a snapshot taken once the
    // lock is held (it must see what the previous holder committed), the announcement of the highest cursor, and
    // the rows it published.
    sql<{
      pub_cursor: string
      pub_kind: string
      pub_master: string | null
      pub_created_at: Date
      pub_payload: string
      pub_identity_id: string | null
      pub_from: string | null
      pub_to: string | null
    }>`
      select * from journal_publish_rows(${limit}, ${PUBLISHER_LOCK}, ${JOURNAL_PUBLISHED_CHANNEL})`.pipe(
      Effect.map((found) => {
        const rows = found.map(
          (r): PublishedJournalRow => ({
            cursor: r.pub_cursor,
            kind: r.pub_kind,
            master: r.pub_master,
            created_at: r.pub_created_at,
            payload: r.pub_payload,
            identity_id: r.pub_identity_id,
            from_venue: r.pub_from,
            to_venue: r.pub_to,
          }),
        )
        return { published: rows.length, last: BigInt(rows.at(-1)?.cursor ?? 0), rows }
      }),
    ),
  )

/**
 * This process's hand-over of what its journal publisher just published to its own stream tail
 * (src/Stream/JournalTail.ts), which then need not read those rows back after the announcement. Only the rows of
 * one process's own database pass here: a layer, one per service, never module state (two services in one test
 * process keep apart). The tail still reads what other runners publish (their announcement), and anything this
 * hand-over does not continue exactly.
 */
export class JournalFeed extends Context.Tag("JournalFeed")<
  JournalFeed,
  {
    /**
     * Hands published rows (contiguous, in cursor order, committed) to every listener, synchronously; returns how
     * many listeners threw (each is isolated: the rows stay published, and a reader that missed them reads them).
     */
    readonly offer: (rows: ReadonlyArray<PublishedJournalRow>) => number
    /** Adds a listener until the scope closes. */
    readonly listen: (
      listener: (rows: ReadonlyArray<PublishedJournalRow>) => void,
    ) => Effect.Effect<void, never, Scope.Scope>
  }
>() {
  static readonly Live = Layer.sync(JournalFeed, () => {
    const listeners = new Set<(rows: ReadonlyArray<PublishedJournalRow>) => void>()
    return {
      offer: (rows) => {
        let threw = 0
        if (rows.length === 0) return threw
        for (const listener of listeners) {
          try {
            listener(rows)
          } catch {
            threw++
          }
        }
        return threw
      },
      listen: (listener) =>
        Effect.acquireRelease(
          Effect.sync(() => listeners.add(listener)),
          () => Effect.sync(() => listeners.delete(listener)),
        ).pipe(Effect.asVoid),
    }
  })
}

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
