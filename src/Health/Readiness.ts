import type { VenueConfig } from "../Config.ts"
import type { ChainHealth } from "../Domain/Health.ts"
import { toRfc3339 } from "../Domain/Primitives.ts"
import type { ChainStatusRow } from "../Escrow/ChainStatus.ts"

/**
 * A chain's /health entry from its persisted status row (written by its watcher, wherever that
 * runs) and the time now. Ready means: the last poll succeeded, it and the last new head are at
 * most `freshness_seconds` old, the index (and, with `escrow_v2`, the v2 index: v2 takes are routed and settled
 * from it) has reached the finalized head, the operator's gas is at
 * least `min_operator_gas`, and no integrity mismatch is latched. `error` says why not, in that
 * order (the integrity alarm has its own fields).
 */
export const chainHealth = (venue: VenueConfig, row: ChainStatusRow | undefined, nowMs: number): ChainHealth => {
  if (row === undefined) {
    return {
      venue: venue.id,
      chain_id: venue.chain_id,
      ready: false,
      block: "0",
      finalized_block: "0",
      checked_at: null,
      finalized_at: null,
      error: "chain watcher not running",
      operator_gas: "0",
      integrity_checked_at: null,
      integrity_completed_at: null,
      integrity_error: "",
      integrity_mismatch: false,
    }
  }
  const freshnessMs = venue.watcher.freshness_seconds * 1000
  const age = (d: Date | null) => (d === null ? Number.POSITIVE_INFINITY : nowMs - d.getTime())
  const gas = row.operatorGas ?? 0n
  const minGas = BigInt(venue.watcher.min_operator_gas)
  const reason =
    row.error !== ""
      ? row.error
      : row.checkedAt === null
        ? "chain not checked yet"
        : age(row.checkedAt) > freshnessMs
          ? `last successful check ${Math.round(age(row.checkedAt) / 1000)} s ago`
          : age(row.headSeenAt) > freshnessMs
            ? `head ${row.latestBlock ?? "?"} unchanged for ${Math.round(age(row.headSeenAt) / 1000)} s`
            : row.finalizedBlock === null || row.indexedBlock < row.finalizedBlock
              ? `indexing: block ${row.indexedBlock} of finalized ${row.finalizedBlock ?? "?"}`
              : venue.escrow_v2 !== undefined &&
                  (row.v2IndexedBlock === null || row.v2IndexedBlock < row.finalizedBlock)
                ? `v2 indexing: block ${row.v2IndexedBlock ?? "none"} of finalized ${row.finalizedBlock}`
                : gas < minGas
                  ? `operator gas ${gas} below the minimum ${minGas}`
                  : ""
  const iso = (d: Date | null) => (d === null ? null : toRfc3339(d.getTime()))
  return {
    venue: venue.id,
    chain_id: venue.chain_id,
    ready: reason === "" && !row.integrityMismatch,
    block: (row.latestBlock ?? 0n).toString(),
    finalized_block: (row.finalizedBlock ?? 0n).toString(),
    checked_at: iso(row.checkedAt),
    finalized_at: iso(row.finalizedAt),
    error: reason,
    operator_gas: gas.toString(),
    integrity_checked_at: iso(row.integrityCheckedAt),
    integrity_completed_at: iso(row.integrityCompletedAt),
    integrity_error: row.integrityError,
    integrity_mismatch: row.integrityMismatch,
  }
}
