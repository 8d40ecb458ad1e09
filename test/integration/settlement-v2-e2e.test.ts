/**
 * Settlement v2 end to end, every party real (test/support/SettleV2Stack.ts): the service as a process over HTTP,
 * two anvil chains with both escrows, the maker client as a child process (v2 sets, its own reveal), the taker
 * through src/Client/TakerFlow.ts (its pay key authorises only after reading the lock at finalized on its own
 * endpoint). A block every 250 ms on both chains; expiries are reached by moving both chains' clocks.
 *
 * One maker order (20 USDC on hyperliquid, quoted 1:1 into aster) serves every take; each take has its own taker.
 */
import { SqlClient } from "@effect/sql"
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { DEVNET_TIMING_V2 } from "../../src/Domain/SettlementTimingV2.ts"
import { identityFades } from "../../src/Settlement/FadeRecord.ts"
import { takerUnpaidLocks } from "../../src/Settlement/RepoV2.ts"
import { account } from "../support/ChainDevnet.ts"
import { pollUntil } from "../support/Poll.ts"
import { V2Harness, v2HarnessLive } from "../support/SettleV2Harness.ts"
import {
  authorizeWhenFinal,
  balanceOf,
  fillRows,
  fillsIn,
  killNow,
  makerSecrets,
  onChain,
  secretsInDatabase,
  startV2Service,
  takeV2,
  v2Taker,
  warp,
} from "../support/SettleV2Stack.ts"

const AMOUNT = 20_000_000n

const Live = v2HarnessLive(AMOUNT)

/**
 * The maker's active v2 set, and the order's index at rest: funds available and no lock open (every take of an
 * earlier test ended). A fill is settled once the relayer sees its claim final, which can be before the watcher's
 * page with the Claimed event commits: read sooner, a test's baseline of the order's row would still hold the
 * previous test's lock, and its wait for `locked` to come back to that baseline would never end.
 */
const makerReady = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const { maker } = yield* V2Harness
  yield* pollUntil(
    sql`select 1 from quote_sets where order_id = ${maker.orderId} and active and hashlock_root is not null`,
    (rows) => rows.length === 1,
    { every: "250 millis", within: "60 seconds" },
  )
  yield* pollUntil(
    sql`select 1 from escrow_v2_orders where order_id = ${maker.orderId} and available > 0 and locked = 0`,
    (rows) => rows.length === 1,
    { every: "250 millis", within: "60 seconds" },
  )
})

/** Every secret the maker's key derives for the set a fill used. */
const secretsOf = (fill: { readonly sequence: string }) =>
  Effect.map(V2Harness, ({ stack, maker }) => makerSecrets(stack, maker, BigInt(fill.sequence)))

