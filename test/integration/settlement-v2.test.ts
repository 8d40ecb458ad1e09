import { SqlClient } from "@effect/sql"
import { expect, layer } from "@effect/vitest"
import { Effect, Fiber, Option } from "effect"
import { type Address, encodeFunctionData, type Hex } from "viem"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { chainTimes, SETTLEMENT_SWEEP, stepSettlement } from "../../actors/Settlement.ts"
import { mockUSDCAbi, settlementEscrowV2Abi } from "../../src/Chain/artifacts/index.ts"
import { AppConfig } from "../../src/Config.ts"
import { cancelFillTypedData } from "../../src/Domain/EscrowTypedDataV2.ts"
import { DELIVERED_UNPAID } from "../../src/Domain/SettlementStepV2.ts"
import { Relayer } from "../../src/Relayer.ts"
import { identityFades } from "../../src/Settlement/FadeRecord.ts"
import { openStoredFillSecret } from "../../src/Settlement/FillSecrets.ts"
import { recordCall } from "../../src/Settlement/Repo.ts"
import { settlingFillsV2, takeAndFillsToSettle, takerUnpaidLocks } from "../../src/Settlement/RepoV2.ts"
import { recentTrades } from "../../src/Trades/Repo.ts"
import { sendCalls, type TestChain } from "../support/ChainDevnet.ts"
import { pollUntil } from "../support/Poll.ts"
import { settleRequestsAtRest } from "../support/Rows.ts"
import {
  fresh,
  indexHeld,
  M,
  miningPaused,
  newMakerV2,
  PAYER,
  pass,
  revealV2,
  SettleV2Env,
  settleUntil,
  settleV2ActorsLive,
  T,
} from "../support/SettleV2Actors.ts"
import { authorizePayment, type MakerOrderV2, signedTakeV2 } from "../support/TakesV2.ts"

/**
 * Settlement v2 through the Settlement actor on two devnet chains (Hyperliquid-like 999 = the makers' chain,
 * Aster-like 42161 = the taker's), each with its SettlementEscrowV2 (devnet immutables), the real VenueWatchers
 * (v2 index, 2 confirmations) and TxRelayers, a block every 250 ms. The take and quote rows are written as the v2
 * routes will store them (test/support/TakesV2.ts); the test plays the taker's client (its pay key signs PayTake
 * once every lock is final) and the maker (its own claimPayment with the secret it derives). Max fade rate 0: one
 * fade flags the identity.
 */

const Live = settleV2ActorsLive({ max_fade_rate: 0, escrow_version: 2 })

// ------------------------------------------------------------------ helpers

const balanceOf = (c: TestChain, who: Address) =>
  Effect.promise(() =>
    c.pub.readContract({ address: c.token, abi: mockUSDCAbi, functionName: "balanceOf", args: [who] }),
  )

const fillsOf = (takeId: string) =>
  Effect.flatMap(
    SqlClient.SqlClient,
    (sql) => sql<{ id: string; state: string; final: boolean; error: string }>`
      select id, state, final, error from fills where take_id = ${takeId}::uuid order by id`,
  )

const allIn = (takeId: string, states: ReadonlyArray<string>) =>
  Effect.map(fillsOf(takeId), (rows) => rows.length > 0 && rows.every((r) => states.includes(r.state)))

/**
 * The service's settlement as a loop of passes at the entities' cadence (a stop and a restart of it rebuild
 * everything from rows, as a new entity instance does).
 */
const servicePasses = pass.pipe(Effect.zipRight(Effect.sleep(SETTLEMENT_SWEEP)), Effect.forever)

const waitFor = <R>(what: string, done: Effect.Effect<boolean, unknown, R>) =>
  pollUntil(done, (ok) => ok, { every: "200 millis", within: "120 seconds" }).pipe(
    Effect.mapError((e) => new Error(`${what}: ${String(e)}`)),
  )

