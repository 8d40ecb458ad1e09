import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * An order funded from venue margin: the withdrawal (through the WithdrawalDesk) that moves the wallet's
 * shortfall from the owner's venue margin to the owner's address on the escrow chain, before `fund` is relayed.
 * Null for orders funded from the wallet alone. At most one order per withdrawal.
 */
export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`alter table orders add column venue_transfer_id uuid unique references withdrawals (id)`
})
