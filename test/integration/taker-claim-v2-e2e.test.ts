/**
 * The taker client's own claim with every other party real (test/support/SettleV2Stack.ts): the service as a
 * process, two anvil chains with v2 escrows, the maker client revealing with its own claimPayment, the taker through
 * src/Client/TakerFlow.ts. The service is killed once the payTake is mined; after the maker's reveal and the grace,
 * the taker's client claims the lock itself (src/Client/TakerClaim.ts); the restarted service finds it claimed and
 * settles the fill without claiming again.
 */
import { SqlClient } from "@effect/sql"
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { createWalletClient, http } from "viem"
import { claimIfStalled, walletClaimSender } from "../../src/Client/TakerClaim.ts"
import { account } from "../support/ChainDevnet.ts"
import { pollUntil } from "../support/Poll.ts"
import { V2Harness, v2HarnessLive } from "../support/SettleV2Harness.ts"
import {
  authorizeWhenFinal,
  balanceOf,
  fillRows,
  fillsIn,
  killNow,
  onChain,
  startV2Service,
  takeV2,
  v2Taker,
} from "../support/SettleV2Stack.ts"

const Live = v2HarnessLive(5_000_000n)

layer(Live, { timeout: "600 seconds", excludeTestServices: true })("taker's own claim end to end", (it) => {
  it.effect(
    "the service stopped after the payment: the maker reveals, the taker's client claims after the grace",
    () =>
      Effect.gen(function* () {
        const { stack, procs, maker } = yield* V2Harness
        const { hl, aster } = stack
        const sql = yield* SqlClient.SqlClient
        yield* pollUntil(
          sql`select 1 from quote_sets q join escrow_v2_orders o on o.order_id = q.order_id
            where q.order_id = ${maker.orderId} and q.active and q.hashlock_root is not null and o.available > 0`,
          (rows) => rows.length === 1,
          { every: "250 millis", within: "60 seconds" },
        )
        const taker = yield* v2Taker(stack, account(3))
        const handle = yield* takeV2(stack, taker, 700_000n)
        yield* fillsIn(handle.takeId, ["locked"])
        yield* authorizeWhenFinal(stack, taker, handle)
        const [row] = yield* fillRows(handle.takeId)
        const digest = row!.fill_digest
        yield* pollUntil(onChain(stack, digest, "latest"), (c) => c.payment === "Held", {
          every: "100 millis",
          within: "60 seconds",
        })
        yield* killNow(procs.service!)
        yield* pollUntil(onChain(stack, digest), (c) => c.payment === "Claimed", {
          every: "250 millis",
          within: "60 seconds",
        })
        expect((yield* onChain(stack, digest, "latest")).lock).toBe("Locked")

        // Anyone's gas pays the claim: here the taker's own wallet on the maker chain.
        const sender = walletClaimSender(
          createWalletClient({ account: account(3), chain: hl.chain, transport: http(hl.anvil.rpcUrl) }),
        )
        const run = (now: bigint) =>
          Effect.promise(() => claimIfStalled(hl.pub, aster.pub, handle.take, sender, { now: () => now }))
        // Within the grace (the reveal is seconds old): nothing sent, and when to come back.
        const [early] = yield* run(0n)
        expect(early!.reason).toBe("grace")
        expect((yield* onChain(stack, digest, "latest")).lock).toBe("Locked")
        const escrowM = yield* balanceOf(hl, hl.escrowV2!)
        const [late] = yield* run(early!.retryAt!)
        expect(late!.reason).toBe("claimed")
        const amountOut = BigInt(row!.amount_out)
        expect(yield* balanceOf(hl, hl.escrowV2!)).toBe(escrowM - amountOut)
        yield* pollUntil(onChain(stack, digest), (c) => c.lock === "Claimed", {
          every: "250 millis",
          within: "60 seconds",
        })
        // Again: already claimed, nothing sent.
        expect((yield* run(early!.retryAt!)).map((o) => o.reason)).toEqual(["already_claimed"])

        // The restarted service finds the lock claimed (by the taker) and settles the fill; paid out once.
        procs.service = yield* startV2Service(stack)
        yield* fillsIn(handle.takeId, ["settled"])
        expect(yield* balanceOf(hl, hl.escrowV2!)).toBe(escrowM - amountOut)
      }),
    240_000,
  )
})
