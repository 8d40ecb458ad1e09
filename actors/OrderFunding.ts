import { Clock, Duration, Effect } from "effect"
import { getAddress, type Hex } from "viem"
import { mockUSDCAbi } from "../src/Chain/artifacts/index.ts"
import { ChainClients } from "../src/Chain/ChainClients.ts"
import { type FundOrderWire, fundCall } from "../src/Chain/FundCall.ts"
import { orderEscrow } from "../src/Chain/OrderEscrow.ts"
import { Relayer } from "../src/Chain/Relayer.ts"
import { AppConfig } from "../src/Config.ts"
import {
  type AwaitingMarginOrder,
  awaitingMarginOrders,
  markFailed,
  markFunding,
  settleClosedV2Orders,
  settleFundingOrders,
} from "../src/Store/Orders.ts"
import { supervisedSingleton } from "../src/Supervision.ts"

const SWEEP = Duration.seconds(1)
const BATCH = 64

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
    const balance = yield* Effect.tryPromise(() =>
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
    const submitted = yield* (yield* Relayer)
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
      .pipe(
        Effect.as(true),
        Effect.catchTags({
          // The key is taken: this order's fund call is already with the relayer.
          IdempotencyConflict: () => Effect.succeed(true),
          RelayerRejected: (e) =>
            markFailed(o.id, "awaiting_margin", `the fund call is not relayable: ${e.reason}`, now).pipe(
              Effect.as(false),
            ),
        }),
      )
    if (submitted) yield* markFunding(o.id, null, now, "awaiting_margin")
  }).pipe(
    Effect.catchAllCause((cause) => Effect.logWarning(`order ${o.id}: awaiting_margin step failed; retrying`, cause)),
  )

const sweep = Effect.gen(function* () {
  for (const o of yield* awaitingMarginOrders(BATCH)) yield* advance(o)
  yield* settleFundingOrders(yield* Clock.currentTimeMillis)
  yield* settleClosedV2Orders(yield* Clock.currentTimeMillis)
})

/**
 * Advances `awaiting_margin` orders (see `advance`), then moves `funding` orders to `funded` when the
 * escrow index (finalized) holds them, or to `failed` when their fund transaction reverted, and drained
 * sticky-closed v2 orders to `closed`. Every fact
 * is a durable row (withdrawals, relayer requests, the escrow index), so a sweep after a crash finds
 * whatever changed while no one was looking.
 */
export const runOrderFunding = sweep.pipe(
  Effect.catchAllCause((cause) => Effect.logWarning("order funding sweep failed; retrying", cause)),
  Effect.zipRight(Effect.sleep(SWEEP)),
  Effect.forever,
  Effect.annotateLogs({ actor: "OrderFunding" }),
)

export const OrderFundingLive = supervisedSingleton("order-funding", runOrderFunding)
