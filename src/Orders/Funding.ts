import { Entity } from "@effect/cluster"
import { Tick, Wake } from "../Cluster/Keyed.ts"

/**
 * Order funding as a keyed entity, one per order (id = the order id): it drives a funded order's fund call, its
 * venue transfer and a requested close to their end. Behaviour in actors/OrderFunding.ts.
 */
export const OrderFunding = Entity.make("order-funding", [Wake, Tick])
