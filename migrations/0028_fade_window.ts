import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * The owner's action on a fade flag (settlement v2, DESIGN §10: "not routed to until its owner acts";
 * POST /v1/quote-identities/{id}/resume). `quote_identities.fade_window_started_at`: the start of the identity's
 * current counting window, set when the owner resumes a flagged identity (null = since the identity began). The
 * flag rule (src/Domain/FadePolicy.ts) counts only fills whose chance was recorded at or after it, so the fades
 * that raised the flag never raise it again at once; a fill counts in the window of its chance.
 */
export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`alter table quote_identities add column fade_window_started_at timestamptz`
})
