/** JournalFeed (src/Sql/Journal.ts): a listener that throws neither stops the others nor the publisher. */
import { Effect, Exit, Scope } from "effect"
import { describe, expect, it } from "vitest"
import { JournalFeed, type PublishedJournalRow } from "../../src/Sql/Journal.ts"

const row = (cursor: number): PublishedJournalRow => ({
  cursor: String(cursor),
  kind: "trade.settled",
  master: null,
  created_at: new Date(0),
  payload: "{}",
  identity_id: null,
  from_venue: null,
  to_venue: null,
})

describe("JournalFeed", () => {
  it("hands rows to every listener, counts the ones that threw, and forgets a listener when its scope closes", () =>
    Effect.gen(function* () {
      const feed = yield* JournalFeed
      const seen: Array<string> = []
      const scope = yield* Scope.make()
      yield* feed.listen(() => {
        throw new Error("listener bug")
      })
      yield* feed.listen((rows) => seen.push(...rows.map((r) => r.cursor))).pipe(Scope.extend(scope))
      expect(feed.offer([row(1), row(2)])).toBe(1)
      expect(feed.offer([])).toBe(0)
      yield* Scope.close(scope, Exit.void)
      expect(feed.offer([row(3)])).toBe(1)
      expect(seen).toEqual(["1", "2"])
    }).pipe(Effect.scoped, Effect.provide(JournalFeed.Live), Effect.runPromise))
})
