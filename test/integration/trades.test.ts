/**
 * GET /v1/trades and GET /v1/trades/history over settled fills: fixture rows with real signatures (viem accounts)
 * until takes settle end to end. Proofs are verified offline with viem alone; history pages newest first by
 * (settled_at, id) without loss or repeats while new trades settle; scope=mine shows exactly the account's trades
 * (maker or taker); every bad parameter answers the envelope with a 4xx.
 */
import { SqlClient } from "@effect/sql"
import { expect, layer } from "@effect/vitest"
import { Context, Deferred, Duration, Effect, Fiber, Layer } from "effect"
import type { Hex } from "viem"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { runTxRelayer } from "../../actors/TxRelayer.ts"
import { runVenueWatcher } from "../../actors/VenueWatcher.ts"
import { ChainClients } from "../../src/Chain/ChainClients.ts"
import { FaultPoint } from "../../src/Chain/FaultPoint.ts"
import { AppConfig } from "../../src/Config.ts"
import { DevelopmentConfig } from "../../src/DevelopmentConfig.ts"
import { EVENT_CURSOR_ROUTES } from "../../src/Http/Api.ts"
import { Relayer } from "../../src/Relayer.ts"
import { account, key, startTestChain, type TestChain, venueEntry } from "../support/ChainDevnet.ts"
import { TestDatabaseLive } from "../support/Database.ts"
import { rawRequest } from "../support/Http.ts"
import { issueCredential, registerIdentity } from "../support/QuoteIdentities.ts"
import { settlementPass } from "../support/SettlementPass.ts"
import { bearer, signIn } from "../support/SignIn.ts"
import { makerOrder, plainOpen, plainSeal, signedTake } from "../support/Takes.ts"
import { testAppConfig } from "../support/TestConfig.ts"
import { baseUrl, TestHttpLive } from "../support/TestServer.ts"
import { testStackWithChain } from "../support/TestStack.ts"
import { insertTrade, type ProofJson, signTrade, verifyTradeProofOffline } from "../support/TradeFixtures.ts"

const Live = testStackWithChain()
const [hl, aster] = DevelopmentConfig.venues as unknown as [
  { id: string; chain_id: number; token: string; escrow: string },
  { id: string; chain_id: number; token: string; escrow: string },
]

interface Item {
  readonly id: string
  readonly from: string
  readonly to: string
  readonly amount_in: string
  readonly amount_out: string
  readonly at: string
  readonly order_id: string
  readonly proof: ProofJson
}
interface Page {
  readonly data: ReadonlyArray<Item>
  readonly next_cursor: string | null
  readonly has_more: boolean
}

const fresh = () => privateKeyToAccount(generatePrivateKey())
const code = (res: { json: unknown }) => (res.json as { error?: { code: string } } | undefined)?.error?.code
const get = (url: string, token?: string) => rawRequest(url, { headers: token === undefined ? {} : bearer(token) })

/** Every page of a history query; checks the page invariants on the way. */
const walk = (base: string, query: string, token?: string) =>
  Effect.gen(function* () {
    const items: Array<Item> = []
    let after: string | null = null
    for (let n = 0; n < 1_000; n++) {
      const url: string = `${base}/v1/trades/history?${query}${after === null ? "" : `&after=${after}`}`
      const res = yield* get(url, token)
      expect(res.status, res.text).toBe(200)
      const page = res.json as Page
      items.push(...page.data)
      expect(page.has_more).toBe(page.next_cursor !== null)
      if (page.next_cursor === null) break
      expect(page.next_cursor.length).toBeLessThanOrEqual(512)
      after = page.next_cursor
    }
    return items
  })

/**
 * `count` settled fills cloned in SQL from one signed trade (new ids and fill keys; their proofs are not valid,
 * pagination does not read them): groups of 5 share one settlement microsecond, so ties are broken by id.
 */
