import { Singleton } from "@effect/cluster"
import { Clock, Duration, Effect } from "effect"
import { settleFundingOrders } from "../src/Store/Orders.ts"

const SWEEP = Duration.seconds(1)

/**
 * Moves `funding` orders to `funded` when the escrow index (finalized) holds them, or to `failed`
 * when their fund transaction reverted. Both facts are durable rows, so a sweep after a crash
 * finds whatever changed while no one was looking.
 */
export const runOrderFunding = Effect.flatMap(Clock.currentTimeMillis, settleFundingOrders).pipe(
  Effect.catchAllCause((cause) => Effect.logWarning("order funding sweep failed; retrying", cause)),
  Effect.zipRight(Effect.sleep(SWEEP)),
  Effect.forever,
  Effect.annotateLogs({ actor: "OrderFunding" }),
)

export const OrderFundingLive = Singleton.make("order-funding", runOrderFunding)
