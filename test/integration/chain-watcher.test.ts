import { SqlClient } from "@effect/sql"
import { PgClient } from "@effect/sql-pg"
import { expect, layer } from "@effect/vitest"
import { Effect, Fiber, Ref, Stream } from "effect"
import { parseEventLogs } from "viem"
import { makeVenueWatcher } from "../../actors/VenueWatcher.ts"
import { settlementEscrowAbi } from "../../src/Chain/artifacts/index.ts"
import { decodeLogs, indexedEventsAbi } from "../../src/Chain/EscrowLogs.ts"
import { AppConfig } from "../../src/Config.ts"
import { ingestPage } from "../../src/Escrow/ChainIndex.ts"
import {
  chainStatus,
  clearIntegrityAlarm,
  initChainStatus,
  requestIntegrityCheck,
} from "../../src/Escrow/ChainStatus.ts"
import {
  ESCROW_INDEXED_CHANNEL,
  escrowIndexedNotification,
  notifyEscrowIndexed,
} from "../../src/Settlement/IndexedWake.ts"
import { account, closeOrders, fundOrders, mine, orderIdOf, venueEntry } from "../support/ChainDevnet.ts"
import { faultControl, faultyTransport } from "../support/ChainFaults.ts"
import { addr, ESCROW, fill, id, LEGACY, logOf, resetLogIndex } from "../support/ChainLogs.ts"
import { chainStack, TestChainTag } from "../support/ChainStack.ts"
import { rawRequest } from "../support/Http.ts"
import { pollUntil } from "../support/Poll.ts"
import { baseUrl } from "../support/TestServer.ts"

// finalized = latest - 2 (slots 1); pages of 4 blocks so that 40+ event blocks span many pages.
const control = faultControl()
const Live = chainStack({
  anvil: { slotsInAnEpoch: 1 },
  config: (c) => ({
    venues: [
      venueEntry(c, "hyperliquid", { watcher: { page_blocks: 4, poll_ms: 50, integrity_interval_seconds: 3600 } }),
    ],
  }),
  transport: faultyTransport(control),
})

const owner = account(3)
const relayer = account(8)
const USDC = 1_000_000n

const watcher = Effect.gen(function* () {
  const { deployment } = yield* AppConfig
  return (yield* makeVenueWatcher(deployment.venues[0])).handle
})

/** Polls until the cursor reaches the finalized head (or `tries` polls). */
const pollUntilCaughtUp = (tries = 40) =>
  Effect.gen(function* () {
    const w = yield* watcher
    for (let i = 0; i < tries; i++) {
      yield* w.poll
      const row = yield* chainStatus("hyperliquid")
      if (row && row.finalizedBlock !== null && row.indexedBlock >= row.finalizedBlock) return row
    }
    return yield* Effect.die(new Error("watcher did not catch up"))
  })

const lowerAddresses = (v: unknown): unknown => {
  if (typeof v === "string" && /^0x[0-9a-fA-F]{40}$/.test(v)) return v.toLowerCase()
  if (v !== null && typeof v === "object") {
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, lowerAddresses(x)]))
  }
  return v
}

const count = (table: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<{ n: string }>`select count(*)::text as n from ${sql(table)} where venue = 'hyperliquid'`.pipe(
      Effect.map((r) => Number(r[0]!.n)),
    ),
  )

