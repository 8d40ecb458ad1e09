import { SqlClient } from "@effect/sql"
import { expect, layer } from "@effect/vitest"
import { Deferred, Effect, Fiber, Random } from "effect"
import { runJournalPublisher } from "../../actors/JournalPublisher.ts"
import { appendJournal, JOURNAL_PUBLISHED_CHANNEL, journalStats, publishJournalBatch } from "../../src/Sql/Journal.ts"
import { TestDatabaseLive } from "../support/Database.ts"
import { listenLive } from "../support/Listen.ts"
import { pollUntil } from "../support/Poll.ts"

const cursors = Effect.flatMap(
  SqlClient.SqlClient,
  (sql) =>
    sql<{ id: string; cursor: string | null; kind: string }>`
    select id::text, cursor::text, kind from journal j order by j.cursor nulls last, j.id`,
)

const reset = Effect.flatMap(SqlClient.SqlClient, (sql) => sql`truncate journal restart identity`)

layer(TestDatabaseLive, { timeout: "120 seconds", excludeTestServices: true })("journal", (it) => {
  it.effect("a row that commits later than a higher id gets the next cursor; none is skipped", () =>
    Effect.gen(function* () {
      yield* reset
      const sql = yield* SqlClient.SqlClient
      const inserted = yield* Deferred.make<void>()
      const release = yield* Deferred.make<void>()
      // T1 takes id 1 and stays open.
      const t1 = yield* sql
        .withTransaction(
          appendJournal({ kind: "late", master: null, payload: { n: 1 } }).pipe(
            Effect.zipRight(Deferred.succeed(inserted, undefined)),
            Effect.zipRight(Deferred.await(release)),
          ),
        )
        .pipe(Effect.fork)
      yield* Deferred.await(inserted)
      // T2 takes id 2 and commits first.
      yield* sql.withTransaction(appendJournal({ kind: "early", master: null, payload: { n: 2 } }))
      expect((yield* publishJournalBatch(100)).published).toBe(1)
      // T1's row is invisible until it commits, so nothing can be published ahead of it later.
      expect(yield* cursors).toEqual([{ id: "2", cursor: "1", kind: "early" }])
      yield* Deferred.succeed(release, undefined)
      yield* Fiber.join(t1)
      expect((yield* publishJournalBatch(100)).published).toBe(1)
      expect(yield* cursors).toEqual([
        { id: "2", cursor: "1", kind: "early" },
        { id: "1", cursor: "2", kind: "late" },
      ])
      expect(yield* journalStats).toEqual({ unpublished: 0, oldestUnpublishedSeconds: 0 })
    }),
  )

  it.effect("a rolled-back change leaves no row and no hole in the cursors", () =>
    Effect.gen(function* () {
      yield* reset
      const sql = yield* SqlClient.SqlClient
      yield* sql.withTransaction(appendJournal({ kind: "a", master: null, payload: {} }))
      yield* sql
        .withTransaction(
          appendJournal({ kind: "rolled-back", master: null, payload: {} }).pipe(Effect.zipRight(Effect.fail("no"))),
        )
        .pipe(Effect.ignore)
      yield* sql.withTransaction(appendJournal({ kind: "b", master: null, payload: {} }))
      yield* publishJournalBatch(100)
      const rows = yield* cursors
      expect(rows.map((r) => [r.kind, r.cursor])).toEqual([
        ["a", "1"],
        ["b", "2"],
      ])
    }),
  )

  it.effect(
    "concurrent writers with random commit delays and a running publisher: cursors are 1..N, in publish order",
    () =>
      Effect.gen(function* () {
        yield* reset
        const sql = yield* SqlClient.SqlClient
        const notified: Array<bigint> = []
        const listener = yield* listenLive(JOURNAL_PUBLISHED_CHANNEL, (p) =>
          Effect.sync(() => notified.push(BigInt(p))),
        )
        const publisher = yield* Effect.fork(runJournalPublisher)
        const N = 120
        yield* Effect.forEach(
          Array.from({ length: N }, (_, i) => i),
          (i) =>
            Effect.flatMap(Random.nextIntBetween(0, 40), (delay) =>
              sql.withTransaction(
                appendJournal({ kind: "w", master: null, payload: { i } }).pipe(
                  Effect.zipRight(Effect.sleep(`${delay} millis`)),
                ),
              ),
            ),
          { concurrency: 12, discard: true },
        )
        // Wait until the publisher has caught up.
        yield* pollUntil(journalStats, (s) => s.unpublished === 0, { every: "20 millis", within: "10 seconds" })
        const rows = yield* cursors
        expect(rows.length).toBe(N)
        expect(rows.map((r) => r.cursor)).toEqual(Array.from({ length: N }, (_, i) => String(i + 1)))
        const seen = new Set(rows.map((r) => r.id))
        expect(seen.size).toBe(N)
        yield* Effect.sleep("300 millis")
        // Notifications announce strictly increasing cursors up to N.
        expect(notified.length).toBeGreaterThan(0)
        expect(notified.every((c, i) => i === 0 || c > notified[i - 1]!)).toBe(true)
        expect(notified.at(-1)).toBe(BigInt(N))
        yield* Fiber.interrupt(publisher)
        yield* Fiber.interrupt(listener)
      }),
  )

  it.effect(
    "publishers racing (a hand-over overlapping) never give a cursor twice: each assigns after the last one's commit",
    () =>
      Effect.gen(function* () {
        yield* reset
        const sql = yield* SqlClient.SqlClient
        const N = 200
        // Writers and four publishers at once; each publisher call takes at most 3 rows, so the calls interleave.
        const writers = Effect.forEach(
          Array.from({ length: N }, (_, i) => i),
          (i) => sql.withTransaction(appendJournal({ kind: "w", master: null, payload: { i } })),
          { concurrency: 8, discard: true },
        )
        const publishers = Effect.forEach([1, 2, 3, 4], () => Effect.repeatN(publishJournalBatch(3), 40), {
          concurrency: "unbounded",
          discard: true,
        })
        yield* Effect.all([writers, publishers], { concurrency: "unbounded", discard: true })
        while ((yield* publishJournalBatch(100)).published > 0) {}
        const rows = yield* cursors
        expect(rows.map((r) => r.cursor)).toEqual(Array.from({ length: N }, (_, i) => String(i + 1)))
      }),
  )

  it.effect("journal figures for /health count rows without a cursor and the oldest one's age", () =>
    Effect.gen(function* () {
      yield* reset
      const sql = yield* SqlClient.SqlClient
      yield* appendJournal({ kind: "x", master: null, payload: {} })
      yield* sql`update journal set created_at = now() - interval '42 seconds'`
      yield* appendJournal({ kind: "y", master: "0xabc", payload: {} })
      const stats = yield* journalStats
      expect(stats.unpublished).toBe(2)
      expect(stats.oldestUnpublishedSeconds).toBeGreaterThanOrEqual(42)
      expect(stats.oldestUnpublishedSeconds).toBeLessThan(60)
    }),
  )
})
