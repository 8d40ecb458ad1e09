import type { SqlClient, SqlError } from "@effect/sql"
import { PgClient } from "@effect/sql-pg"
import { Context, Deferred, type Duration, Effect, Exit, FiberId, Layer, Queue, Schedule, Stream } from "effect"
import { JOURNAL_PUBLISHED_CHANNEL, JournalFeed } from "../Sql/Journal.ts"
import { StreamConnections } from "./Connections.ts"
import { type JournalEvent, journalHead, readJournalAfter, toEvent } from "./JournalReader.ts"
import { JournalWindow } from "./JournalWindow.ts"

/** Rows read per query while catching up. */
const READ_BATCH = 500
/** Fallback poll when a notification is missed (e.g. while the LISTEN connection reconnects). */
const POLL = "500 millis"
/**
 * How long an announcement waits for this process's publisher to hand its rows over before they are read: the
 * announcement and the publisher's answer leave PostgreSQL together and either may be handled first. Only while
 * the publisher runs here (it handed rows over within HANDOVER_RECENT_MS); elsewhere the rows are read at once.
 */
const HANDOVER_WAIT = "25 millis"
const HANDOVER_RECENT_MS = 5_000
/** How much of the journal's recent past the shared window keeps (rows, and bytes of encoded events). */
export class JournalTailWindow extends Context.Reference<JournalTailWindow>()("JournalTailWindow", {
  defaultValue: () => ({ rows: 4096, bytes: 16 * 1024 * 1024 }),
}) {}

export interface JournalTailService {
  /** The highest cursor this process has read from the journal. */
  readonly last: Effect.Effect<bigint>
  /** Non-empty batches so far: read by a query, and handed over by this process's publisher (JournalFeed). */
  readonly batches: Effect.Effect<{ readonly read: number; readonly handed: number }>
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
 * themselves. The window is always a contiguous run of cursors (src/Stream/JournalWindow.ts). Caught-up
 * subscribers may follow the tail: each batch is then handed to them as it is read (a broadcast, no wake-up per
 * subscriber). In the runner that hosts the journal publisher, the publisher hands what it publishes straight to
 * the tail (JournalFeed), so there no query follows an announcement.
 */
export class JournalTail extends Context.Tag("JournalTail")<JournalTail, JournalTailService>() {
  static readonly Live = Layer.scoped(
    JournalTail,
    Effect.gen(function* () {
      const pg = yield* PgClient.PgClient
      const limits = yield* JournalTailWindow
      let advanced = Deferred.unsafeMake<void>(FiberId.none)
      const followers = new Set<Follower>()
      /** Batches taken from the journal by a query, and from this process's publisher (JournalFeed). */
      const batches = { read: 0, handed: 0 }
      // Each run of new rows goes to the followers, then wakes whoever awaits a row beyond the last.
      const window = new JournalWindow(yield* journalHead.pipe(Effect.orDie), limits, (rows) => {
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
      })
      const append = (rows: ReadonlyArray<JournalEvent>) => {
        if (rows.length > 0) batches.read++
        window.read(rows)
      }

      // This process's publisher hands over what it published, so no read follows its announcement when the rows
      // continue the window; anything else is left to the reads.
      const clock = yield* Effect.clock
      let handedAt = Number.NEGATIVE_INFINITY
      const feed = yield* Effect.serviceOption(JournalFeed)
      if (feed._tag === "Some") {
        yield* feed.value.listen((published) => {
          handedAt = clock.unsafeCurrentTimeMillis()
          if (window.handed(published.map(toEvent))) batches.handed++
        })
      }
      /** Until the window reaches `cursor`. */
      const reach = (cursor: bigint): Effect.Effect<void> =>
        Effect.suspend(() =>
          window.last >= cursor ? Effect.void : Deferred.await(advanced).pipe(Effect.zipRight(reach(cursor))),
        )

      const drain: Effect.Effect<void, SqlError.SqlError, SqlClient.SqlClient> = Effect.suspend(() =>
        readJournalAfter(window.last, READ_BATCH),
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
      // Waits for an announcement of rows beyond the window, then (with the publisher here) for its hand-over: no
      // query when that brought them.
      const awaitWork: Effect.Effect<void> = Queue.take(wake).pipe(
        Effect.repeat({ until: (announced) => announced > window.last }),
        Effect.flatMap((announced) =>
          clock.unsafeCurrentTimeMillis() - handedAt < HANDOVER_RECENT_MS
            ? reach(announced).pipe(
                Effect.timeout(HANDOVER_WAIT),
                Effect.ignore,
                Effect.zipRight(Effect.suspend(() => (window.last >= announced ? awaitWork : Effect.void))),
              )
            : Effect.void,
        ),
      )
      const nextWake = awaitWork.pipe(Effect.timeout(POLL), Effect.ignore)
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
        last: Effect.sync(() => window.last),
        batches: Effect.sync(() => ({ ...batches })),
        pageAfter: (after, limit) =>
          Effect.suspend(() => {
            const page = window.pageAfter(after, limit)
            if (page !== undefined) {
              if (page.length > 0) StreamConnections.recordPage("window")
              return Effect.succeed(page)
            }
            StreamConnections.recordPage("journal")
            return readJournalAfter(after, limit)
          }),
        awaitBeyond: (after, timeout) =>
          Effect.suspend(() =>
            window.last > after ? Effect.void : Deferred.await(advanced).pipe(Effect.timeout(timeout), Effect.ignore),
          ),
        follow: (follower) =>
          Effect.sync(() => {
            if (follower.last !== window.last) return false
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
