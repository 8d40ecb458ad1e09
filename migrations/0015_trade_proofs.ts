import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * Trade proofs (GET /v1/trades/history, src/Trades/Repo.ts) read each settled fill's settlement transactions from
 * `escrow_events` by the on-chain fill id in the event's args. Only the four settlement events of a fill are
 * indexed (Locked and Claimed on the maker chain, Paid and PaymentClaimed on the taker chain); `args->>'fillId'`
 * is lowercase hex, as the index writes it (src/Chain/EscrowIndex.ts eventArgsJson).
 */
export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    create index escrow_events_settlement_fill on escrow_events ((args ->> 'fillId'))
    where event in ('Locked', 'Paid', 'Claimed', 'PaymentClaimed')`
})