/** A signed take over `parts` (amount out = amount in), with a fresh pay key and recipient. */
const takeOver = (
  parts: ReadonlyArray<{ readonly order: MakerOrderV2; readonly amount: bigint; readonly index: number }>,
) =>
  Effect.gen(function* () {
    const { hl, aster } = yield* SettleV2Env
    const payKey = privateKeyToAccount(generatePrivateKey())
    const recipient = fresh()
    const take = yield* signedTakeV2(hl, aster, {
      payer: PAYER,
      payKey: payKey.address,
      recipient,
      parts: parts.map((p) => ({ order: p.order, amountIn: p.amount, amountOut: p.amount, index: p.index })),
      makerVenue: M,
      takerVenue: T,
    })
    return { ...take, payKey, recipient }
  })

const newTake = (order: MakerOrderV2, index: number, amount: bigint) => takeOver([{ order, amount, index }])

/** Both chains' clocks forward by `seconds` (the next block of each carries it). */
const warp = (seconds: number) =>
  Effect.gen(function* () {
    const { hl, aster } = yield* SettleV2Env
    yield* Effect.promise(() => Promise.all([hl.test.increaseTime({ seconds }), aster.test.increaseTime({ seconds })]))
  })

const escrowOrder = (orderId: Hex) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    Effect.map(
      sql<{ available: string; locked: string }>`select available::text, locked::text from escrow_v2_orders
        where venue = ${M} and order_id = ${orderId}`,
      (r) => r[0],
    ),
  )

const journalKinds = (takeId: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    Effect.map(
      sql<{ kind: string }>`select kind from journal where payload->>'take_id' = ${takeId} order by id`,
      (rows) => rows.map((r) => r.kind),
    ),
  )

const marks = (identityId: string, master: string) =>
  Effect.gen(function* () {
    const { deployment } = yield* AppConfig
    return {
      fades: yield* identityFades(identityId),
      unpaid: yield* takerUnpaidLocks(master, deployment.settlement.max_unpaid_locks),
    }
  })

