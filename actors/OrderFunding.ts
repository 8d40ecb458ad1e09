import { SqlClient } from "@effect/sql"
import { Clock, Duration, Effect, Layer } from "effect"
import { getAddress, type Hex } from "viem"
import { mockUSDCAbi } from "../src/Chain/artifacts/index.ts"
import { ChainClients } from "../src/Chain/ChainClients.ts"
import { type FundOrderWire, fundCall } from "../src/Chain/FundCall.ts"
import { orderEscrow } from "../src/Chain/OrderEscrow.ts"
import { rpc } from "../src/Chain/RpcError.ts"
import { wakeOnNotify, wakeOwned } from "../src/Cluster/KeyedWakes.ts"
import { AppConfig } from "../src/Config.ts"
import { OrderFunding } from "../src/Orders/Funding.ts"
import {
  type AwaitingMarginOrder,
  awaitingMarginOrders,
  fundingPendingOrders,
  markFailed,
  markFunding,
  orderFundingState,
  settleClosedV2Orders,
  settleFundingOrders,
} from "../src/Orders/Repo.ts"
import { parseRelayerOutcome, RELAYER_OUTCOME_CHANNEL, UNENDED_TRANSITIONS } from "../src/Relayer/Transitions.ts"
import { Relayer } from "../src/Relayer.ts"
import { ESCROW_INDEXED_CHANNEL, parseEscrowIndexed } from "../src/Settlement/IndexedWake.ts"
import { again, idle, keyedAdoption, keyedDriver, keyedEntityOptions } from "./Keyed.ts"

/** Cadence of a pending order (the singleton's sweep interval). */
const SWEEP = Duration.seconds(1)

/**
 * One `awaiting_margin` order: its venue transfer (a withdrawal with the WithdrawalDesk) decides.
 * - failed: nothing moved (or the venue refused it); the order fails with the withdrawal's error.
 * - relayed: once the owner's wallet on the escrow chain holds the amount (the venue pays out after it
 *   acknowledged), `fund` goes to the TxRelayer under `fund:<order id>` exactly as wallet funding does, and
 *   the order goes `funding`. A relayer that already knows the key changes nothing (a sweep after a crash).
 * - queued, submitting, unknown: wait. An unknown withdrawal may still land; nothing is signed around it.
 * Past the FundOrder's deadline `fund` can no longer succeed, so the order fails (the withdrawal, if it
 * lands, has paid the owner's own address). `fund` goes to the order's own escrow (v1 or v2: the FundOrder and
 * permit were signed for it at creation).
 */
const advance = (o: AwaitingMarginOrder) =>
  Effect.gen(function* () {
    const { deployment } = yield* AppConfig
    const now = yield* Clock.currentTimeMillis
    const venue = deployment.venues.find((v) => v.id === o.venue)
    if (venue === undefined) return
    const escrow = orderEscrow(venue, o.escrow_version)
    if (escrow === undefined) return
    // Its fund call is with the relayer already (left by a stop between two commits before they became one):
    // the relayer's outcome and the index decide from `funding`, whatever the wallet and the deadline say now.
    if (o.fund_relayed) {
      yield* markFunding(o.id, null, now, "awaiting_margin")
      return
    }
    if (o.withdrawal_state === "failed") {
      yield* markFailed(o.id, "awaiting_margin", `the venue transfer failed: ${o.withdrawal_error}`, now)
      return
    }
    if (BigInt(o.fund_deadline) * 1000n <= BigInt(now)) {
      yield* markFailed(
        o.id,
        "awaiting_margin",
        "the FundOrder deadline passed before the venue transfer reached the wallet",
        now,
      )
      return
    }
    if (o.withdrawal_state !== "relayed") return
    const client = (yield* ChainClients).venue(venue.id)
    if (client === undefined) return
    const balance = yield* rpc("eth_call balanceOf", () =>
      client.readContract({
        address: getAddress(venue.token),
        abi: mockUSDCAbi,
        functionName: "balanceOf",
        args: [getAddress(o.owner_address)],
      }),
    )
    if (balance < BigInt(o.amount)) return
    // biome-ignore lint/suspicious/noExplicitAny: stored wire typed data
    const fund = (o.to_sign as ReadonlyArray<{ kind: string; typed_data: any }>).find((i) => i.kind === "fund_order")
    if (fund === undefined || !o.signatures.fund_order || !o.signatures.permit) {
      yield* markFailed(o.id, "awaiting_margin", "the order's fund signatures are missing", now)
      return
    }
    const relayer = yield* Relayer
    const sql = yield* SqlClient.SqlClient
    // The order's move and the relayer's row commit together, as in wallet funding (Orders.sign): a stop between
    // two commits would leave `fund` relayed for an order still `awaiting_margin`, whose next pass finds the wallet
    // emptied by that very fund and waits until the deadline fails a funded order. The guarded move goes first and
    // holds the order's row, so a concurrent pass relays nothing.
    yield* sql
      .withTransaction(
        Effect.gen(function* () {
          if (!(yield* markFunding(o.id, null, now, "awaiting_margin"))) return
          yield* relayer
            .submit({
              idempotencyKey: `fund:${o.id}`,
              venue: venue.id,
              to: escrow.address,
              data: fundCall(
                fund.typed_data.message as FundOrderWire,
                o.signatures.fund_order as Hex,
                o.signatures.permit as Hex,
                escrow.version,
              ),
              master: o.master,
            })
            // The key is taken: this order's fund call is already with the relayer.
            .pipe(Effect.catchTag("IdempotencyConflict", () => Effect.void))
        }),
      )
      .pipe(
        // Rolled back: the order is still awaiting_margin and fails with the reason.
        Effect.catchTag("RelayerRejected", (e) =>
          markFailed(o.id, "awaiting_margin", `the fund call is not relayable: ${e.reason}`, now),
        ),
      )
  })

