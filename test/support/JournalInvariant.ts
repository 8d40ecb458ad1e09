import { SqlClient } from "@effect/sql"
import { expect } from "@effect/vitest"
import { Effect } from "effect"

/**
 * DESIGN §11's "journal gapless", checked after a fault test: the cursors the publisher assigned run without a hole
 * (a crash mid-publish commits a whole batch or none; cursors are unique by index), so a stream client resuming
 * from any cursor misses nothing.
 */
export const expectJournalGapless = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const [r] = yield* sql<{ n: string; lo: string | null; hi: string | null }>`
    select count(cursor)::text as n, min(cursor)::text as lo, max(cursor)::text as hi from journal`
  const n = BigInt(r!.n)
  if (n > 0n) expect(BigInt(r!.hi!) - BigInt(r!.lo!) + 1n, "journal cursors without a hole").toBe(n)
})
