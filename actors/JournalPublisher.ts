import type { SqlClient, SqlError } from "@effect/sql"
import { PgClient } from "@effect/sql-pg"
import { Duration, Effect, Queue, Schedule, Stream } from "effect"
import { supervisedSingleton } from "../src/Cluster/Supervision.ts"
import { JOURNAL_PENDING_CHANNEL, JournalFeed, publishJournalBatch } from "../src/Sql/Journal.ts"

const BATCH = 500
/** Fallback poll when a notification is missed (e.g. while the LISTEN connection reconnects). */
const POLL = Duration.millis(250)

/**
 * Publishes until nothing is left, then waits for a writer's ping or the poll interval. What it publishes goes to
 * this process's stream tail too (JournalFeed, when the process has one), committed, so that tail need not read it
 * back; other runners' tails read it after the announcement.
 */
export const runJournalPublisher = Effect.gen(function* () {
  const pg = yield* PgClient.PgClient
  const feed = yield* Effect.serviceOption(JournalFeed)
  const wake = yield* Queue.sliding<void>(1)
  yield* pg.listen(JOURNAL_PENDING_CHANNEL).pipe(
    Stream.runForEach(() => Queue.offer(wake, undefined)),
    Effect.retry(Schedule.spaced("1 second")),
    Effect.forkScoped,
  )
  const drain: Effect.Effect<void, SqlError.SqlError, SqlClient.SqlClient> = publishJournalBatch(BATCH).pipe(
    Effect.tap(({ rows }) => {
      const threw = feed._tag === "Some" ? feed.value.offer(rows) : 0
      return threw === 0
        ? Effect.void
        : Effect.logWarning("a journal feed listener failed; its reader will read the rows instead").pipe(
            Effect.annotateLogs({ listeners: threw, rows: rows.length }),
          )
    }),
    Effect.flatMap(({ published }) => (published === BATCH ? drain : Effect.void)),
  )
  // A failure (the database gone) ends the run: the supervisor restarts it with the shared backoff and records
  // the restart and its cause in /health (src/Cluster/Supervision.ts), as for every other singleton.
  yield* drain.pipe(Effect.zipRight(Queue.take(wake).pipe(Effect.timeout(POLL), Effect.ignore)), Effect.forever)
}).pipe(Effect.scoped, Effect.annotateLogs({ actor: "JournalPublisher" }))

/** One publisher in the whole cluster: the cursor sequence has a single writer. */
export const JournalPublisherLive = supervisedSingleton("journal-publisher", runJournalPublisher)
