import type { SqlClient, SqlError } from "@effect/sql"
import { PgClient } from "@effect/sql-pg"
import { Context, Deferred, type Duration, Effect, Exit, FiberId, Layer, Queue, Schedule, Stream } from "effect"
import { JOURNAL_PUBLISHED_CHANNEL } from "../Sql/Journal.ts"
import { StreamConnections } from "./Connections.ts"
import { type JournalEvent, journalHead, readJournalAfter } from "./JournalReader.ts"

/** Rows read per query while catching up. */
const READ_BATCH = 500
/** Fallback poll when a notification is missed (e.g. while the LISTEN connection reconnects). */
const POLL = "500 millis"
/** How much of the journal's recent past the shared window keeps (rows, and bytes of encoded events). */
export class JournalTailWindow extends Context.Reference<JournalTailWindow>()("JournalTailWindow", {
  defaultValue: () => ({ rows: 4096, bytes: 16 * 1024 * 1024 }),
}) {}

export interface JournalTailService {
  /** The highest cursor this process has read from the journal. */
  readonly last: Effect.Effect<bigint>
  /**
   * Up to `limit` published rows with a cursor above `after`, in cursor order, read from the journal:
   * from the shared window of recent rows when it holds them, else by a query of its own (a client
   * resuming from an older cursor). Empty when `after` is at or beyond the known head.
   */
  readonly pageAfter: (
    after: bigint,
    limit: number,
  ) => Effect.Effect<ReadonlyArray<JournalEvent>, SqlError.SqlError, SqlClient.SqlClient>
  /** Waits until this process has read a row beyond `after`, or until `timeout`. */
  readonly awaitBeyond: (after: bigint, timeout: Duration.DurationInput) => Effect.Effect<void>
  /**
   * Registers a caught-up subscriber (`follower.last` equals the last row read) to be handed every
   * later batch of rows synchronously, as the tail reads it. False when it is not caught up.
   */
  readonly follow: (follower: Follower) => Effect.Effect<boolean>
  readonly unfollow: (follower: Follower) => Effect.Effect<void>
}

/**
 * A subscriber in push mode. `push` receives each batch the tail reads, in cursor order (normally
 * starting at `last + 1`; anything else means rows were pruned), must update `last`, and returns
 * false to stop following (its socket is backed up or gone).
 */
export interface Follower {
  last: bigint
  readonly push: (rows: ReadonlyArray<JournalEvent>) => boolean
}

/**
 * One reader of the journal per process, shared by every stream subscriber: it wakes on the
 * publisher's `pg_notify` (JOURNAL_PUBLISHED_CHANNEL carries the highest assigned cursor) with a
 * 500 ms poll as fallback, reads `where cursor > $last order by cursor`, and keeps a bounded window
 * of the most recent rows. Subscribers that are caught up take their pages from that window (rows
 * read from the journal by cursor, exactly as a query would return them), so a publication costs one
 * query per process instead of one per subscriber; subscribers further behind query the journal
 * themselves. The window is always a contiguous run of cursors. Caught-up subscribers may follow the
 * tail: each batch is then handed to them as it is read (a broadcast, no wake-up per subscriber).
 */
export class JournalTail extends Context.Tag("JournalTail")<JournalTail, JournalTailService>() {
  static readonly Live = Layer.scoped(
    JournalTail,
    Effect.gen(function* () {
      const pg = yield* PgClient.PgClient
      const { rows: WINDOW_ROWS, bytes: WINDOW_BYTES } = yield* JournalTailWindow
      let window: Array<JournalEvent> = []
      let windowBytes = 0
      let last = yield* journalHead.pipe(Effect.orDie)
      let advanced = Deferred.unsafeMake<void>(FiberId.none)
      const followers = new Set<Follower>()

      const append = (rows: ReadonlyArray<JournalEvent>) => {
        const first = rows[0]
        if (first === undefined) return
        // Rows were pruned while this reader was behind: restart the window at what exists.
        if (first.cursor !== last + 1n) {
          window = []
          windowBytes = 0
        }
        for (const row of rows) {
          window.push(row)
          windowBytes += row.json.length
        }
        if (window.length > WINDOW_ROWS * 1.25 || windowBytes > WINDOW_BYTES) {
          let drop = Math.max(0, window.length - WINDOW_ROWS)
          let bytes = windowBytes
          for (let i = 0; i < drop; i++) bytes -= window[i]!.json.length
          while (bytes > WINDOW_BYTES / 2 && drop < window.length - 1) bytes -= window[drop++]!.json.length
          window = window.slice(drop)
          windowBytes = bytes
        }
        last = rows[rows.length - 1]!.cursor
        for (const follower of followers) {
          let keep = false
          try {
            keep = follower.push(rows)
          } catch {
            keep = false
          }
          if (!keep) followers.delete(follower)
        }
        const done = advanced
        advanced = Deferred.unsafeMake<void>(FiberId.none)
        Deferred.unsafeDone(done, Exit.void)
      }

      const drain: Effect.Effect<void, SqlError.SqlError, SqlClient.SqlClient> = Effect.suspend(() =>
        readJournalAfter(last, READ_BATCH),
      ).pipe(
        Effect.tap(append),
        Effect.flatMap((rows) => (rows.length === READ_BATCH ? drain : Effect.void)),
      )

      const wake = yield* Queue.sliding<bigint>(1)
      yield* pg.listen(JOURNAL_PUBLISHED_CHANNEL).pipe(
        Stream.runForEach((payload) => Queue.offer(wake, /^[0-9]+$/.test(payload) ? BigInt(payload) : 0n)),
        Effect.retry(Schedule.spaced("1 second")),
        Effect.forkScoped,
      )
      // Skip the query when the notification announces nothing new.
      const nextWake = Queue.take(wake).pipe(
        Effect.repeat({ until: (announced) => announced > last }),
        Effect.timeout(POLL),
        Effect.ignore,
      )
      yield* drain.pipe(
        Effect.zipRight(nextWake),
        Effect.catchAllCause((cause) =>
          Effect.logWarning("journal tail failed; retrying", cause).pipe(Effect.zipRight(Effect.sleep("1 second"))),
        ),
        Effect.forever,
        Effect.annotateLogs({ component: "JournalTail" }),
        Effect.forkScoped,
      )

      return {
        last: Effect.sync(() => last),
        pageAfter: (after, limit) =>
          Effect.suspend(() => {
            if (after >= last) return Effect.succeed([])
            const first = window[0]
            if (first !== undefined && after + 1n >= first.cursor) {
              const start = Number(after + 1n - first.cursor)
              StreamConnections.recordPage("window")
              return Effect.succeed(window.slice(start, start + limit))
            }
            StreamConnections.recordPage("journal")
            return readJournalAfter(after, limit)
          }),
        awaitBeyond: (after, timeout) =>
          Effect.suspend(() =>
            last > after ? Effect.void : Deferred.await(advanced).pipe(Effect.timeout(timeout), Effect.ignore),
          ),
        follow: (follower) =>
          Effect.sync(() => {
            if (follower.last !== last) return false
            followers.add(follower)
            return true
          }),
        unfollow: (follower) =>
          Effect.sync(() => {
            followers.delete(follower)
          }),
      } satisfies JournalTailService
    }),
  )
}