/**
 * One pass over one order (the OrderFunding entity's step): an `awaiting_margin` order advances (see `advance`);
 * a `funding` order goes `funded` once the escrow index (finalized) holds it, or `failed` when its fund
 * transaction reverted; a drained sticky-closed v2 order goes `closed`. Every fact is a durable row
 * (withdrawals, relayer requests, the escrow index), so a pass on a new instance after a crash finds whatever
 * changed while no one was looking. Pending while the order is in one of those states: looked at again every
 * second (the venue's payout, the relayer and the watcher need no message to be noticed), sooner when a relayer
 * outcome of `fund:<id>` or an index page of the order's venue wakes it.
 */
export const stepOrderFunding = (id: string) =>
  Effect.gen(function* () {
    const before = yield* orderFundingState(id)
    if (before === undefined) return idle
    const now = yield* Clock.currentTimeMillis
    if (before.state === "awaiting_margin") {
      for (const o of yield* awaitingMarginOrders(1, id)) yield* advance(o)
    }
    const mid = yield* orderFundingState(id)
    if (mid?.state === "funding") yield* settleFundingOrders(now, id)
    if (mid?.state === "funded" && mid.close_requested) yield* settleClosedV2Orders(now, id)
    const after = yield* orderFundingState(id)
    if (after === undefined) return idle
    const pending =
      after.state === "awaiting_margin" ||
      after.state === "funding" ||
      (after.state === "funded" && after.close_requested)
    if (!pending) return idle
    return after.state !== before.state ? again(Duration.zero) : again(SWEEP)
  })

/** Orders with funding work pending (start-up adoption wakes them; src/Orders/Repo.ts fundingPendingOrders). */
export const pendingKeys = fundingPendingOrders()

const OrderFundingEntityLive = OrderFunding.toLayer(
  Effect.gen(function* () {
    const drive = yield* keyedDriver(OrderFunding, stepOrderFunding)
    return { Wake: drive.onWake, Tick: drive.onTick }
  }),
  keyedEntityOptions,
)

/**
 * Wakes on this runner: the end of the fund call's relayer request (key `fund:<order id>`; final, reverted or
 * replaced) wakes its order; a committed escrow index page of a venue wakes that venue's pending orders (funded,
 * failed, drained). A `funding` order moves only once its request left queued/pending/included
 * (settleFundingOrders), so the request's other transitions (UNENDED_TRANSITIONS) wake nothing.
 */
const OrderFundingWakesLive = Layer.mergeAll(
  wakeOnNotify("order-funding", RELAYER_OUTCOME_CHANNEL, (payload) => {
    const { kind, key } = parseRelayerOutcome(payload)
    return key.startsWith("fund:") && !UNENDED_TRANSITIONS.includes(kind)
      ? wakeOwned(OrderFunding, [key.slice("fund:".length)])
      : Effect.void
  }),
  wakeOnNotify("order-funding", ESCROW_INDEXED_CHANNEL, (payload) =>
    Effect.flatMap(fundingPendingOrders(parseEscrowIndexed(payload).venue), (ids) => wakeOwned(OrderFunding, ids)),
  ),
)

export const OrderFundingLive = Layer.mergeAll(
  OrderFundingEntityLive,
  OrderFundingWakesLive,
  keyedAdoption(OrderFunding, pendingKeys),
)