layer(Live, { timeout: "600 seconds", excludeTestServices: true })("settlement v2 end to end", (it) => {
  it.effect(
    "a take settles: lock, the pay key's authorisation, payTake, the maker's own reveal, the claim",
    () =>
      Effect.gen(function* () {
        const { stack, maker, procs } = yield* V2Harness
        const { hl, aster } = stack
        const sql = yield* SqlClient.SqlClient
        yield* makerReady
        const taker = yield* v2Taker(stack, account(3))
        const before = {
          payer: yield* balanceOf(aster, taker.account.address),
          payee: yield* balanceOf(aster, maker.payee.address),
          escrowT: yield* balanceOf(aster, aster.escrowV2!),
          escrowM: yield* balanceOf(hl, hl.escrowV2!),
        }
        const handle = yield* takeV2(stack, taker, 1_000_000n)
        const [locked] = yield* fillsIn(handle.takeId, ["locked"])
        // Locked, not paid: the service holds only the hashlock; the maker's secrets are nowhere in its database.
        const secrets = yield* secretsOf(locked!)
        expect(yield* secretsInDatabase(secrets)).toEqual([])

        yield* authorizeWhenFinal(stack, taker, handle)
        const [fill] = yield* fillsIn(handle.takeId, ["settled"])
        const amountOut = BigInt(fill!.amount_out)
        expect(yield* onChain(stack, fill!.fill_digest)).toEqual({ lock: "Claimed", payment: "Claimed" })
        // Each side moved once: the payer paid amount_in to the payee; the maker escrow paid amount_out out.
        expect(yield* balanceOf(aster, taker.account.address)).toBe(before.payer - 1_000_000n)
        expect(yield* balanceOf(aster, maker.payee.address)).toBe(before.payee + 1_000_000n)
        expect(yield* balanceOf(aster, aster.escrowV2!)).toBe(before.escrowT)
        expect(yield* balanceOf(hl, hl.escrowV2!)).toBe(before.escrowM - amountOut)
        const [order] = yield* sql<{ filled: string; received: string }>`
        select filled::text, received::text from orders where id = ${maker.orderId}`
        expect(order).toEqual({ filled: amountOut.toString(), received: "1000000" })
        const [take] = yield* sql<{ state: string }>`select state from takes where id = ${handle.takeId}::uuid`
        expect(take!.state).toBe("settled")
        // Public now (the reveal is on chain); the maker client never printed one.
        const secret = secrets[fill!.hashlock_index]!
        for (const s of secrets) expect(procs.maker!.output()).not.toContain(s.slice(2))
        expect(yield* secretsInDatabase([secret])).toEqual([secret])
      }),
    240_000,
  )

  it.effect(
    "the service stopped after the payment: the maker reveals meanwhile; on restart it claims",
    () =>
      Effect.gen(function* () {
        const { stack, procs } = yield* V2Harness
        const { hl } = stack
        yield* makerReady
        const taker = yield* v2Taker(stack, account(4))
        const handle = yield* takeV2(stack, taker, 700_000n)
        yield* fillsIn(handle.takeId, ["locked"])
        yield* authorizeWhenFinal(stack, taker, handle)
        const [row] = yield* fillRows(handle.takeId)
        const digest = row!.fill_digest
        // The payTake is mined: stop the service before it can see the payment final, let alone a secret.
        yield* pollUntil(onChain(stack, digest, "latest"), (c) => c.payment === "Held", {
          every: "100 millis",
          within: "60 seconds",
        })
        yield* killNow(procs.service!)
        // The maker reveals on its own (claimPayment, final); the lock waits for a claim.
        yield* pollUntil(onChain(stack, digest), (c) => c.payment === "Claimed", {
          every: "250 millis",
          within: "60 seconds",
        })
        expect((yield* onChain(stack, digest, "latest")).lock).toBe("Locked")
        const escrowM = yield* balanceOf(hl, hl.escrowV2!)
        procs.service = yield* startV2Service(stack)
        const [fill] = yield* fillsIn(handle.takeId, ["settled"])
        expect(yield* onChain(stack, digest)).toEqual({ lock: "Claimed", payment: "Claimed" })
        expect(yield* balanceOf(hl, hl.escrowV2!)).toBe(escrowM - BigInt(fill!.amount_out))
      }),
    240_000,
  )

  it.effect(
    "the maker client stopped before revealing: both sides refund, a fade; the taker never authorising: the lock refunds, no fade",
    () =>
      Effect.gen(function* () {
        const { stack, maker, procs } = yield* V2Harness
        const { aster } = stack
        const sql = yield* SqlClient.SqlClient
        yield* makerReady
        const silent = yield* v2Taker(stack, account(5))
        const payer = yield* v2Taker(stack, account(6))
        const payer0 = yield* balanceOf(aster, payer.account.address)
        const silent0 = yield* balanceOf(aster, silent.account.address)
        const payee0 = yield* balanceOf(aster, maker.payee.address)
        const fades0 = yield* identityFades(maker.identityId)
        const [escrow0] = yield* sql<{ available: string; locked: string }>`
          select available::text, locked::text from escrow_v2_orders where order_id = ${maker.orderId}`
        const neverPays = yield* takeV2(stack, silent, 500_000n)
        const paid = yield* takeV2(stack, payer, 800_000n)
        yield* fillsIn(neverPays.takeId, ["locked"])
        yield* fillsIn(paid.takeId, ["locked"])
        // The maker client goes away before any payment it could reveal for.
        yield* killNow(procs.maker!)
        yield* authorizeWhenFinal(stack, payer, paid)
        const [p] = yield* fillsIn(paid.takeId, ["paid"])
        expect(payer0 - (yield* balanceOf(aster, payer.account.address))).toBe(800_000n)

        // Past takerExpiry (payBy + taker timeout): the payment goes back to the payer.
        yield* warp(stack, DEVNET_TIMING_V2.payByMax + DEVNET_TIMING_V2.takerTimeout + 30)
        yield* pollUntil(onChain(stack, p!.fill_digest), (c) => c.payment === "Refunded", {
          every: "250 millis",
          within: "120 seconds",
        })
        // Past makerExpiry (takerExpiry + claim window): both locks go back to the order.
        yield* warp(stack, DEVNET_TIMING_V2.claimWindow + 30)
        yield* fillsIn(paid.takeId, ["refunded"])
        yield* fillsIn(neverPays.takeId, ["refunded"])
        yield* pollUntil(
          sql<{ available: string; locked: string }>`
            select available::text, locked::text from escrow_v2_orders where order_id = ${maker.orderId}`,
          (rows) => rows[0]?.locked === escrow0!.locked,
          { every: "250 millis", within: "60 seconds" },
        ).pipe(Effect.map((rows) => expect(rows[0]).toEqual(escrow0)))
        expect(yield* balanceOf(aster, payer.account.address)).toBe(payer0)
        expect(yield* balanceOf(aster, silent.account.address)).toBe(silent0)
        expect(yield* balanceOf(aster, maker.payee.address)).toBe(payee0)
        // On-chain evidence only: the paid, unrevealed fill is one chance and one fade; the unpaid lock neither,
        // and it counts against its taker alone.
        const fades = yield* identityFades(maker.identityId)
        expect([(fades?.chances ?? 0) - (fades0?.chances ?? 0), (fades?.fades ?? 0) - (fades0?.fades ?? 0)]).toEqual([
          1, 1,
        ])
        expect((yield* takerUnpaidLocks(silent.account.address, 3)).unpaid).toBe(1)
        expect((yield* takerUnpaidLocks(payer.account.address, 3)).unpaid).toBe(0)
      }),
    300_000,
  )
})
