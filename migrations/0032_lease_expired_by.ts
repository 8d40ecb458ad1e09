import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * The lease of each quote identity is an entity of the cluster (actors/QuoteIdentityLease.ts, issue 22): its
 * expiry runs on whichever runner hosts that identity. `quote_identities.lease_expired_by`: the runner address
 * (host:port) that journaled the identity's last `quote_identity.lease_expired` (null until one did; operational,
 * never on the wire), set in the same guarded UPDATE that marks the generation journaled.
 */
export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`alter table quote_identities add column lease_expired_by text`
})
