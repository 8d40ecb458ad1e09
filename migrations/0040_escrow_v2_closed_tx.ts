import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * A v2 close's outcome is its `OrderClosed` event, found by the close's transaction (src/Escrow/Closes.ts,
 * settleCloses: v2 has no closes table). `escrow_v2_events` had only its primary key (venue, block, log index), so
 * each pending close's lookup read every event of its venue: 48 ms at 200,000 events (a parallel sequential scan,
 * EXPLAIN ANALYZE, 2026-12-02), on every pass of its queue, growing with the venue's history. Partial: the close
 * events only, so a page of other events pays nothing for it.
 */
export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`create index escrow_v2_events_closed_tx on escrow_v2_events (venue, tx_hash) where event = 'OrderClosed'`
})
