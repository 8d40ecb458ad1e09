import { Sharding } from "@effect/cluster"
import { SqlClient } from "@effect/sql"
import { expect, layer } from "@effect/vitest"
import { Context, Deferred, Effect, Exit, Fiber, Layer, Schedule, Scope } from "effect"
import type { Address, Hex } from "viem"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { type OpenSecret, pendingKeys, SettlementLive, settlementEntityLive } from "../../actors/Settlement.ts"
import { runTxRelayer } from "../../actors/TxRelayer.ts"
import { runVenueWatcher } from "../../actors/VenueWatcher.ts"
import { mockUSDCAbi } from "../../src/Chain/artifacts/index.ts"
import { ChainClients } from "../../src/Chain/ChainClients.ts"
import { FaultPoint } from "../../src/Chain/FaultPoint.ts"
import { wakeKeyed } from "../../src/Cluster/Keyed.ts"
import { clusterLayer } from "../../src/Cluster.ts"
import { AppConfig } from "../../src/Config.ts"
import { freePort } from "../../src/FreePort.ts"
import { Relayer } from "../../src/Relayer.ts"
import { Settlement } from "../../src/Settlement/Entity.ts"
import { openStoredFillSecret } from "../../src/Settlement/FillSecrets.ts"
import { account, key, startTestChain, type TestChain, venueEntry } from "../support/ChainDevnet.ts"
import { TestDatabaseLive } from "../support/Database.ts"
import { runKeyed } from "../support/KeyedActors.ts"
import { pollUntil } from "../support/Poll.ts"
import { settleRequestsAtRest } from "../support/Rows.ts"
import { settlementPass } from "../support/SettlementPass.ts"
import { signIn } from "../support/SignIn.ts"
import { getTake, type MakerOrder, makerOrder, signedTake, takeOverHttp } from "../support/Takes.ts"
import { testAppConfig } from "../support/TestConfig.ts"
import { baseUrl, TestHttpLive } from "../support/TestServer.ts"

/**
 * The Settlement sweep on two devnet chains (Hyperliquid-like 999 = the makers' chain, Aster-like 42161 = the
 * taker's), with the real VenueWatchers (finality: 2 confirmations) and TxRelayers, a block every 250 ms on both.
 * Each test drives the passes itself (settlementPass: the Settlement entity's step over every pending take, one
 * action per fill per pass), so it can stop the "operator" at a chosen step; the HTTP test runs the entities.
 */

const OPERATOR = 9
const operator = account(OPERATOR).address
const FUNDER = account(8)
const PAYER = account(3)
const M = "hyperliquid"
const T = "aster"

interface Env {
  readonly hl: TestChain
  readonly aster: TestChain
}
class SettleEnv extends Context.Tag("test/SettleEnv")<SettleEnv, Env>() {}

const chainOf = (chainId: number, kind: "hyperliquid" | "aster") =>
  Effect.acquireRelease(
    Effect.promise(() => startTestChain({ chainId, kind })),
    (c) => Effect.promise(() => c.anvil.stop()),
  )

const fast = {
  watcher: { poll_ms: 100, confirmations: 2, integrity_interval_seconds: 3600 },
  relayer: { poll_ms: 100 },
}
const entry = (c: TestChain, id: string) => {
  const { legacy_escrow: _legacy, ...v } = venueEntry(c, id, fast)
  return v
}

const Live = Layer.unwrapScoped(
  Effect.gen(function* () {
    const [hl, aster] = yield* Effect.all([chainOf(999, "hyperliquid"), chainOf(42161, "aster")], { concurrency: 2 })
    const config = testAppConfig({
      venues: [entry(hl, M), entry(aster, T)],
      auth: { rpc_urls: [hl.anvil.rpcUrl] },
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
        Effect.promise(() => Promise.all([hl.test.mine({ blocks: 1 }), aster.test.mine({ blocks: 1 })])).pipe(
          Effect.zipRight(Effect.sleep("250 millis")),
          Effect.forever,
        ),
      )
      return { hl, aster }
    })
    return Layer.scoped(SettleEnv, actors).pipe(Layer.provideMerge(base))
  }),
)

// ------------------------------------------------------------------ helpers

const open: OpenSecret = openStoredFillSecret

const balanceOf = (c: TestChain, who: Address) =>
  Effect.promise(() =>
    c.pub.readContract({ address: c.token, abi: mockUSDCAbi, functionName: "balanceOf", args: [who] }),
  )

