import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * A quote set's hashlock index is held by every fill that could ever have locked it; a fill that expired unsigned
 * gives its index back (0019 held every index forever, so takes left to expire unsigned could exhaust a small set).
 *
 * Why that is safe: a lock needs the payer's signature over the Fill, and the service stores it only by moving the
 * fill reserved → signed under the take's row lock while the pay window is open (src/Takes/Repo.ts signTake); a fill
 * becomes `expired` only from `reserved` once the window has passed (expireUnsignedTakes), so an `expired` fill with
 * no `signature` was never signed and its hashlock was never locked. Even a wrong reuse could not lock twice: the
 * escrow locks a hashlock once, ever. Every other fill keeps its index, including failed, cancelled and refunded ones
 * (their hashlock may be locked on chain) and reserved ones whose window passed but which the sweep has not yet
 * marked `expired` (reused only once marked, so this rule needs no clock).
 *
 * `fills_hashlock_index` is now unique over the holding fills only; the take's picker (src/Takes/CreateV2.ts)
 * hands out the lowest index no holding fill has, with the same predicate, so the planner can use this index.
 */
export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`drop index fills_hashlock_index`
  yield* sql`create unique index fills_hashlock_index on fills (order_id, sequence, hashlock_index)
    where hashlock_index is not null and not (state = 'expired' and signature is null)`
})
