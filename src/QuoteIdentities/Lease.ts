import { ClusterSchema, DeliverAt, Entity } from "@effect/cluster"
import { Rpc } from "@effect/rpc"
import { DateTime, PrimaryKey, Schema } from "effect"
import { NotFound, StateConflict } from "../Domain/Errors.ts"

/**
 * The lease of one quote identity as a cluster entity (DESIGN §4 "Decisions for the actors"; behaviour in
 * actors/QuoteIdentityLease.ts). The entity id is the identity's id (lowercase UUID).
 *
 * - `Renew` (volatile: no `cluster_messages` row): the renewal's one statement, run in the entity, which answers
 *   it and then sleeps in memory to the expiry (database time) and expires the lease there.
 * - `Backstop` (persisted, delivered at `at`): the crash backstop. One is written when a lease generation starts
 *   (primary key = the generation, so writing it again is a no-op) and the backstop re-arms itself when it fires
 *   and finds the lease renewed (primary key = generation@expiry). A renewal never writes one.
 */

/** A renewal: `master` restricts it to that master's identity (a session); a credential's binding is checked by the route. */
export const RenewRequest = {
  ttlSeconds: Schema.Int,
  master: Schema.NullOr(Schema.String),
}

/** The renewal's answer, in database time. */
export const Renewal = Schema.Struct({ generation: Schema.String, expires_at: Schema.String })

/** The crash backstop: delivered at `at` (epoch ms, this runner's clock); `key` de-duplicates it. */
export class BackstopAt extends Schema.Class<BackstopAt>("QuoteIdentityLease/BackstopAt")({
  key: Schema.String,
  generation: Schema.String,
  at: Schema.Number,
}) {
  [PrimaryKey.symbol]() {
    return this.key
  }
  [DeliverAt.symbol]() {
    return DateTime.unsafeMake(this.at)
  }
}

export const Renew = Rpc.make("Renew", {
  payload: RenewRequest,
  success: Renewal,
  error: Schema.Union(NotFound, StateConflict),
})

export const Backstop = Rpc.make("Backstop", { payload: BackstopAt }).annotate(ClusterSchema.Persisted, true)

export const QuoteIdentityLease = Entity.make("quote-identity-lease", [Renew, Backstop])
