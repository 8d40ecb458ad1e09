import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * Secrets seen in a maker's reveal (`PaymentClaimed` on the taker chain) in a block that is not final yet
 * (actors/EscrowV2Ingest.ts, scanReveals). The index (escrow_v2_secrets) holds final events only; this table lets
 * the settlement claim the lock on the maker chain as soon as the reveal is mined instead of two or more blocks
 * later. Nothing depends on the reveal's finality: the escrow accepted the secret only because it hashes to the
 * payment's hashlock, so it stays the preimage even if its block is re-organised away, and a claim with it is
 * valid whatever happens to the reveal. Read only where it matches the fill's hashlock (src/Settlement/RepoV2.ts).
 * A secret is public once mined: it is stored no earlier than the index would store it, only sooner.
 */
export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    create table escrow_v2_seen_secrets (
      venue text not null,
      fill_digest varchar(66) not null,
      hashlock varchar(66) not null,
      secret varchar(66) not null,
      tx_hash varchar(66) not null,
      block_number bigint not null,
      seen_at timestamptz not null default now(),
      primary key (venue, fill_digest)
    )`
})
