import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import type { SeenReveal } from "../Chain/EscrowLogsV2.ts"

/**
 * Makers' reveals seen before their block is final (migration 0035; actors/EscrowV2Ingest.ts scans them): the
 * secret of a fill's payment on the taker chain, so the settlement claims the maker chain's lock when the reveal is
 * mined rather than when the index, which holds final events only, takes it in. A row is written once per
 * (venue, digest) and never changed: a reveal re-organised away and mined again carries the same secret.
 */

/** Stores the reveals not stored yet; returns the Fill digests newly stored (to wake their takes). */
export const recordSeenReveals = (venue: string, reveals: ReadonlyArray<SeenReveal>) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    reveals.length === 0
      ? Effect.succeed<ReadonlyArray<string>>([])
      : Effect.map(
          sql<{ fill_digest: string }>`
            insert into escrow_v2_seen_secrets ${sql.insert(
              reveals.map((r) => ({
                venue,
                fill_digest: r.fillDigest,
                hashlock: r.hashlock,
                secret: r.secret,
                tx_hash: r.txHash,
                block_number: r.blockNumber.toString(),
              })),
            )} on conflict do nothing returning fill_digest`,
          (rows) => rows.map((r) => r.fill_digest),
        ),
  )
