import { ClusterSchema, DeliverAt, Entity } from "@effect/cluster"
import { Rpc } from "@effect/rpc"
import { DateTime, PrimaryKey, Schema } from "effect"
import { Forbidden, NotFound, StateConflict, Unauthorized } from "../Domain/Errors.ts"

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

/**
 * A renewal by a master session (`master`: that master's identity only; the middleware authenticated and charged
 * it) or by an `mk_` credential (`credential`: its token's SHA-256, hex, not looked up yet, and the request budget
 * to charge): the entity's one statement resolves the credential, charges it, checks its scope and binding and
 * renews.
 */
export const RenewRequest = {
  ttlSeconds: Schema.Int,
  master: Schema.NullOr(Schema.String),
  credential: Schema.NullOr(
    Schema.Struct({ tokenHash: Schema.String, bucket: Schema.Struct({ rate: Schema.Number, burst: Schema.Number }) }),
  ),
}

/** The renewal's answer, in database time; or the credential's request budget is spent (retry after that long). */
export const Renewal = Schema.Union(
  Schema.TaggedStruct("Renewed", { generation: Schema.String, expires_at: Schema.String }),
  Schema.TaggedStruct("BudgetSpent", { retryAfterSeconds: Schema.Int }),
)

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
  error: Schema.Union(NotFound, StateConflict, Unauthorized, Forbidden),
})

export const Backstop = Rpc.make("Backstop", { payload: BackstopAt }).annotate(ClusterSchema.Persisted, true)

export const QuoteIdentityLease = Entity.make("quote-identity-lease", [Renew, Backstop])