layer(Live, { timeout: "300 seconds", excludeTestServices: true })("settlement v2 on devnet", (it) => {
  it.effect(
    "a v2 take over two makers settles end to end: locks → authorisation → one payTake → reveals → claims",
    () =>
      Effect.gen(function* () {
        const { hl, aster } = yield* SettleV2Env
        const sql = yield* SqlClient.SqlClient
        const A = yield* newMakerV2(1, 5_000_000n)
        const B = yield* newMakerV2(6, 5_000_000n)
        const take = yield* takeOver([
          { order: A, amount: 1_000_000n, index: 0 },
          { order: B, amount: 400_000n, index: 5 },
        ])
        const { payKey, recipient } = take
        const payer0 = yield* balanceOf(aster, PAYER.address)
        // A pass reads the take with its first page of fills in one statement: the same rows as the fills' own query,
        // paged the same way.
        for (const limit of [1, 10]) {
          const read = yield* takeAndFillsToSettle(take.takeId, limit)
          expect([read?.state, read?.escrow_version, read?.fills.map((f) => f.id)]).toEqual([
            "signed",
            2,
            (yield* settlingFillsV2(limit, null, take.takeId)).map((f) => f.id),
          ])
          expect(read?.fills).toHaveLength(limit === 1 ? 1 : 2)
        }
        expect(yield* takeAndFillsToSettle(crypto.randomUUID(), 10)).toBeUndefined()
        const stale = (yield* settlingFillsV2(1, null, take.takeId))[0]!

        // The first pass submits both locks and nothing else: it asks for its next pass at the sweep's beat, not at
        // once (the locks' outcomes and index pages wake the take; a pass now would only wait).
        const { deployment } = yield* AppConfig
        const times = chainTimes(deployment.venues.map((v) => v.id))
        expect(yield* stepSettlement(openStoredFillSecret, times)(take.takeId)).toEqual(Option.some(SETTLEMENT_SWEEP))
        expect(yield* allIn(take.takeId, ["locking"])).toBe(true)
        yield* settleUntil("the locks final", allIn(take.takeId, ["locked"]))
        // A pass holding a fill read before it moved on records nothing: no key, no state, no journal row.
        const kinds = yield* journalKinds(take.takeId)
        expect(yield* recordCall(stale, "lock", "stale:lock", "locking", null)).toBe(false)
        expect(yield* journalKinds(take.takeId)).toEqual(kinds)
        const [kept] = yield* sql<{ lock_key: string | null; state: string }>`
          select lock_key, state from fills where id = ${stale.id}::uuid`
        expect([kept!.state, kept!.lock_key === "stale:lock"]).toEqual(["locked", false])
        // Every lock final: the take asks for the pay key's authorisation, once; nothing is paid without it.
        expect((yield* journalKinds(take.takeId)).filter((k) => k === "take.pay_authorization_requested")).toHaveLength(
          1,
        )
        yield* pass
        expect(yield* allIn(take.takeId, ["locked"])).toBe(true)
        yield* authorizePayment(aster, take, payKey)
        yield* settleUntil("the payment final", allIn(take.takeId, ["paid"]))
        expect(payer0 - (yield* balanceOf(aster, PAYER.address))).toBe(1_400_000n)
        // One payTake for the take: one relayer request, its key in both fills.
        const pays = yield* sql<{
          pay_key: string
        }>`select distinct pay_key from fills where take_id = ${take.takeId}::uuid`
        expect(pays).toHaveLength(1)
        const [requests] = yield* sql<{ n: number }>`select count(*)::int as n from relayer_requests
        where idempotency_key like ${`settle:take:${take.takeId}:payTake%`}`
        expect(requests!.n).toBe(1)

        // Paid and final: the service waits for the makers (it has no secret).
        yield* pass
        expect(yield* allIn(take.takeId, ["paid"])).toBe(true)
        yield* revealV2(A, take.fills[0]!.digest, 0)
        yield* revealV2(B, take.fills[1]!.digest, 5)
        yield* settleUntil("settled", allIn(take.takeId, ["settled"]))

        expect(yield* balanceOf(hl, recipient)).toBe(1_400_000n)
        expect(yield* balanceOf(aster, A.payee)).toBe(1_000_000n)
        expect(yield* balanceOf(aster, B.payee)).toBe(400_000n)
        const orders = yield* sql<{ id: string; filled: string; received: string }>`
        select id, filled::text, received::text from orders where id in (${A.orderId}, ${B.orderId})`
        expect(orders.find((o) => o.id === A.orderId)).toMatchObject({ filled: "1000000", received: "1000000" })
        expect(orders.find((o) => o.id === B.orderId)).toMatchObject({ filled: "400000", received: "400000" })
        // The take rolls up once its fills are final, also when both finished in the same pass (concurrent
        // transactions, each seeing the other still open): CI once saw it stay `signed` for good.
        const takeState = sql<{ state: string }>`select state from takes where id = ${take.takeId}::uuid`
        yield* settleUntil(
          "the take settled",
          Effect.map(takeState, ([t]) => t?.state === "settled"),
        )
        expect((yield* marks(A.identityId, take.master)).fades).toMatchObject({ chances: 1, fades: 0, flagged: false })
      }),
  )

  it.effect("the pay key cancels before authorising: cancelLock relayed at once, the order's funds back", () =>
    Effect.gen(function* () {
      const { hl } = yield* SettleV2Env
      const sql = yield* SqlClient.SqlClient
      const maker = yield* newMakerV2(7, 5_000_000n)
      const take = yield* newTake(maker, 1, 300_000n)
      const unpaid0 = (yield* marks(maker.identityId, take.master)).unpaid.unpaid
      yield* settleUntil("the lock final", allIn(take.takeId, ["locked"]))
      const digest = take.fills[0]!.digest
      const cancel = yield* Effect.promise(() =>
        take.payKey.signTypedData(cancelFillTypedData(hl.chain.id, hl.escrowV2!, digest)),
      )
      yield* sql`update fills set cancel_signature = ${cancel} where id = ${take.fills[0]!.id}::uuid`
      yield* settleUntil("cancelled", allIn(take.takeId, ["cancelled"]))
      yield* waitFor(
        "the cancel indexed",
        Effect.map(escrowOrder(maker.orderId), (o) => o?.locked === "0"),
      )
      expect(yield* escrowOrder(maker.orderId)).toEqual({ available: "5000000", locked: "0" })
      // Released by the client before payBy: neither a fade nor an unpaid lock.
      const m = yield* marks(maker.identityId, take.master)
      expect(m.fades).toMatchObject({ chances: 0, fades: 0 })
      expect(m.unpaid.unpaid).toBe(unpaid0)
    }),
  )

  it.effect("one fill cancelled before authorising: the take is never paid, even if an authorisation is stored", () =>
    Effect.gen(function* () {
      const { hl, aster } = yield* SettleV2Env
      const sql = yield* SqlClient.SqlClient
      const A = yield* newMakerV2(7, 5_000_000n)
      const B = yield* newMakerV2(2, 5_000_000n)
      const take = yield* takeOver([
        { order: A, amount: 300_000n, index: 0 },
        { order: B, amount: 200_000n, index: 0 },
      ])
      const { payKey } = take
      const payer0 = yield* balanceOf(aster, PAYER.address)
      yield* settleUntil("the locks final", allIn(take.takeId, ["locked"]))
      // The pay key cancels A's fill only, before any authorisation: the service relays A's cancelLock.
      const [a, b] = take.fills
      const cancel = yield* Effect.promise(() =>
        payKey.signTypedData(cancelFillTypedData(hl.chain.id, hl.escrowV2!, a!.digest)),
      )
      yield* sql`update fills set cancel_signature = ${cancel} where id = ${a!.id}::uuid`
      const cancelKey = sql<{ k: string | null }>`select cancel_key as k from fills where id = ${a!.id}::uuid`
      yield* settleUntil(
        "A's cancelLock relayed",
        Effect.map(cancelKey, ([r]) => r?.k != null),
      )
      // Then an authorisation (the route refuses it now; a row of an earlier version, or a client that signs after
      // cancelling): one payTake would pay for A too while its lock is released. Nothing is paid.
      yield* authorizePayment(aster, take, payKey)
      const state = (id: string) =>
        Effect.map(sql<{ state: string }>`select state from fills where id = ${id}::uuid`, ([r]) => r?.state)
      yield* settleUntil(
        "A cancelled",
        Effect.map(state(a!.id), (s) => s === "cancelled"),
      )
      for (let i = 0; i < 5; i++) yield* pass
      const [pays] = yield* sql<{ n: number }>`select count(*)::int as n from relayer_requests
        where idempotency_key like ${`settle:take:${take.takeId}:payTake%`}`
      expect(pays!.n).toBe(0)
      expect(yield* state(b!.id)).toBe("locked")
      expect(yield* balanceOf(aster, PAYER.address)).toBe(payer0)
      // B's lock is never paid: it refunds to its order after makerExpiry.
      yield* warp(1700)
      yield* settleUntil(
        "B refunded",
        Effect.map(state(b!.id), (s) => s === "refunded"),
      )
      yield* waitFor(
        "B's refund indexed",
        Effect.map(escrowOrder(B.orderId), (o) => o?.locked === "0"),
      )
      expect(yield* escrowOrder(A.orderId)).toEqual({ available: "5000000", locked: "0" })
      expect(yield* balanceOf(aster, PAYER.address)).toBe(payer0)
    }),
  )

  it.effect("the maker's secret public before any payment: delivered; the fill ends at takerExpiry, unpaid", () =>
    Effect.gen(function* () {
      const { hl, aster } = yield* SettleV2Env
      const sql = yield* SqlClient.SqlClient
      const maker = yield* newMakerV2(5, 5_000_000n)
      const take = yield* newTake(maker, 3, 700_000n)
      const payer0 = yield* balanceOf(aster, PAYER.address)
      const unpaid0 = (yield* marks(maker.identityId, take.master)).unpaid.unpaid
      yield* settleUntil("the lock final", allIn(take.takeId, ["locked"]))
      // The maker claims its own lock to the recipient before anyone paid (its secret is then public).
      const claim = encodeFunctionData({
        abi: settlementEscrowV2Abi,
        functionName: "claim",
        args: [take.fills[0]!.digest, maker.hashlocks.secrets[3]!],
      })
      yield* Effect.promise(() => sendCalls(hl, maker.owner, [{ to: hl.escrowV2!, data: claim }]))
      yield* settleUntil("claimed", allIn(take.takeId, ["claimed"]))
      expect(yield* balanceOf(hl, take.recipient)).toBe(700_000n)
      // Before takerExpiry a payment included before payBy could still become final: the fill waits.
      yield* pass
      expect(yield* allIn(take.takeId, ["claimed"])).toBe(true)
      yield* warp(1100)
      yield* settleUntil("settled", allIn(take.takeId, ["settled"]))
      const [fill] = yield* fillsOf(take.takeId)
      expect(fill).toMatchObject({ final: true, error: DELIVERED_UNPAID })
      // The order's liquidity left and it received nothing; no trade is published; the taker paid nothing and is
      // not counted as leaving a lock unpaid.
      const [order] = yield* sql<{ filled: string; received: string }>`
        select filled::text, received::text from orders where id = ${maker.orderId}`
      expect(order).toEqual({ filled: "700000", received: "0" })
      const trades = yield* sql`select 1 from journal where kind = 'trade.settled' and payload->>'id' = ${fill!.id}`
      expect(trades).toHaveLength(0)
      expect(yield* recentTrades(M, T, 100)).not.toContainEqual(expect.objectContaining({ id: fill!.id }))
      expect(yield* balanceOf(aster, PAYER.address)).toBe(payer0)
      expect((yield* marks(maker.identityId, take.master)).unpaid.unpaid).toBe(unpaid0)
      expect((yield* sql<{ state: string }>`select state from takes where id = ${take.takeId}::uuid`)[0]?.state).toBe(
        "settled",
      )
    }),
  )

  it.effect("no authorisation by payBy: the lock refunds after makerExpiry, no fade, one unpaid lock", () =>
    Effect.gen(function* () {
      const maker = yield* newMakerV2(2, 5_000_000n)
      const take = yield* newTake(maker, 0, 2_000_000n)
      const unpaid0 = (yield* marks(maker.identityId, take.master)).unpaid.unpaid
      yield* settleUntil("the lock final", allIn(take.takeId, ["locked"]))
      // The fill may be locked from the relayer's final outcome before the index page lands.
      yield* waitFor(
        "the lock indexed",
        Effect.map(escrowOrder(maker.orderId), (o) => o?.locked === "2000000"),
      )
      expect(yield* escrowOrder(maker.orderId)).toEqual({ available: "3000000", locked: "2000000" })
      yield* warp(1700)
      yield* settleUntil("refunded", allIn(take.takeId, ["refunded"]))
      yield* waitFor(
        "the refund indexed",
        Effect.map(escrowOrder(maker.orderId), (o) => o?.locked === "0"),
      )
      expect(yield* escrowOrder(maker.orderId)).toEqual({ available: "5000000", locked: "0" })
      const m = yield* marks(maker.identityId, take.master)
      expect(m.fades).toMatchObject({ chances: 0, fades: 0, flagged: false })
      expect(m.unpaid.unpaid).toBe(unpaid0 + 1)
    }),
  )

  // Lagging: the index holds until the payment is final, so the fill is locked and paid on the relayer's final
  // receipts alone; the chance to reveal must count as when the index is current, or the fade goes uncounted.
  for (const lagging of [false, true]) {
    it.effect(
      lagging
        ? "the maker never reveals, the index behind the relayer until the payment is final: the chance and fade count"
        : "the maker never reveals: refundPayment after takerExpiry, refund after makerExpiry, a fade",
      () =>
        Effect.gen(function* () {
          const { aster } = yield* SettleV2Env
          const sql = yield* SqlClient.SqlClient
          const maker = yield* newMakerV2(4, 5_000_000n)
          const take = yield* newTake(maker, 0, 1_500_000n)
          const payer0 = yield* balanceOf(aster, PAYER.address)
          indexHeld.on = lagging
          yield* Effect.gen(function* () {
            yield* settleUntil("the lock final", allIn(take.takeId, ["locked"]))
            yield* authorizePayment(aster, take, take.payKey)
            yield* settleUntil("the payment final", allIn(take.takeId, ["paid"]))
            if (lagging) {
              const [row] = yield* sql<{ n: string }>`
                select count(*)::text as n from escrow_v2_locks where order_id = ${maker.orderId}`
              expect(row!.n).toBe("0")
            }
          }).pipe(Effect.ensuring(Effect.sync(() => (indexHeld.on = false))))
          yield* warp(1100)
          yield* settleUntil(
            "the payment refunded",
            Effect.map(balanceOf(aster, PAYER.address), (b) => b === payer0),
          )
          yield* warp(700)
          yield* settleUntil("refunded", allIn(take.takeId, ["refunded"]))
          const m = yield* marks(maker.identityId, take.master)
          expect(m.fades).toMatchObject({ chances: 1, fades: 1, flagged: true })
          expect(yield* balanceOf(aster, maker.payee)).toBe(0n)
          // A fill that ends refunded moves nothing on its order and publishes no trade.
          const [order] = yield* sql<{ filled: string; received: string }>`
            select filled::text, received::text from orders where id = ${maker.orderId}`
          expect(order).toEqual({ filled: "0", received: "0" })
          const [fill] = yield* fillsOf(take.takeId)
          expect(
            yield* sql`select 1 from journal where kind = 'trade.settled' and payload->>'id' = ${fill!.id}`,
          ).toEqual([])
          expect(
            yield* sql`select 1 from journal where kind = 'fill.refunded' and payload->>'fill_id' = ${fill!.id}`,
          ).toHaveLength(2)
        }),
    )
  }

  it.effect("a crash between committing each key and submitting it: resubmitted, one request per step", () =>
    Effect.gen(function* () {
      const { hl, aster } = yield* SettleV2Env
      const relayer = yield* Relayer
      const maker = yield* newMakerV2(1, 2_000_000n)
      const take = yield* newTake(maker, 2, 600_000n)
      const escrowHl0 = yield* balanceOf(hl, hl.escrowV2!)
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
      const settle = <A, E, R>(e: Effect.Effect<A, E, R>) => Effect.provideService(e, Relayer, crashing)
      yield* settle(settleUntil("the lock final", allIn(take.takeId, ["locked"])))
      yield* authorizePayment(aster, take, take.payKey)
      yield* settle(settleUntil("the payment final", allIn(take.takeId, ["paid"])))
      yield* revealV2(maker, take.fills[0]!.digest, 2)
      yield* settle(settleUntil("settled", allIn(take.takeId, ["settled"])))
      const fillId = take.fills[0]!.id
      const keys = yield* settleRequestsAtRest(fillId, take.takeId)
      expect(keys.map((k) => [k.idempotency_key, k.status])).toEqual([
        [`settle:${fillId}:lock`, "final"],
        [`settle:take:${take.takeId}:payTake`, "final"],
        [`settle:${fillId}:claim`, "final"],
      ])
      expect([...crashed].sort()).toEqual(keys.map((k) => k.idempotency_key).sort())
      // Exactly one effect per step: the maker escrow paid amount_out once; the payee got amount_in once.
      expect(yield* balanceOf(hl, hl.escrowV2!)).toBe(escrowHl0 - 600_000n)
      expect(yield* balanceOf(aster, maker.payee)).toBe(600_000n)
    }),
  )

  it.effect("the claim goes out when the maker's reveal is mined, before the reveal is final", () =>
    Effect.gen(function* () {
      const { hl, aster } = yield* SettleV2Env
      const sql = yield* SqlClient.SqlClient
      const maker = yield* newMakerV2(3, 5_000_000n)
      const take = yield* newTake(maker, 2, 600_000n)
      const digest = take.fills[0]!.digest.toLowerCase()
      yield* settleUntil("the lock final", allIn(take.takeId, ["locked"]))
      yield* authorizePayment(aster, take, take.payKey)
      yield* settleUntil("the payment final", allIn(take.takeId, ["paid"]))
      // The taker chain stops making blocks: the reveal is mined (automine) and stays the latest block, never final.
      miningPaused.add(aster)
      yield* Effect.gen(function* () {
        yield* revealV2(maker, take.fills[0]!.digest, 2)
        const revealBlock = yield* Effect.promise(() => aster.pub.getBlockNumber({ cacheTime: 0 }))
        // Delivered on the maker chain from the mined reveal; the lock's claim turns final there, the payment's
        // claim cannot here: the fill waits in `claimed` and relays no claimPayment of its own.
        yield* settleUntil("claimed", allIn(take.takeId, ["claimed"]))
        expect(yield* balanceOf(hl, take.recipient)).toBe(600_000n)
        expect(yield* Effect.promise(() => aster.pub.getBlockNumber({ cacheTime: 0 }))).toBe(revealBlock)
        // The index has the maker chain's Claimed (final there), not the reveal.
        expect(
          yield* sql`select 1 from escrow_v2_secrets where fill_digest = ${digest} and event = 'PaymentClaimed'`,
        ).toHaveLength(0)
        expect(yield* sql`select 1 from escrow_v2_seen_secrets where fill_digest = ${digest}`).toHaveLength(1)
        yield* pass
        expect(yield* allIn(take.takeId, ["claimed"])).toBe(true)
      }).pipe(Effect.ensuring(Effect.sync(() => miningPaused.delete(aster))))
      yield* settleUntil("settled", allIn(take.takeId, ["settled"]))
      const claimPayments = yield* sql`select 1 from relayer_requests
        where idempotency_key like ${`%${take.fills[0]!.id}%claimPayment%`}`
      expect(claimPayments).toHaveLength(0)
      expect(yield* balanceOf(aster, maker.payee)).toBe(600_000n)
    }),
  )

  it.effect("the service stopped after the reveal: on restart it completes the claim", () =>
    Effect.gen(function* () {
      const { hl, aster } = yield* SettleV2Env
      const maker = yield* newMakerV2(5, 5_000_000n)
      const take = yield* newTake(maker, 3, 700_000n)
      // The service runs (the Settlement entity's step over the pending takes, on its cadence) through the payment…
      const service = yield* Effect.fork(servicePasses)
      yield* waitFor("the lock final", allIn(take.takeId, ["locked"]))
      yield* authorizePayment(aster, take, take.payKey)
      yield* waitFor("the payment final", allIn(take.takeId, ["paid"]))
      // …stops; the maker reveals meanwhile; the service starts again and delivers from the index's secret.
      yield* Fiber.interrupt(service)
      yield* revealV2(maker, take.fills[0]!.digest, 3)
      const again = yield* Effect.fork(servicePasses)
      yield* waitFor("settled", allIn(take.takeId, ["settled"]))
      yield* Fiber.interrupt(again)
      expect(yield* balanceOf(hl, take.recipient)).toBe(700_000n)
      expect(yield* balanceOf(aster, maker.payee)).toBe(700_000n)
    }),
  )
})
