/**
 * The close queue's protocol: an entity per (owner, chain), id "owner:chainId" (behaviour and the whole story in
 * actors/CloseQueue.ts). `Enqueue` is the persisted intent of a new close.
 */
import { ClusterSchema, Entity } from "@effect/cluster"
import { Rpc } from "@effect/rpc"
import { Schema } from "effect"
import { Tick, Wake } from "../Cluster/Keyed.ts"
import { CloseLimit, ClosePending, StateConflict } from "../Domain/Errors.ts"

/** The entity id of an (owner, chain) queue. */
export const closeQueueId = (owner: string, chainId: number) => `${owner.toLowerCase()}:${chainId}`

/** A close to accept (src/Escrow/Closes.ts NewClose on the wire) and the escrow call its relayer request makes. */
export const CloseIntent = Schema.Struct({
  id: Schema.String,
  kind: Schema.Literal("signed", "managed"),
  master: Schema.String,
  venue: Schema.String,
  chainId: Schema.Number,
  escrow: Schema.String,
  escrowVersion: Schema.Literal(1, 2),
  orderId: Schema.String,
  owner: Schema.String,
  amount: Schema.BigInt,
  dex: Schema.Number,
  toMargin: Schema.Boolean,
  nonce: Schema.NullOr(Schema.BigInt),
  deadline: Schema.NullOr(Schema.BigInt),
  digest: Schema.NullOr(Schema.String),
  signature: Schema.NullOr(Schema.String),
  relayKey: Schema.String,
  /** The call the relayer request makes (`closeWithSig` or `operatorClose` on the order's escrow). */
  data: Schema.String,
})
export type CloseIntent = typeof CloseIntent.Type

/** The accepted close (new, or the same terms accepted before): what the route needs to show the order. */
export const AcceptedClose = Schema.Struct({
  id: Schema.String,
  venue: Schema.String,
  escrow_version: Schema.Literal(1, 2),
  order_id: Schema.String,
  owner: Schema.String,
  state: Schema.Literal("pending", "final", "reverted", "expired"),
})

export const Enqueue = Rpc.make("Enqueue", {
  payload: CloseIntent.fields,
  success: AcceptedClose,
  error: Schema.Union(ClosePending, CloseLimit, StateConflict),
  primaryKey: (p) => `${p.relayKey}/${p.id}`,
}).annotate(ClusterSchema.Persisted, true)

export const CloseQueue = Entity.make("close-queue", [Wake, Tick, Enqueue])