const cloneTrades = (fillId: string, count: number, start: string) =>
  Effect.flatMap(
    SqlClient.SqlClient,
    (sql) => sql`
      insert into fills (id, take_id, order_id, taker_venue, payer, state, final, created_at, updated_at, fill_key,
        maker_venue, sequence, quote_index, quote_identity_id, amount_in, amount_out, payee, recipient, hashlock,
        secret_ciphertext, maker_expiry, taker_expiry, fill, signature, settled_at)
      select g.id, f.take_id, f.order_id, f.taker_venue, f.payer, 'settled', true, now(), now(),
        '0x' || lpad(replace(g.id::text, '-', ''), 64, '0'), f.maker_venue, f.sequence, f.quote_index,
        f.quote_identity_id, f.amount_in, f.amount_out, f.payee, f.recipient, f.hashlock, f.secret_ciphertext,
        f.maker_expiry, f.taker_expiry, f.fill, f.signature,
        ${start}::timestamptz + (g.n / 5) * interval '1 millisecond'
      from fills f, (select gen_random_uuid() as id, n from generate_series(1, ${count}) n) g
      where f.id = ${fillId}`,
  )

layer(Live, { timeout: "240 seconds", excludeTestServices: true })("trades", (it) => {
  it.effect("history proofs verify offline with viem alone; recent trades list the pair latest first", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const maker = fresh().address
      const taker = fresh().address
      const ids: Array<string> = []
      for (let i = 0; i < 6; i++) {
        const [m, t] = i % 2 === 0 ? [hl, aster] : [aster, hl]
        const trade = yield* Effect.promise(() => signTrade({ maker: m, taker: t, amountIn: 1_000_000n + BigInt(i) }))
        ids.push(
          yield* insertTrade(trade, {
            makerMaster: maker,
            takerMaster: taker,
            settledAt: `timestamptz '2030-01-01T00:00:00Z' + interval '${i} second'`,
          }),
        )
      }
      const res = yield* get(`${base}/v1/trades/history?a=hyperliquid&b=aster&limit=500`)
      expect(res.status, res.text).toBe(200)
      expect(res.headers["x-event-cursor"]).toMatch(/^[0-9]+$/)
      const page = res.json as Page
      const mine = page.data.filter((x) => ids.includes(x.id))
      expect(mine.map((x) => x.id)).toEqual([...ids].reverse())
      for (const item of mine) {
        expect(yield* Effect.promise(() => verifyTradeProofOffline(item, item.proof)), item.id).toEqual([])
        expect(item.proof.transactions.map((x) => [x.kind, x.chain_id])).toEqual([
          ["lock", item.to === "hyperliquid" ? hl.chain_id : aster.chain_id],
          ["pay", item.from === "hyperliquid" ? hl.chain_id : aster.chain_id],
          ["claim", item.to === "hyperliquid" ? hl.chain_id : aster.chain_id],
          ["claim_payment", item.from === "hyperliquid" ? hl.chain_id : aster.chain_id],
        ])
        for (const tx of item.proof.transactions) {
          expect(tx.hash).toMatch(/^0x[0-9a-f]{64}$/)
          expect(Number.isInteger(tx.block_number)).toBe(true)
        }
        expect(item.at).toMatch(/^2030-01-01T00:00:0[0-5]\.000Z$/)
      }

      // A fill that is final but not settled is not a trade.
      const sql = yield* SqlClient.SqlClient
      yield* sql`update fills set state = 'refunded' where id = ${ids[0]!}`
      const recent = yield* get(`${base}/v1/trades?a=aster&b=hyperliquid`)
      expect(recent.status, recent.text).toBe(200)
      expect(recent.headers["x-event-cursor"]).toMatch(/^[0-9]+$/)
      const body = recent.json as {
        a: string
        b: string
        trades: Array<{ id: string; from: string; amount_in: string; amount_out: string; at: string }>
      }
      expect([body.a, body.b]).toEqual(["aster", "hyperliquid"])
      const expected = ids.slice(1).reverse()
      expect(body.trades.slice(0, expected.length).map((x) => x.id)).toEqual(expected)
      expect(Object.keys(body.trades[0]!).sort()).toEqual(["amount_in", "amount_out", "at", "from", "id"])
      expect(body.trades[0]!.from).toBe(mine[0]!.from)
      expect(body.trades[0]!.amount_in).toBe(mine[0]!.amount_in)
    }),
  )

  it.effect("recent trades: at most 50, latest first, both directions", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const trade = yield* Effect.promise(() => signTrade({ maker: aster, taker: hl, amountIn: 777n }))
      const seed = yield* insertTrade(trade, {
        makerMaster: fresh().address,
        takerMaster: fresh().address,
        settledAt: "timestamptz '2031-01-01T00:00:00Z'",
      })
      yield* cloneTrades(seed, 60, "2031-01-01T00:00:01Z")
      const res = yield* get(`${base}/v1/trades?a=hyperliquid&b=aster`)
      expect(res.status, res.text).toBe(200)
      const trades = (res.json as { trades: Array<{ at: string; id: string }> }).trades
      expect(trades.length).toBe(50)
      const sql = yield* SqlClient.SqlClient
      const top = yield* sql<{ id: string }>`select id from fills where state = 'settled'
        order by settled_at desc, id desc limit 50`
      expect(trades.map((x) => x.id)).toEqual(top.map((r) => r.id))
    }),
  )

  it.effect("history pages while trades settle concurrently: every older trade once, in order, no duplicates", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const sql = yield* SqlClient.SqlClient
      const trade = yield* Effect.promise(() => signTrade({ maker: hl, taker: aster, amountIn: 5n }))
      const seed = yield* insertTrade(trade, {
        makerMaster: fresh().address,
        takerMaster: fresh().address,
        settledAt: "timestamptz '2029-01-01T00:00:00Z'",
      })
      yield* cloneTrades(seed, 700, "2029-01-01T00:00:01Z")
      const before = (yield* sql<{ id: string }>`select id from fills where state = 'settled'
        order by settled_at desc, id desc`).map((r) => r.id)

      const stop = yield* Deferred.make<void>()
      const writer = yield* Effect.gen(function* () {
        while (!(yield* Deferred.isDone(stop))) {
          // New trades settle now (newer than anything paged), and unrelated fills change state.
          yield* cloneTrades(seed, 3, new Date().toISOString())
          yield* Effect.sleep(Duration.millis(5))
        }
      }).pipe(Effect.fork)
      const items = yield* walk(base, "limit=37")
      yield* Deferred.succeed(stop, undefined)
      yield* Fiber.join(writer)

      const ids = items.map((x) => x.id)
      expect(new Set(ids).size).toBe(ids.length)
      const seen = new Set(ids)
      expect(before.filter((id) => !seen.has(id))).toEqual([])
      // Strictly descending by (at, id) across every page boundary.
      for (let i = 1; i < items.length; i++) {
        const [p, q] = [items[i - 1]!, items[i]!]
        expect(p.at > q.at || (p.at === q.at && p.id > q.id), `${p.at} ${p.id} then ${q.at} ${q.id}`).toBe(true)
      }
      // The pair filter pages the same trades (every fixture trade here is hyperliquid/aster).
      const pair = yield* walk(base, "a=aster&b=hyperliquid&limit=500")
      expect(pair.map((x) => x.id).filter((id) => before.includes(id))).toEqual(before)
    }),
  )

  it.effect("scope=mine keeps exactly the account's trades (maker or taker), randomised over accounts", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const accounts = [fresh(), fresh(), fresh(), fresh()]
      const tokens = yield* Effect.forEach(accounts, (a) => signIn(base, a))
      const masters = accounts.map((a) => a.address.toLowerCase())
      const outsiders = [fresh().address.toLowerCase(), fresh().address.toLowerCase()]
      const everyone = [...masters, ...outsiders]
      const expected = new Map(masters.map((m) => [m, new Set<string>()]))
      // A deterministic pseudo-random schedule (reproducible on failure).
      let state = 0x2545f491
      const next = (n: number) => {
        state = (state * 1_103_515_245 + 12_345) >>> 0
        return state % n
      }
      for (let i = 0; i < 40; i++) {
        const makerMaster = everyone[next(everyone.length)]!
        const takerMaster = everyone[next(everyone.length)]!
        const [m, t] = next(2) === 0 ? [hl, aster] : [aster, hl]
        const trade = yield* Effect.promise(() => signTrade({ maker: m, taker: t, amountIn: BigInt(1000 + i) }))
        const id = yield* insertTrade(trade, { makerMaster, takerMaster })
        expected.get(makerMaster)?.add(id)
        expected.get(takerMaster)?.add(id)
      }
      for (const [i, master] of masters.entries()) {
        const limit = 1 + next(7)
        const items = yield* walk(base, `scope=mine&limit=${limit}`, tokens[i]!)
        expect(new Set(items.map((x) => x.id)), master).toEqual(expected.get(master))
        expect(items.length).toBe(expected.get(master)!.size)
        for (const item of items) {
          expect(yield* Effect.promise(() => verifyTradeProofOffline(item, item.proof))).toEqual([])
        }
        const pair = yield* walk(base, `scope=mine&a=hyperliquid&b=aster&limit=${limit}`, tokens[i]!)
        expect(new Set(pair.map((x) => x.id))).toEqual(expected.get(master))
      }
      // A mine cursor is bound to its account: another session's request refuses it.
      const first = yield* get(`${base}/v1/trades/history?scope=mine&limit=1`, tokens[0]!)
      const cursor = (first.json as Page).next_cursor
      if (cursor !== null) {
        const other = yield* get(`${base}/v1/trades/history?scope=mine&limit=1&after=${cursor}`, tokens[1]!)
        expect([other.status, code(other)]).toEqual([400, "INVALID_REQUEST"])
      }
    }),
  )

  it.effect("scope=mine with a pair: the account's newer trades of another pair leave its pages full", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const sql = yield* SqlClient.SqlClient
      const me = fresh()
      const token = yield* signIn(base, me)
      const hour = new Date(Date.now() - 3_600_000).toISOString()
      // Five trades of this pair an hour ago, the account the taker.
      const older = yield* Effect.promise(() => signTrade({ maker: hl, taker: aster, amountIn: 11n }))
      const olderId = yield* insertTrade(older, {
        makerMaster: fresh().address,
        takerMaster: me.address,
        settledAt: `'${hour}'::timestamptz`,
      })
      yield* cloneTrades(olderId, 4, hour)
      // Ten newer ones, the account the taker again, of another pair (venues a past deployment listed).
      const newer = yield* Effect.promise(() => signTrade({ maker: aster, taker: hl, amountIn: 12n }))
      const newerId = yield* insertTrade(newer, { makerMaster: fresh().address, takerMaster: me.address })
      yield* cloneTrades(newerId, 9, new Date().toISOString())
      yield* sql`update fills set maker_venue = 'lighter', taker_venue = 'paradex'
        where take_id = (select take_id from fills where id = ${newerId})`
      const pages = yield* walk(base, "scope=mine&a=hyperliquid&b=aster&limit=2", token)
      const expected = yield* sql<{ id: string }>`
        select id from fills where take_id = (select take_id from fills where id = ${olderId})`
      expect(new Set(pages.map((x) => x.id))).toEqual(new Set(expected.map((r) => r.id)))
      expect(pages.length).toBe(5)
      // Another deployment's venues are gone before a watcher's integrity check reads them.
      yield* sql`delete from fills where take_id = (select take_id from fills where id = ${newerId})`
    }),
  )

  it.effect("auth for scope=mine: 401 without or with a bad bearer, 403 for a credential; all stays public", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const account = fresh()
      const token = yield* signIn(base, account)
      const identity = yield* registerIdentity(base, token, fresh())
      const credential = yield* issueCredential(base, token, identity.id, ["read"])
      const url = `${base}/v1/trades/history?scope=mine`
      const none = yield* get(url)
      expect([none.status, code(none)]).toEqual([401, "UNAUTHORIZED"])
      const bad = yield* get(url, `st_${"Z".repeat(43)}`)
      expect([bad.status, code(bad)]).toEqual([401, "UNAUTHORIZED"])
      const asCredential = yield* get(url, credential.token)
      expect([asCredential.status, code(asCredential)]).toEqual([403, "FORBIDDEN"])
      expect((yield* get(url, token)).status).toBe(200)
      expect((yield* get(`${base}/v1/trades/history`, `st_${"Z".repeat(43)}`)).status).toBe(200)
      expect((yield* get(`${base}/v1/trades/history?scope=all`, credential.token)).status).toBe(200)
    }),
  )

  it.effect("bad inputs for every parameter: the envelope with its code, never a 5xx", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const token = yield* signIn(base, fresh())
      // A real cursor of scope=all, every pair (limit 1: the earlier tests left trades).
      const first = yield* get(`${base}/v1/trades/history?limit=1`)
      const cursor = (first.json as Page).next_cursor!
      expect(cursor).toBeTruthy()
      const cases: Array<[string, number, string, string?]> = [
        ["/v1/trades", 400, "INVALID_REQUEST"],
        ["/v1/trades?a=aster", 400, "INVALID_REQUEST"],
        ["/v1/trades?b=aster", 400, "INVALID_REQUEST"],
        ["/v1/trades?a=aster&b=aster", 400, "INVALID_REQUEST"],
        ["/v1/trades?a=aster&b=nowhere", 404, "NOT_FOUND"],
        ["/v1/trades?a=Aster!&b=aster", 400, "INVALID_REQUEST"],
        [`/v1/trades?a=${"x".repeat(40)}&b=aster`, 400, "INVALID_REQUEST"],
        ["/v1/trades/history?scope=everyone", 400, "INVALID_REQUEST"],
        ["/v1/trades/history?scope=", 400, "INVALID_REQUEST"],
        ["/v1/trades/history?limit=0", 400, "INVALID_REQUEST"],
        ["/v1/trades/history?limit=501", 400, "INVALID_REQUEST"],
        ["/v1/trades/history?limit=1.5", 400, "INVALID_REQUEST"],
        ["/v1/trades/history?limit=abc", 400, "INVALID_REQUEST"],
        ["/v1/trades/history?limit=-1", 400, "INVALID_REQUEST"],
        ["/v1/trades/history?limit=99999999999999999999999", 400, "INVALID_REQUEST"],
        ["/v1/trades/history?a=aster", 400, "INVALID_REQUEST"],
        ["/v1/trades/history?b=hyperliquid", 400, "INVALID_REQUEST"],
        ["/v1/trades/history?a=aster&b=aster", 400, "INVALID_REQUEST"],
        ["/v1/trades/history?a=aster&b=nowhere", 404, "NOT_FOUND"],
        ["/v1/trades/history?a=ASTER&b=aster", 400, "INVALID_REQUEST"],
        ["/v1/trades/history?after=", 400, "INVALID_REQUEST"],
        [`/v1/trades/history?after=${"a".repeat(513)}`, 400, "INVALID_REQUEST"],
        ["/v1/trades/history?after=not-a-cursor", 400, "INVALID_REQUEST"],
        [`/v1/trades/history?after=${cursor}x`, 400, "INVALID_REQUEST"],
        // A cursor from other filters: one pair, scope mine.
        [`/v1/trades/history?a=aster&b=hyperliquid&after=${cursor}`, 400, "INVALID_REQUEST"],
        [`/v1/trades/history?scope=mine&after=${cursor}`, 400, "INVALID_REQUEST", token],
        ["/v1/trades/history?scope=mine&limit=0", 400, "INVALID_REQUEST", token],
      ]
      for (const [path, status, c, bearerToken] of cases) {
        const res = yield* get(`${base}${path}`, bearerToken)
        expect([res.status, code(res)], `${path} -> ${res.text.slice(0, 200)}`).toEqual([status, c])
        const error = (res.json as { error: Record<string, unknown> }).error
        expect(Object.keys(error).sort()).toEqual(["code", "message", "request_id", "retryable"])
        expect(res.text).not.toMatch(/ at .*\.ts:\d+/)
      }
      // The same cursor still works with its own filters.
      expect((yield* get(`${base}/v1/trades/history?limit=1&after=${cursor}`)).status).toBe(200)
    }),
  )

  it.effect("x-event-cursor is declared in OpenAPI for the snapshot GETs, and they answer it", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const res = yield* rawRequest(`${base}/v1/openapi.json`)
      const spec = res.json as {
        paths: Record<string, { get?: { responses: Record<string, { headers?: Record<string, unknown> }> } }>
      }
      for (const path of EVENT_CURSOR_ROUTES) {
        expect(spec.paths[path]?.get?.responses["200"]?.headers?.["x-event-cursor"], path).toBeDefined()
      }
      const token = yield* signIn(base, fresh())
      for (const path of EVENT_CURSOR_ROUTES) {
        const concrete =
          path === "/v1/trades"
            ? "/v1/trades?a=aster&b=hyperliquid"
            : path === "/v1/orders"
              ? "/v1/orders?client_order_id=none-yet"
              : path
        if (concrete.includes("{")) continue
        const answer = yield* get(`${base}${concrete}`, token)
        expect(answer.status, `${path} ${answer.text.slice(0, 200)}`).toBe(200)
        expect(answer.headers["x-event-cursor"], path).toMatch(/^[0-9]+$/)
      }
    }),
  )
})

