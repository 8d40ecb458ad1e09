/**
 * The withdrawal desk's protocol: an entity per venue account, id "venue:address" (behaviour in
 * actors/WithdrawalDesk.ts). `Submit` is the persisted intent of a signed withdrawal.
 */
import { ClusterSchema, Entity } from "@effect/cluster"
import { Rpc } from "@effect/rpc"
import { Schema } from "effect"
import { Tick, Wake } from "../Cluster/Keyed.ts"
import { ChallengeExpired, NotFound, WithdrawalPending } from "../Domain/Errors.ts"
import { WithdrawalView } from "./View.ts"

/** The entity id of a venue account's desk. */
export const withdrawalDeskId = (venue: string, address: string) => `${venue}:${address.toLowerCase()}`

/** A signed preparation to queue: its digest (the client's key), the signature, the new withdrawal's id. */
export const WithdrawalIntent = Schema.Struct({ id: Schema.String, digest: Schema.String, signature: Schema.String })

/**
 * The answer is the withdrawal as the desk's transaction left it (queued at revision 1 when it made it), not as read
 * afterwards: the desk starts sending it at once, and the route's answer would otherwise depend on that race.
 */
export const Submit = Rpc.make("Submit", {
  payload: WithdrawalIntent.fields,
  success: WithdrawalView,
  error: Schema.Union(ChallengeExpired, NotFound, WithdrawalPending),
  primaryKey: (p) => `${p.digest}/${p.id}`,
}).annotate(ClusterSchema.Persisted, true)

export const WithdrawalDesk = Entity.make("withdrawal-desk", [Wake, Tick, Submit])
