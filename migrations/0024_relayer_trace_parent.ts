import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * Issue 17 (traces): the W3C `traceparent` of the span that submitted a relayer request, when traces are
 * exported (null otherwise), so the TxRelayer's send of it continues the submitter's trace (an HTTP request's,
 * an actor's) in another fiber or on another runner. Never a secret: two random ids and a flag.
 */
export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`alter table relayer_requests add column trace_parent text`
})