interface FillRow {
  readonly id: string
  readonly state: string
  readonly final: boolean
  readonly error: string
  readonly settled_at: Date | null
  readonly revealed_at: Date | null
}

const fillsOf = (takeId: string) =>
  Effect.flatMap(
    SqlClient.SqlClient,
    (sql) => sql<FillRow>`select id, state, final, error, settled_at, revealed_at from fills where take_id = ${takeId}
      order by amount_in desc`,
  )

const takeState = (takeId: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    Effect.map(sql<{ state: string }>`select state from takes where id = ${takeId}`, (r) => r[0]?.state),
  )

/** Runs settlement passes until `done` holds (checked after each pass), at most `seconds`. */
const settleUntil = (
  what: string,
  done: Effect.Effect<boolean, unknown, SqlClient.SqlClient>,
  options: { readonly open?: OpenSecret; readonly seconds?: number; readonly pageSize?: number } = {},
) =>
  Effect.gen(function* () {
    const deadline = Date.now() + (options.seconds ?? 90) * 1000
    for (;;) {
      yield* settlementPass(options.open ?? open, options.pageSize)
      if (yield* done) return
      if (Date.now() > deadline) {
        const rows = yield* Effect.flatMap(
          SqlClient.SqlClient,
          (sql) => sql`select id, state, error, lock_key, pay_key, claim_key, claim_payment_key, cancel_key,
            refund_key, refund_payment_key from fills where not final`,
        )
        return yield* Effect.dieMessage(`timed out waiting for ${what}: ${JSON.stringify(rows)}`)
      }
      yield* Effect.sleep("200 millis")
    }
  })

const allIn = (takeId: string, states: ReadonlyArray<string>) =>
  Effect.map(fillsOf(takeId), (rows) => rows.length > 0 && rows.every((r) => states.includes(r.state)))

const fresh = () => privateKeyToAccount(generatePrivateKey()).address

/** A maker: anvil account `i` funds `amount` on the maker chain; its quote recipient on the taker chain is fresh. */
const newMaker = (i: number, amount: bigint, supply = 1n, receive = 1n) =>
  Effect.gen(function* () {
    const { hl, aster } = yield* SettleEnv
    return yield* makerOrder(hl, aster, {
      owner: account(i),
      signer: privateKeyToAccount(generatePrivateKey()),
      relayer: FUNDER,
      operator,
      payee: fresh(),
      amount,
      supply,
      receive,
      makerVenue: M,
      takerVenue: T,
    })
  })

const take = (
  parts: ReadonlyArray<{ order: MakerOrder; amountIn: bigint; amountOut: bigint }>,
  extra: { readonly permitValue?: bigint; readonly recipient?: Address } = {},
) =>
  Effect.gen(function* () {
    const { hl, aster } = yield* SettleEnv
    const recipient = extra.recipient ?? fresh()
    const t = yield* signedTake(hl, aster, {
      payer: PAYER,
      recipient,
      parts,
      makerVenue: M,
      takerVenue: T,
      ...(extra.permitValue === undefined ? {} : { permitValue: extra.permitValue }),
    })
    return { ...t, recipient }
  })

const escrowAvailable = (orderId: Hex) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    Effect.map(
      sql<{ available: string; locked: string }>`select available::text, locked::text from escrow_orders
        where venue = ${M} and order_id = ${orderId}`,
      (r) => r[0],
    ),
  )