// ------------------------------------------------------------------ a real take, settled on two devnet chains

const OPERATOR = 9
const FUNDER = account(8)
const PAYER = account(3)
const fast = {
  watcher: { poll_ms: 100, confirmations: 2, integrity_interval_seconds: 3600 },
  relayer: { poll_ms: 100 },
}
const entry = (c: TestChain, id: string) => {
  const { legacy_escrow: _legacy, ...v } = venueEntry(c, id, fast)
  return v
}
class Chains extends Context.Tag("test/TradesChains")<Chains, { hl: TestChain; aster: TestChain }>() {}

/** Hyperliquid-like 999 (makers) and Aster-like 42161 (takers), real watchers and relayers, a block every 250 ms. */
const DevnetLive = Layer.unwrapScoped(
  Effect.gen(function* () {
    const chain = (chainId: number, kind: "hyperliquid" | "aster") =>
      Effect.acquireRelease(
        Effect.promise(() => startTestChain({ chainId, kind })),
        (c) => Effect.promise(() => c.anvil.stop()),
      )
    const [hlChain, asterChain] = yield* Effect.all([chain(999, "hyperliquid"), chain(42161, "aster")], {
      concurrency: 2,
    })
    const config = testAppConfig({
      venues: [entry(hlChain, "hyperliquid"), entry(asterChain, "aster")],
      auth: { rpc_urls: [hlChain.anvil.rpcUrl] },
      operator_key: key(OPERATOR),
    })
    const base = Layer.mergeAll(TestHttpLive, ChainClients.Live, FaultPoint.Noop, Relayer.Live).pipe(
      Layer.provideMerge(TestDatabaseLive),
      Layer.provideMerge(config),
    )
    const actors = Effect.gen(function* () {
      const { deployment } = yield* AppConfig
      for (const v of deployment.venues) {
        yield* Effect.forkScoped(runVenueWatcher(v))
        yield* Effect.forkScoped(runTxRelayer(v))
      }
      yield* Effect.forkScoped(
        Effect.promise(() => Promise.all([hlChain.test.mine({ blocks: 1 }), asterChain.test.mine({ blocks: 1 })])).pipe(
          Effect.zipRight(Effect.sleep("250 millis")),
          Effect.forever,
        ),
      )
      return { hl: hlChain, aster: asterChain }
    })
    return Layer.scoped(Chains, actors).pipe(Layer.provideMerge(base))
  }),
)

