import { SqlClient } from "@effect/sql"
import { PgClient } from "@effect/sql-pg"
import { expect, layer } from "@effect/vitest"
import { Effect, Fiber, Ref, Stream } from "effect"
import type { Hex } from "viem"
import { makeEscrowV2Ingest } from "../../actors/EscrowV2Ingest.ts"
import type { VenueConfig } from "../../src/Config.ts"
import { CursorMoved } from "../../src/Escrow/ChainIndex.ts"
import { v2Cursor } from "../../src/Escrow/ChainIndexV2.ts"
import { ESCROW_INDEXED_CHANNEL, notifyEscrowIndexed } from "../../src/Settlement/IndexedWake.ts"
import { account } from "../support/ChainDevnet.ts"
import { TestDatabaseLive } from "../support/Database.ts"
import { fundV2Order, startV2Chain } from "../support/EscrowV2Chains.ts"
import { pollUntil } from "../support/Poll.ts"

/**
 * The v2 ingest wakes the Settlement sweep (ESCROW_INDEXED_CHANNEL) with a page that has v2 events (sent in the
 * page's transaction, delivered at commit, as the v1 ingest sends it with its page's journal row), so a final v2
 * step is acted on at once rather than at the sweep's fallback beat. This page holds an order's event, which names
 * no fill, so the payload is the venue alone (a page of lock and payment events names its fills instead:
 * test/unit/escrow-indexed-wake.test.ts).
 * Asserted on the notification itself (no timing): a real anvil chain with SettlementEscrowV2, a funded order, the
 * ingest run once to the finalized head. Then the cursor the ingest keeps between calls: moved by another writer,
 * it costs one refused page, never a page applied twice.
 */
layer(TestDatabaseLive, { timeout: "120 seconds", excludeTestServices: true })("escrow v2 ingest wake-up", (it) => {
  it.scoped("a v2 page with events notifies escrow_indexed with the venue after it commits", () =>
    Effect.gen(function* () {
      const chain = yield* Effect.acquireRelease(
        Effect.promise(() => startV2Chain(999, { slotsInAnEpoch: 1 })),
        (c) => Effect.promise(() => c.anvil.stop()),
      )
      const pg = yield* PgClient.PgClient
      const heard = yield* Ref.make<ReadonlyArray<string>>([])
      const listener = yield* pg.listen(ESCROW_INDEXED_CHANNEL).pipe(
        Stream.runForEach((venue) => Ref.update(heard, (xs) => [...xs, venue])),
        Effect.fork,
      )
      // LISTEN is active once a probe of our own comes back (no sleep).
      yield* pollUntil(Effect.zipRight(notifyEscrowIndexed("probe"), Ref.get(heard)), (xs) => xs.includes("probe"), {
        every: "50 millis",
        within: "10 seconds",
      })
      const operator = account(0)
      yield* Effect.promise(() =>
        fundV2Order(chain, {
          owner: account(1),
          relayer: operator,
          orderId: `0x${"11".repeat(32)}` as Hex,
          operator: operator.address,
          quoteSigner: account(2).address,
          amount: 5_000_000n,
        }),
      )
      yield* Effect.promise(() => chain.test.mine({ blocks: 3 }))
      const finalized = yield* Effect.promise(() => chain.pub.getBlock({ blockTag: "finalized" }))
      const venue = {
        id: "hyperliquid",
        escrow_v2: { address: chain.escrow, deployment_block: 0 },
        watcher: { page_blocks: 1000 },
      } as unknown as VenueConfig
      const ingest = makeEscrowV2Ingest(venue, chain.pub)
      if (ingest === undefined) return expect.fail("the venue configures escrow_v2")
      yield* ingest({ number: finalized.number, hash: finalized.hash as Hex })
      const cursor = yield* v2Cursor("hyperliquid")
      expect(cursor?.indexedBlock).toBe(finalized.number)
      const after = yield* pollUntil(Ref.get(heard), (xs) => xs.includes("hyperliquid"), {
        every: "50 millis",
        within: "10 seconds",
      })
      expect(after.filter((v) => v === "hyperliquid")).toEqual(["hyperliquid"])
      yield* Fiber.interrupt(listener)

      // The ingest keeps the cursor it moved. Another writer moved it meanwhile (a hand-over): the next page fails its
      // guard and writes nothing; the call after reads the table again and goes on from there.
      const sql = yield* SqlClient.SqlClient
      const moved = finalized.number + 1n
      yield* sql`update escrow_v2_cursor set indexed_block = ${moved.toString()} where venue = 'hyperliquid'`
      yield* Effect.promise(() => chain.test.mine({ blocks: 3 }))
      const next = yield* Effect.promise(() => chain.pub.getBlock({ blockTag: "finalized" }))
      const head = { number: next.number, hash: next.hash as Hex }
      expect(yield* Effect.flip(ingest(head))).toBeInstanceOf(CursorMoved)
      expect((yield* v2Cursor("hyperliquid"))?.indexedBlock).toBe(moved)
      yield* ingest(head)
      expect((yield* v2Cursor("hyperliquid"))?.indexedBlock).toBe(next.number)
    }),
  )
})
