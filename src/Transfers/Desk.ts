import { Entity } from "@effect/cluster"
import { Tick, Wake } from "../Cluster/Keyed.ts"

/**
 * The transfer desk as a keyed entity, one per transfer intent (id = the transfer id): it gives the intent its
 * take once the funding withdrawal allows. Behaviour in actors/TransferDesk.ts.
 */
export const TransferDesk = Entity.make("transfer-desk", [Wake, Tick])
