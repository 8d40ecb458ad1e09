/**
 * The journal publisher hands what it publishes to its own process's stream tail (JournalFeed, migration 0039), so
 * that tail does not read those rows back after the announcement: the rows handed over are the rows a read returns,
 * and the tail's window holds every published row once, in cursor order, whichever source brought it.
 */
import { SqlClient } from "@effect/sql"
import { expect, layer } from "@effect/vitest"
import { Effect, Fiber, Layer } from "effect"
import { runJournalPublisher } from "../../actors/JournalPublisher.ts"
import { appendJournal, JournalFeed, publishJournalBatch } from "../../src/Sql/Journal.ts"
import { readJournalAfter, toEvent } from "../../src/Stream/JournalReader.ts"
import { JournalTail } from "../../src/Stream/JournalTail.ts"
import { TestDatabaseLive } from "../support/Database.ts"
import { pollUntil } from "../support/Poll.ts"

const Live = JournalTail.Live.pipe(Layer.provideMerge(JournalFeed.Live), Layer.provideMerge(TestDatabaseLive))

const entries = [
  { kind: "trade.settled", master: null, payload: { from: "aster", to: "hyperliquid", amount: "1" } },
  { kind: "quote_identity.lease_expired", master: "0xabc", payload: { identity_id: "id-1", generation: 3 } },
  { kind: "odd", master: null, payload: { text: 'quote " and \u00e9 and \u{1f600}', nested: { a: [1, 2] } } },
  { kind: "null-payload", master: null, payload: null },
]

layer(Live, { timeout: "120 seconds", excludeTestServices: true })("journal feed", (it) => {
  it.effect("the rows a publication returns are the rows a read of the same cursors returns", () =>
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const before = BigInt((yield* sql<{ c: string }>`select coalesce(max(cursor), 0)::text as c from journal`)[0]!.c)
      for (const entry of entries) yield* appendJournal(entry)
      const published = yield* publishJournalBatch(100)
      expect(published.published).toBe(entries.length)
      expect(published.last).toBe(before + BigInt(entries.length))
      const read = yield* readJournalAfter(before, 100)
      expect(published.rows.map(toEvent)).toEqual(read)
      expect(read.map((e) => [e.kind, e.master, e.identityId, e.from, e.to])).toEqual([
        ["trade.settled", null, null, "aster", "hyperliquid"],
        ["quote_identity.lease_expired", "0xabc", "id-1", null, null],
        ["odd", null, null, null, null],
        ["null-payload", null, null, null, null],
      ])
      // Nothing waiting: no row, and the cursor where it was.
      const none = yield* publishJournalBatch(100)
      expect(none).toEqual({ published: 0, last: 0n, rows: [] })
    }),
  )

  it.effect("the publisher's own tail takes its publications as handed over, each row once, as a read has them", () =>
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const tail = yield* JournalTail
      // Everything earlier published, so the tail's window continues from here.
      while ((yield* publishJournalBatch(500)).published > 0) {}
      const start = BigInt((yield* sql<{ c: string }>`select coalesce(max(cursor), 0)::text as c from journal`)[0]!.c)
      yield* pollUntil(tail.last, (l) => l === start, { every: "20 millis", within: "10 seconds" })
      const before = yield* tail.batches
      const publisher = yield* Effect.fork(runJournalPublisher)
      const N = 40
      // One at a time and a few at once, so that publications come in runs of one and of several.
      for (let i = 0; i < N / 2; i++) yield* appendJournal({ kind: "seq", master: null, payload: { i } })
      yield* Effect.forEach(
        Array.from({ length: N / 2 }, (_, i) => i),
        (i) => appendJournal({ kind: "burst", master: null, payload: { i } }),
        { concurrency: 4, discard: true },
      )
      yield* pollUntil(tail.last, (l) => l === start + BigInt(N), { every: "20 millis", within: "10 seconds" })
      yield* Fiber.interrupt(publisher)
      const after = yield* tail.batches
      // The publisher's announcement also reaches the tail; a read happens only if it arrives before the hand-over.
      expect(after.handed - before.handed).toBeGreaterThan(0)
      const page = yield* tail.pageAfter(start, 500)
      expect(page.map((e) => e.cursor)).toEqual(Array.from({ length: N }, (_, i) => start + 1n + BigInt(i)))
      expect(page).toEqual(yield* readJournalAfter(start, 500))
    }),
  )
})