layer(Live, { timeout: "180 seconds", excludeTestServices: true })("venue watcher", (it) => {
  it.effect(
    "ingests events from many blocks across page boundaries; a restart mid-ingest resumes exactly once per event",
    () =>
      Effect.gen(function* () {
        const c = yield* TestChainTag
        const sql = yield* SqlClient.SqlClient
        const orders = yield* Effect.promise(() =>
          fundOrders(c, { owner, relayer, label: "ingest", count: 40, amount: 10n * USDC }),
        )
        yield* Effect.promise(() =>
          closeOrders(c, { owner, relayer, orderIds: orders.slice(0, 12).map((o) => o.orderId), nonceBase: 100n }),
        )
        yield* Effect.promise(() => mine(c, 3))

        // First watcher "crashes" after 5 getLogs pages.
        control.failMethodAfter = { method: "eth_getLogs", after: 5 }
        const first = yield* watcher
        const crashed = yield* Effect.either(first.poll)
        expect(crashed._tag).toBe("Left")
        control.failMethodAfter = undefined
        const partialEvents = yield* count("escrow_events")
        expect(partialEvents).toBeGreaterThan(0)

        // A second watcher (fresh memory) resumes from the persisted cursor.
        const row = yield* pollUntilCaughtUp()

        const logs = yield* Effect.promise(() =>
          c.pub.getLogs({
            address: [c.escrow, c.legacy],
            fromBlock: BigInt(c.deployment.contracts.token.block),
            toBlock: row.indexedBlock,
          }),
        )
        const expected = parseEventLogs({ abi: indexedEventsAbi, logs })
        expect(expected.length).toBeGreaterThanOrEqual(40 + 12 + 4)
        // The static decoder reads these real logs exactly as viem does (addresses lowercase).
        const ours = decodeLogs(logs, [c.escrow, c.legacy])
        expect(ours.map((e) => [e.decoded.eventName, e.decoded.args])).toEqual(
          expected.map((e) => [e.eventName, lowerAddresses(e.args)]),
        )
        const stored = yield* sql<{ block_number: string; log_index: number; event: string }>`
          select block_number::text, log_index, event from escrow_events where venue = 'hyperliquid'
          order by block_number, log_index`
        expect(stored.map((e) => `${e.block_number}:${e.log_index}:${e.event}`)).toEqual(
          expected.map((e) => `${e.blockNumber}:${e.logIndex}:${e.eventName}`),
        )
        const blocks = new Set(stored.map((e) => e.block_number))
        expect(blocks.size).toBeGreaterThan(40)

        const indexed = yield* sql<{ order_id: string; available: string; block_hash: string }>`
          select order_id, available::text, block_hash from escrow_orders where venue = 'hyperliquid'
          and order_id like ${`${orderIdOf("ingest", 0).slice(0, 16)}%`} order by order_id`
        expect(indexed.length).toBe(40)
        const closed = new Set(orders.slice(0, 12).map((o) => o.orderId.toLowerCase()))
        for (const o of indexed) {
          expect(o.available).toBe(closed.has(o.order_id) ? "0" : String(10n * USDC))
          expect(o.block_hash).toMatch(/^0x[0-9a-f]{64}$/)
        }
        expect(yield* count("escrow_closes")).toBe(12)
        expect(yield* count("escrow_used_nonces")).toBe(12)
        expect(yield* count("legacy_offers")).toBe(3)
        const reclaimed = yield* sql<{ n: string }>`
          select count(*)::text as n from legacy_offers where venue = 'hyperliquid' and reclaimed`
        expect(reclaimed[0]!.n).toBe("1")

        // Nothing above the finalized head was taken.
        const top = yield* sql<{ b: string }>`
          select coalesce(max(block_number), 0)::text as b from escrow_events where venue = 'hyperliquid'`
        expect(BigInt(top[0]!.b)).toBeLessThanOrEqual(row.finalizedBlock!)
        expect(row.indexedBlock).toBe(row.finalizedBlock)

        // The journal got one summary row per page that held events.
        const journal = yield* sql<{ events: number }>`
          select (payload->>'events')::int as events from journal where kind = 'chain.indexed'`
        expect(journal.reduce((s, j) => s + j.events, 0)).toBe(stored.length)

        // The first integrity check ran at the cursor and found nothing.
        const after = yield* chainStatus("hyperliquid")
        expect(after!.integrityMismatch).toBe(false)
        expect(after!.integrityCompletedAt).not.toBeNull()
      }),
  )

  it.effect(
    "the integrity check latches the first differing key on demand, /health turns 503, an operator clears it",
    () =>
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        const c = yield* TestChainTag
        const w = yield* watcher
        const target = orderIdOf("ingest", 20).toLowerCase()
        yield* sql`update escrow_orders set available = available + 1 where venue = 'hyperliquid' and order_id = ${target}`
        yield* requestIntegrityCheck("hyperliquid")
        yield* w.poll
        const row = yield* chainStatus("hyperliquid")
        expect(row!.integrityMismatch).toBe(true)
        expect(row!.integrityError).toContain(`order ${target} available`)
        expect(row!.integrityError).toContain("indexed 10000001, chain 10000000")
        const health = yield* rawRequest(`${yield* baseUrl}/health`)
        expect(health.status).toBe(503)
        const chain = (health.json as { chains: Array<Record<string, unknown>> }).chains[0]!
        expect(chain.integrity_mismatch).toBe(true)
        expect(chain.ready).toBe(false)
        expect(chain.integrity_error).toContain(target)
        // Latched: a later clean check does not clear it, and new final blocks are not ingested.
        yield* sql`update escrow_orders set available = available - 1 where venue = 'hyperliquid' and order_id = ${target}`
        yield* requestIntegrityCheck("hyperliquid")
        yield* Effect.promise(() => mine(c, 3))
        yield* w.poll
        const held = (yield* chainStatus("hyperliquid"))!
        expect(held.integrityMismatch).toBe(true)
        expect(held.indexedBlock).toBe(row!.indexedBlock)
        expect(held.finalizedBlock!).toBeGreaterThan(held.indexedBlock)
        // The operator clears it (npm run ops -- integrity clear): the next poll ingests again and checks clean.
        expect(yield* clearIntegrityAlarm("hyperliquid")).toEqual({ wasLatched: true, error: row!.integrityError })
        yield* w.poll
        const resumed = (yield* chainStatus("hyperliquid"))!
        expect(resumed.integrityMismatch).toBe(false)
        expect(resumed.indexedBlock).toBe(resumed.finalizedBlock)
        expect(resumed.integrityRequestedAt).toBeNull()
        expect(resumed.integrityCompletedAt!.getTime()).toBeGreaterThan(held.integrityCompletedAt!.getTime())
      }),
  )

  it.effect("an event in a block re-organised away above the finalized head never becomes indexed", () =>
    Effect.gen(function* () {
      const c = yield* TestChainTag
      const sql = yield* SqlClient.SqlClient
      yield* pollUntilCaughtUp()
      const [order] = yield* Effect.promise(() =>
        fundOrders(c, { owner, relayer, label: "reorged", count: 1, amount: 5n * USDC }),
      )
      // The funding is in the head block: not final (finalized = head - 2). The watcher skips it.
      yield* pollUntilCaughtUp()
      const hidden = yield* sql`select 1 from escrow_orders where order_id = ${order!.orderId.toLowerCase()}`
      expect(hidden.length).toBe(0)
      // Replace the two newest blocks (above finalized): the funding vanishes (anvil drops re-orged transactions).
      yield* Effect.promise(() => c.test.request({ method: "anvil_reorg", params: [2, []] } as never))
      yield* Effect.promise(() => mine(c, 4))
      const row = yield* pollUntilCaughtUp()
      expect(row.integrityMismatch).toBe(false)
      const after = yield* sql`select 1 from escrow_orders where order_id = ${order!.orderId.toLowerCase()}`
      expect(after.length).toBe(0)
      const onChain = yield* Effect.promise(() =>
        c.pub.readContract({
          abi: settlementEscrowAbi,
          address: c.escrow,
          functionName: "getOrder",
          args: [order!.orderId],
        }),
      )
      expect(onChain.available).toBe(0n)
    }),
  )

  it.effect("a reorg below the finalized head latches the alarm, stops ingestion, and /health is 503", () =>
    Effect.gen(function* () {
      const c = yield* TestChainTag
      const w = yield* watcher
      const before = yield* pollUntilCaughtUp()
      yield* Effect.promise(() => c.test.request({ method: "anvil_reorg", params: [8, []] } as never))
      yield* Effect.promise(() => mine(c, 3))
      yield* w.poll
      const row = yield* chainStatus("hyperliquid")
      expect(row!.integrityMismatch).toBe(true)
      expect(row!.integrityError).toMatch(/finality violated: (finalized|indexed) block \d+ hash changed/)
      // History is not rewritten: the cursor stays where it was.
      expect(row!.indexedBlock).toBe(before.indexedBlock)
      yield* Effect.promise(() => mine(c, 5))
      yield* w.poll
      expect((yield* chainStatus("hyperliquid"))!.indexedBlock).toBe(before.indexedBlock)
      const health = yield* rawRequest(`${yield* baseUrl}/health`)
      expect(health.status).toBe(503)
      expect((health.json as { status: string }).status).toBe("degraded")
    }),
  )

  it.effect("one page writes every event kind in one transaction, and a moved cursor changes nothing", () =>
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      resetLogIndex()
      const venue = "synthetic"
      yield* initChainStatus(venue, 1, addr(0x0b), 1)
      const o = id(1)
      const owner = addr(3)
      const recipient = addr(0xee)
      const logs = [
        logOf(
          "OrderFunded",
          {
            orderId: o,
            owner,
            operator: addr(0xb),
            quoteSigner: addr(5),
            amount: 100n,
            available: 100n,
            created: true,
            digest: id(7),
          },
          1n,
        ),
        logOf(
          "Locked",
          {
            fillId: id(0x10),
            orderId: o,
            payer: addr(0xa1),
            fill: fill(id(0x10), o, 30n, 9n, recipient),
            quoteIndex: 2n,
            quoteSetDigest: id(8),
            fillDigest: id(9),
          },
          2n,
        ),
        logOf(
          "Claimed",
          {
            fillId: id(0x10),
            orderId: o,
            recipient,
            amountOut: 30n,
            dex: 0,
            toMargin: true,
            refused: true,
            secret: id(0x5),
          },
          3n,
        ),
        logOf(
          "Paid",
          {
            fillId: id(0x20),
            payer: addr(0xa1),
            payee: addr(0xa2),
            fill: fill(id(0x20), o, 1n, 9n, recipient),
            fillDigest: id(10),
          },
          3n,
        ),
        logOf("PaymentClaimed", { fillId: id(0x20), payee: addr(0xa2), amountIn: 9n, secret: id(0x5) }, 4n),
        logOf(
          "OrderClosed",
          {
            orderId: o,
            owner,
            caller: owner,
            amount: 70n,
            dex: 0,
            toMargin: false,
            refused: false,
            byOperator: false,
            nonce: 77n,
          },
          4n,
        ),
        logOf("NonceInvalidated", { owner, nonce: 78n }, 4n),
        logOf("OfferCreated", { id: 1n, owner, amount: 10n, refundAt: 99n }, 5n, LEGACY),
        logOf("OfferReclaimed", { id: 1n, owner, amount: 10n }, 5n, LEGACY),
      ]
      const events = decodeLogs(logs, [ESCROW, LEGACY])
      expect(events.length).toBe(logs.length)
      // The page's wake-up goes in its transaction: heard once it commits, never for a page that changed nothing.
      const pg = yield* PgClient.PgClient
      const heard = yield* Ref.make<ReadonlyArray<string>>([])
      const listener = yield* pg.listen(ESCROW_INDEXED_CHANNEL).pipe(
        Stream.runForEach((payload) => Ref.update(heard, (xs) => [...xs, payload])),
        Effect.fork,
      )
      const heardProbe = (probe: string) =>
        pollUntil(Effect.zipRight(notifyEscrowIndexed(probe), Ref.get(heard)), (xs) => xs.includes(probe), {
          every: "50 millis",
          within: "10 seconds",
        })
      yield* heardProbe("probe-before")
      const notify = [escrowIndexedNotification(venue)]
      const page = { venue, chainId: 1, fromBlock: 1n, toBlock: 5n, toHash: id(5), events, notify }
      expect(yield* ingestPage(page)).toBe(events.length)
      const moved = yield* Effect.either(ingestPage(page))
      expect(moved._tag === "Left" && moved.left._tag).toBe("CursorMoved")
      // The refused page appended no journal row either (its wake-up is checked below).
      const summaries = sql<{ n: number }>`
        select count(*)::int as n from journal where kind = 'chain.indexed' and payload->>'venue' = ${venue}`
      expect(yield* summaries).toEqual([{ n: 1 }])
      const one = <A extends object>(q: Effect.Effect<ReadonlyArray<A>, unknown>) => Effect.map(q, (r) => r[0]!)
      expect(
        yield* one(
          sql`select available::text, locked::text, owner, block_number::text from escrow_orders where venue = ${venue}`,
        ),
      ).toEqual({ available: "0", locked: "0", owner, block_number: "4" })
      expect(
        yield* one(sql`select balance::text from escrow_balances where venue = ${venue} and owner = ${recipient}`),
      ).toEqual({
        balance: "30",
      })
      expect(
        yield* one(sql`select state, refused, secret, amount_out::text from escrow_locks where venue = ${venue}`),
      ).toEqual({
        state: "claimed",
        refused: true,
        secret: id(0x5),
        amount_out: "30",
      })
      expect(yield* one(sql`select state, amount_in::text, payee from escrow_payments where venue = ${venue}`)).toEqual(
        {
          state: "claimed",
          amount_in: "9",
          payee: addr(0xa2),
        },
      )
      const fills = yield* sql<{ side: string; quote_index: string | null; amount: string }>`
        select side, quote_index::text, fill->>'amountOut' as amount from escrow_fills where venue = ${venue} order by side`
      expect(fills).toEqual([
        { side: "maker", quote_index: "2", amount: "30" },
        { side: "taker", quote_index: null, amount: "1" },
      ])
      expect(
        yield* sql`select nonce::text, reason from escrow_used_nonces where venue = ${venue} order by nonce`,
      ).toEqual([
        { nonce: "77", reason: "closed" },
        { nonce: "78", reason: "invalidated" },
      ])
      expect(yield* one(sql`select amount::text, refused from escrow_closes where venue = ${venue}`)).toEqual({
        amount: "70",
        refused: false,
      })
      expect(yield* one(sql`select reclaimed, amount::text from legacy_offers where venue = ${venue}`)).toEqual({
        reclaimed: true,
        amount: "10",
      })
      const blocks = yield* sql<{
        n: string
      }>`select block_number::text as n from chain_blocks where venue = ${venue} order by 1`
      expect(blocks.map((b) => b.n)).toEqual(["1", "2", "3", "4", "5"])
      const args = yield* one(sql<{ a: string }>`
        select args->'fill'->>'recipient' as a from escrow_events where venue = ${venue} and event = 'Locked'`)
      expect(args.a).toBe(recipient)
      const empty = { venue, chainId: 1, fromBlock: 6n, toBlock: 9n, toHash: id(9), events: [], notify }
      expect(yield* ingestPage(empty)).toBe(0)
      expect((yield* chainStatus(venue))!.indexedBlock).toBe(9n)
      expect(yield* sql`select 1 from chain_blocks where venue = ${venue} and block_number = 9`).toHaveLength(1)
      // Notifications reach a listener in commit order: once a later probe is heard, every earlier one has been.
      const all = yield* heardProbe("probe-after")
      expect(all.filter((p) => p === venue)).toEqual([venue])
      yield* Fiber.interrupt(listener)
    }),
  )

  it.effect("two writers of one page at once: one applies it, the other fails its guard and changes nothing", () =>
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      resetLogIndex()
      const venue = "overlap"
      yield* initChainStatus(venue, 1, addr(0x0b), 1)
      const o = id(0x31)
      const recipient = addr(0xef)
      const funded = {
        orderId: o,
        owner: addr(3),
        operator: addr(0xb),
        quoteSigner: addr(5),
        amount: 100n,
        available: 100n,
        created: true,
        digest: id(7),
      }
      const locked = {
        fillId: id(0x32),
        orderId: o,
        payer: addr(0xa1),
        fill: fill(id(0x32), o, 30n, 9n, recipient),
        quoteIndex: 0n,
        quoteSetDigest: id(8),
        fillDigest: id(0x33),
      }
      const first = decodeLogs([logOf("OrderFunded", funded, 1n), logOf("Locked", locked, 1n)], [ESCROW])
      yield* ingestPage({ venue, chainId: 1, fromBlock: 1n, toBlock: 1n, toHash: id(0x41), events: first })
      // A claim refused to the margin: it moves the order's locked amount and credits the recipient's escrow balance,
      // each relative to the rows a writer read, so a page applied twice would show.
      const claimed = {
        fillId: id(0x32),
        orderId: o,
        recipient,
        amountOut: 30n,
        dex: 0,
        toMargin: true,
        refused: true,
        secret: id(0x5),
      }
      const events = decodeLogs([logOf("Claimed", claimed, 2n)], [ESCROW])
      const page = { venue, chainId: 1, fromBlock: 2n, toBlock: 2n, toHash: id(0x42), events }
      const outcomes = yield* Effect.all([ingestPage(page), ingestPage(page)], {
        concurrency: 2,
        mode: "either",
      })
      const applied = outcomes.filter((x) => x._tag === "Right")
      const refused = outcomes.flatMap((x) => (x._tag === "Left" ? [x.left] : []))
      expect(applied).toHaveLength(1)
      expect(refused.map((e) => e._tag)).toEqual(["CursorMoved"])
      expect(
        yield* sql`select available::text, locked::text from escrow_orders where venue = ${venue} and order_id = ${o}`,
      ).toEqual([{ available: "70", locked: "0" }])
      expect(yield* sql`select balance::text from escrow_balances where venue = ${venue}`).toEqual([{ balance: "30" }])
      expect(yield* sql`select state from escrow_locks where venue = ${venue}`).toEqual([{ state: "claimed" }])
      expect(
        yield* sql`select count(*)::int as n from escrow_events where venue = ${venue} and block_number = 2`,
      ).toEqual([{ n: 1 }])
      expect(
        yield* sql`
          select count(*)::int as n from journal where kind = 'chain.indexed' and payload->>'venue' = ${venue}`,
      ).toEqual([{ n: 2 }])
      expect((yield* chainStatus(venue))!.indexedBlock).toBe(2n)
    }),
  )

  it.effect("the watcher loop keeps running through failures (interruptible)", () =>
    Effect.gen(function* () {
      const { deployment } = yield* AppConfig
      const { run } = yield* makeVenueWatcher(deployment.venues[0])
      control.mode = "unreachable"
      const fiber = yield* Effect.fork(run)
      // Polled, not a fixed sleep: under load the first failed poll lands later than ~300 ms.
      const row = yield* pollUntil(chainStatus("hyperliquid"), (r) => (r?.error ?? "").includes("rpc"), {
        every: "100 millis",
        within: "20 seconds",
      })
      expect(row!.error).toContain("rpc")
      // Still running after the failures.
      expect(fiber.unsafePoll()).toBeNull()
      yield* Fiber.interrupt(fiber)
    }).pipe(
      Effect.ensuring(
        Effect.sync(() => {
          control.mode = "ok"
        }),
      ),
    ),
  )
})
