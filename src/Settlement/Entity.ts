import { Entity } from "@effect/cluster"
import { Tick, Wake } from "../Cluster/Keyed.ts"

/** Settlement as a keyed entity, one per take (id = the take id). Behaviour in actors/Settlement.ts. */
export const Settlement = Entity.make("settlement", [Wake, Tick])