layer(Live, { timeout: "300 seconds", excludeTestServices: true })("settlement on devnet", (it) => {
  it.effect("a take over two makers settles end to end: balances, conservation, orders, journal", () =>
    Effect.gen(function* () {
      const { hl, aster } = yield* SettleEnv
      const sql = yield* SqlClient.SqlClient
      const A = yield* newMaker(1, 5_000_000n)
      const B = yield* newMaker(2, 5_000_000n, 99n, 100n)
      const escrowHl0 = yield* balanceOf(hl, hl.escrow)
      const escrowAster0 = yield* balanceOf(aster, aster.escrow)
      const payer0 = yield* balanceOf(aster, PAYER.address)
      const t = yield* take([
        { order: A, amountIn: 2_000_000n, amountOut: 2_000_000n },
        // 1e6 × 99 ≥ 990 000 × 100: exactly at B's price.
        { order: B, amountIn: 1_000_000n, amountOut: 990_000n },
      ])
      // Pages of one fill: a pass reads every page.
      yield* settleUntil("both fills settled", allIn(t.takeId, ["settled", "failed", "cancelled", "refunded"]), {
        pageSize: 1,
      })

      const rows = yield* fillsOf(t.takeId)
      expect(rows.map((r) => [r.state, r.final, r.error])).toEqual([
        ["settled", true, ""],
        ["settled", true, ""],
      ])
      for (const r of rows) {
        expect(r.settled_at).not.toBeNull()
        expect(r.revealed_at).not.toBeNull()
      }
      expect(yield* takeState(t.takeId)).toBe("settled")
      // The taker's recipient got amount_out on the maker chain; each maker's quote recipient its amount_in.
      expect(yield* balanceOf(hl, t.recipient)).toBe(2_990_000n)
      expect(yield* balanceOf(aster, A.payee)).toBe(2_000_000n)
      expect(yield* balanceOf(aster, B.payee)).toBe(1_000_000n)
      expect(yield* balanceOf(aster, PAYER.address)).toBe(payer0 - 3_000_000n)
      // Conservation: the maker escrow paid out exactly the delivered amount; the taker escrow holds nothing more.
      expect(yield* balanceOf(hl, hl.escrow)).toBe(escrowHl0 - 2_990_000n)
      expect(yield* balanceOf(aster, aster.escrow)).toBe(escrowAster0)
      const orders = yield* sql<{ id: string; filled: string; received: string }>`
        select id, filled::text, received::text from orders where id in (${A.orderId}, ${B.orderId})`
      expect(Object.fromEntries(orders.map((o) => [o.id, [o.filled, o.received]]))).toEqual({
        [A.orderId]: ["2000000", "2000000"],
        [B.orderId]: ["990000", "1000000"],
      })
      // Journal: a public trade.settled per fill; private fill.* rows for the taker and each maker.
      const trades = yield* sql<{ payload: Record<string, unknown> }>`
        select payload from journal where kind = 'trade.settled' and master is null
          and payload->>'id' in (${rows[0]!.id}, ${rows[1]!.id}) order by payload->>'amount_in' desc`
      expect(trades.map((r) => r.payload)).toEqual([
        {
          id: rows[0]!.id,
          from: T,
          to: M,
          amount_in: "2000000",
          amount_out: "2000000",
          at: rows[0]!.settled_at!.toISOString(),
        },
        {
          id: rows[1]!.id,
          from: T,
          to: M,
          amount_in: "1000000",
          amount_out: "990000",
          at: rows[1]!.settled_at!.toISOString(),
        },
      ])
      const kinds = yield* sql<{ kind: string; master: string }>`
        select kind, master from journal where payload->>'fill_id' = ${rows[0]!.id} order by id`
      expect(kinds.filter((k) => k.master === t.master).map((k) => k.kind)).toEqual([
        "fill.locking",
        "fill.locked",
        "fill.paying",
        "fill.paid",
        "fill.claiming",
        "fill.claimed",
        "fill.settled",
      ])
      expect(kinds.filter((k) => k.master === A.master).map((k) => k.kind)).toContain("fill.settled")
      // Every call went through the relayer under the fill's keys, once each.
      const keys = yield* settleRequestsAtRest(rows[0]!.id)
      expect(keys.map((k) => [k.idempotency_key.split(":")[2], k.status])).toEqual([
        ["lock", "final"],
        ["pay", "final"],
        ["claim", "final"],
        ["claimPayment", "final"],
      ])
    }),
  )

  it.effect("a payment that reverts (bad permit) cancels the lock: the order's available is restored", () =>
    Effect.gen(function* () {
      const A = yield* newMaker(4, 3_000_000n)
      const t = yield* take([{ order: A, amountIn: 1_000_000n, amountOut: 1_000_000n }], { permitValue: 999_999n })
      yield* settleUntil("the fill cancelled", allIn(t.takeId, ["cancelled", "failed", "refunded", "settled"]))
      const [row] = yield* fillsOf(t.takeId)
      expect(row!.state).toBe("cancelled")
      expect(row!.final).toBe(true)
      expect(row!.error).not.toBe("")
      expect(yield* takeState(t.takeId)).toBe("failed")
      // cancelLock is final and indexed: everything back in available.
      const escrow = yield* pollUntil(escrowAvailable(A.orderId), (e) => e?.locked === "0")
      expect(escrow).toEqual({ available: "3000000", locked: "0" })
    }),
  )

  it.effect("the operator stops after the reveal: claimPayment is completed from the public secret", () =>
    Effect.gen(function* () {
      const { aster } = yield* SettleEnv
      const sql = yield* SqlClient.SqlClient
      const A = yield* newMaker(5, 2_000_000n)
      const t = yield* take([{ order: A, amountIn: 1_500_000n, amountOut: 1_500_000n }])
      yield* settleUntil("the reveal sent", allIn(t.takeId, ["claiming"]))
      // The operator is gone; the claim it sent lands, and the escrow index shows the secret.
      const fillKey = t.fills[0]!.fillKey
      yield* Effect.gen(function* () {
        for (;;) {
          const [l] = yield* sql<{ state: string; secret: string | null }>`
            select state, secret from escrow_locks where venue = ${M} and fill_id = ${fillKey}`
          if (l?.state === "claimed" && l.secret !== null) return
          yield* Effect.sleep("200 millis")
        }
      }).pipe(Effect.timeout("60 seconds"))
      // A restarted service that cannot open the sealed secret still completes from the public one.
      const cannotOpen: OpenSecret = () => Effect.dieMessage("the sealed secret must not be needed")
      yield* settleUntil("the fill settled", allIn(t.takeId, ["settled"]), { open: cannotOpen })
      expect(yield* balanceOf(aster, A.payee)).toBe(1_500_000n)
      expect(yield* takeState(t.takeId)).toBe("settled")
    }),
  )

  it.effect("over HTTP: POST /v1/takes, the payer signs to_sign, the Settlement actor settles into margin", () =>
    Effect.gen(function* () {
      const { hl, aster } = yield* SettleEnv
      const sql = yield* SqlClient.SqlClient
      const base = yield* baseUrl
      const A = yield* newMaker(1, 4_000_000n)
      // Only this maker quotes (earlier tests' sets are still live); its funding must be indexed to be routable.
      yield* sql`update quote_sets set active = (order_id = ${A.orderId})`
      yield* pollUntil(escrowAvailable(A.orderId), (e) => e?.available === "4000000")
      const payer = account(7)
      const token = yield* signIn(base, payer)
      yield* sql`insert into linked_accounts (master, venue, address, linked_at)
        values (${payer.address.toLowerCase()}, ${T}, ${payer.address.toLowerCase()}, now())`
      const recipient = fresh().toLowerCase()
      const escrowHl0 = yield* balanceOf(hl, hl.escrow)
      // The Settlement entities on the HTTP stack's runner (the signatures route wakes the take's after its commit).
      const actor = yield* Effect.fork(runKeyed(SettlementLive, Settlement, pendingKeys))
      const signed = yield* takeOverHttp(base, token, payer, {
        client_take_id: "http-take-1",
        from: T,
        to: M,
        amount_in: "1500000",
        min_out: "1500000",
        payer: payer.address.toLowerCase(),
        recipient,
        max_parts: 2,
      })
      if (!signed.ok) return yield* Effect.dieMessage(`take refused: ${signed.response.text}`)
      const done = yield* getTake(base, token, signed.take.id).pipe(
        Effect.repeat({ until: (t) => t.fills.every((f) => f.final), schedule: Schedule.spaced("250 millis") }),
        Effect.timeout("90 seconds"),
      )
      yield* Fiber.interrupt(actor)
      const take = yield* getTake(base, token, signed.take.id)
      expect(done).toBeDefined()
      expect(take.state).toBe("settled")
      expect(take.fills.map((f) => f.state)).toEqual(["settled"])
      expect(yield* balanceOf(aster, A.payee)).toBe(1_500_000n)
      // Delivered through the margin router (not refused): the maker escrow paid amount_out out.
      expect(yield* balanceOf(hl, hl.escrow)).toBe(escrowHl0 - 1_500_000n)
      // The fill is settled once the relayer sees the claim final; the index's page with it may land later.
      const [lock] = yield* pollUntil(
        sql<{ state: string; refused: boolean | null }>`
          select state, refused from escrow_locks where venue = ${M} and recipient = ${recipient}`,
        (rows) => rows[0]?.state !== undefined && rows[0].state !== "locked",
      )
      expect(lock).toEqual({ state: "claimed", refused: false })
      const [order] = yield* sql<{ filled: string; received: string }>`
        select filled::text, received::text from orders where id = ${A.orderId}`
      expect(order).toEqual({ filled: "1500000", received: "1500000" })
    }),
  )

  it.effect("a crash between committing each key and submitting it: resubmitted, one request per step", () =>
    Effect.gen(function* () {
      const { hl, aster } = yield* SettleEnv
      const sql = yield* SqlClient.SqlClient
      const relayer = yield* Relayer
      const A = yield* newMaker(2, 3_000_000n)
      const escrowHl0 = yield* balanceOf(hl, hl.escrow)
      const escrowAster0 = yield* balanceOf(aster, aster.escrow)
      const t = yield* take([{ order: A, amountIn: 1_200_000n, amountOut: 1_200_000n }])
      // The first submit of every key dies, as if the process stopped right after the key's commit.
      const crashed = new Set<string>()
      const crashing = Relayer.of({
        ...relayer,
        submit: (request) =>
          crashed.has(request.idempotencyKey)
            ? relayer.submit(request)
            : Effect.sync(() => crashed.add(request.idempotencyKey)).pipe(
                Effect.zipRight(Effect.dieMessage("crash after the commit, before the submit")),
              ),
      })
      yield* settleUntil("the fill settled", allIn(t.takeId, ["settled"])).pipe(
        Effect.provideService(Relayer, crashing),
      )
      const fillId = t.fills[0]!.id
      const keys = yield* settleRequestsAtRest(fillId)
      expect(keys.map((k) => [k.idempotency_key, k.status])).toEqual(
        ["lock", "pay", "claim", "claimPayment"].map((c) => [`settle:${fillId}:${c}`, "final"]),
      )
      expect([...crashed].sort()).toEqual(keys.map((k) => k.idempotency_key).sort())
      // Exactly one effect per step: the maker escrow paid amount_out once, the taker escrow holds nothing extra.
      expect(yield* balanceOf(hl, hl.escrow)).toBe(escrowHl0 - 1_200_000n)
      expect(yield* balanceOf(aster, aster.escrow)).toBe(escrowAster0)
      expect(yield* balanceOf(aster, A.payee)).toBe(1_200_000n)
      const settledRows = yield* sql`select 1 from journal where kind = 'trade.settled' and payload->>'id' = ${fillId}`
      expect(settledRows.length).toBe(1)
    }),
  )

  it.effect(
    "a take's settlement continues on a new entity instance after a crash mid-settlement (its backstop tick)",
    () =>
      Effect.gen(function* () {
        const { hl, aster } = yield* SettleEnv
        const sql = yield* SqlClient.SqlClient
        const A = yield* newMaker(4, 2_000_000n)
        yield* sql`update quote_sets set active = (order_id = ${A.orderId})`
        const t = yield* take([{ order: A, amountIn: 800_000n, amountOut: 800_000n }])
        const fillId = t.fills[0]!.id
        const payer0 = yield* balanceOf(aster, PAYER.address)
        // Runner A (a cluster runner on this PostgreSQL, the Settlement entity alone): its fault point stops the pass that
        // committed the fill's second call key (pay, state paying) before the call reaches the relayer, for good.
        const stopped = yield* Deferred.make<void>()
        // (Recognised by this fill's committed state, not by counting hits: another take's pass may hit it too.)
        const stopAtPay = Layer.succeed(FaultPoint, {
          hit: (name) =>
            name !== "settlement.after-commit-before-submit"
              ? Effect.void
              : sql<{ state: string }>`select state from fills where id = ${fillId}`.pipe(
                  Effect.orDie,
                  Effect.flatMap(([row]) =>
                    row?.state === "paying"
                      ? Effect.zipRight(Deferred.succeed(stopped, undefined), Effect.never)
                      : Effect.void,
                  ),
                ),
        })
        const runner = (faults: Layer.Layer<FaultPoint>) =>
          Effect.map(freePort, (port) =>
            settlementEntityLive(open).pipe(
              Layer.provideMerge(clusterLayer({ host: "127.0.0.1", port })),
              Layer.provide(faults),
            ),
          )
        // Each runner is built without the HTTP stack's in-memory runner (nor its fault point) in its context: a
        // runner's entities are built in its own construction context, which must hold only its own runner, as in
        // the service, where there is one.
        const build = <A, E, R>(layer: Layer.Layer<A, E, R>, scope: Scope.Scope) =>
          Layer.buildWithScope(layer, scope).pipe(
            Effect.mapInputContext(
              (c: Context.Context<R>) => Context.omit(Sharding.Sharding, FaultPoint)(c) as Context.Context<R>,
            ),
          )
        const scopeA = yield* Scope.make()
        const a = yield* build(yield* runner(stopAtPay), scopeA)
        yield* wakeKeyed(Settlement, t.takeId).pipe(Effect.provide(a))
        yield* Deferred.await(stopped).pipe(Effect.timeout("90 seconds"))
        const [crashed] = yield* fillsOf(t.takeId)
        expect(crashed!.state).toBe("paying")
        const payRequests = sql<{ n: number }>`select count(*)::int as n from relayer_requests
        where idempotency_key = ${`settle:${fillId}:pay`}`
        expect((yield* payRequests)[0]!.n).toBe(0)
        // Its backstop tick is stored, not yet acknowledged.
        const ticks = yield* sql<{ n: number }>`select count(*)::int as n from cluster_messages
        where entity_type = 'settlement' and entity_id = ${t.takeId} and tag = 'Tick' and not processed`
        expect(ticks[0]!.n).toBeGreaterThanOrEqual(1)
        // Runner A goes; runner B starts with the entity only: no wake, no adoption, no notification listener. Only the
        // stored tick can start the take's entity there, whose first pass submits the stored pay key.
        yield* Scope.close(scopeA, Exit.void)
        const scopeB = yield* Scope.make()
        yield* build(yield* runner(FaultPoint.Noop), scopeB)
        yield* pollUntil(fillsOf(t.takeId), (rows) => rows[0]?.final === true, {
          every: "250 millis",
          within: "120 seconds",
        })
        yield* Scope.close(scopeB, Exit.void)
        const [row] = yield* fillsOf(t.takeId)
        expect([row!.state, row!.error]).toEqual(["settled", ""])
        expect(yield* takeState(t.takeId)).toBe("settled")
        expect(yield* balanceOf(hl, t.recipient)).toBe(800_000n)
        expect(yield* balanceOf(aster, A.payee)).toBe(800_000n)
        expect(yield* balanceOf(aster, PAYER.address)).toBe(payer0 - 800_000n)
        // Each call once, under the fill's keys: the stored pay key was submitted once, by the new instance.
        const keys = yield* settleRequestsAtRest(fillId)
        expect(keys.map((k) => [k.idempotency_key.split(":")[2], k.status])).toEqual([
          ["lock", "final"],
          ["pay", "final"],
          ["claim", "final"],
          ["claimPayment", "final"],
        ])
      }),
  )

  it.effect("expiries: the lock refunds after makerExpiry, the payment after takerExpiry", () =>
    Effect.gen(function* () {
      const { hl, aster } = yield* SettleEnv
      const A = yield* newMaker(6, 2_000_000n)
      const payer0 = yield* balanceOf(aster, PAYER.address)
      const t = yield* take([{ order: A, amountIn: 1_000_000n, amountOut: 1_000_000n }])
      // Stop right after the payment is final (the next pass would reveal).
      yield* settleUntil("the fill paid", allIn(t.takeId, ["paid"]))
      expect(yield* balanceOf(aster, PAYER.address)).toBe(payer0 - 1_000_000n)
      const warp = (c: TestChain, to: bigint) =>
        Effect.promise(async () => {
          const now = (await c.pub.getBlock()).timestamp
          if (to > now) await c.test.increaseTime({ seconds: Number(to - now) })
          await c.test.mine({ blocks: 1 })
        })
      yield* warp(hl, t.makerExpiry + 1n)
      yield* settleUntil(
        "the lock refunded",
        Effect.flatMap(SqlClient.SqlClient, (sql) =>
          Effect.map(
            sql`select 1 from escrow_locks where venue = ${M} and fill_id = ${t.fills[0]!.fillKey}
              and state = 'refunded'`,
            (r) => r.length === 1,
          ),
        ),
      )
      expect(yield* escrowAvailable(A.orderId)).toEqual({ available: "2000000", locked: "0" })
      // The payment is still held until takerExpiry on the taker chain.
      expect((yield* fillsOf(t.takeId))[0]!.final).toBe(false)
      yield* warp(aster, t.takerExpiry + 1n)
      yield* settleUntil("the fill refunded", allIn(t.takeId, ["refunded"]))
      expect(yield* balanceOf(aster, PAYER.address)).toBe(payer0)
      expect(yield* takeState(t.takeId)).toBe("failed")
      // Nothing was delivered: the taker's recipient got nothing.
      expect(yield* balanceOf(hl, t.recipient)).toBe(0n)
    }),
  )
})
