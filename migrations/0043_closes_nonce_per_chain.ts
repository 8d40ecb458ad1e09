import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * A CloseOffer's nonce is spent per escrow contract, and an escrow address names one contract per chain only: the
 * same address on two chains (a deterministic deployment, the devnet's) is two contracts with two nonce spaces.
 * The owner's used nonces are therefore kept per (chain, escrow), so a close on one chain no longer refuses a
 * close on another with the same nonce (src/Escrow/Closes.ts, enqueueClose).
 */
export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`create unique index closes_owner_nonce_chain on closes (chain_id, escrow, owner, nonce)
    where nonce is not null`
  yield* sql`drop index closes_owner_nonce`
})