layer(DevnetLive, { timeout: "300 seconds", excludeTestServices: true })("trades on devnet", (it) => {
  it.effect("a take settled on chain reads back in history with a proof that verifies offline", () =>
    Effect.gen(function* () {
      const { hl: maker, aster: taker } = yield* Chains
      const base = yield* baseUrl
      const sql = yield* SqlClient.SqlClient
      const order = yield* makerOrder(maker, taker, {
        owner: account(1),
        signer: fresh(),
        relayer: FUNDER,
        operator: account(OPERATOR).address,
        payee: fresh().address,
        amount: 5_000_000n,
        supply: 99n,
        receive: 100n,
        makerVenue: "hyperliquid",
        takerVenue: "aster",
      })
      const recipient = fresh()
      const t = yield* signedTake(maker, taker, {
        payer: PAYER,
        recipient: recipient.address,
        parts: [{ order, amountIn: 1_000_000n, amountOut: 990_000n }],
        makerVenue: "hyperliquid",
        takerVenue: "aster",
        sealSecret: plainSeal,
      })
      const fillId = t.fills[0]!.id
      // Settle (passes of the Settlement entity's step), then wait until the index holds every claim.
      for (let i = 0; ; i++) {
        yield* settlementPass((f) => Effect.succeed(plainOpen(f.secret_ciphertext)))
        const [row] = yield* sql<{ state: string; indexed: string }>`
          select f.state, (select count(*) from escrow_events e where e.args ->> 'fillId' = lower(f.fill_key)
            and e.event in ('Locked', 'Paid', 'Claimed', 'PaymentClaimed'))::text as indexed
          from fills f where f.id = ${fillId}`
        if (row?.state === "settled" && row.indexed === "4") break
        if (i > 400 || ["failed", "cancelled", "refunded"].includes(row?.state ?? "")) {
          return yield* Effect.dieMessage(`fill did not settle: ${JSON.stringify(row)}`)
        }
        yield* Effect.sleep("200 millis")
      }

      const recent = yield* get(`${base}/v1/trades?a=hyperliquid&b=aster`)
      expect((recent.json as { trades: Array<{ id: string; from: string }> }).trades[0]).toMatchObject({
        id: fillId,
        from: "aster",
        amount_in: "1000000",
        amount_out: "990000",
      })
      for (const query of ["", "?a=aster&b=hyperliquid"]) {
        const res = yield* get(`${base}/v1/trades/history${query}`)
        expect(res.status, res.text).toBe(200)
        const item = (res.json as Page).data.find((x) => x.id === fillId)!
        expect(item).toMatchObject({ from: "aster", to: "hyperliquid", order_id: order.orderId })
        expect(yield* Effect.promise(() => verifyTradeProofOffline(item, item.proof))).toEqual([])
        expect(item.proof.secret).toBe(t.fills[0]!.secret)
        // Every transaction is real: its receipt on the named chain has the same block and succeeded.
        expect(item.proof.transactions.map((x) => [x.kind, x.chain_id])).toEqual([
          ["lock", 999],
          ["pay", 42161],
          ["claim", 999],
          ["claim_payment", 42161],
        ])
        for (const tx of item.proof.transactions) {
          const chain = tx.chain_id === 999 ? maker : taker
          const receipt = yield* Effect.promise(() => chain.pub.getTransactionReceipt({ hash: tx.hash as Hex }))
          expect([receipt.status, Number(receipt.blockNumber)]).toEqual(["success", tx.block_number])
        }
      }
      // The taker (payer's master) and the maker see it under scope=mine.
      for (const who of [PAYER, account(1)]) {
        const token = yield* signIn(base, who)
        const mine = yield* walk(base, "scope=mine", token)
        expect(mine.map((x) => x.id)).toContain(fillId)
      }
    }),
  )
})
