import { Clock, Effect } from "effect"
import { clusterHealth } from "../Cluster/RunnerStatusRepo.ts"
import { AppConfig } from "../Config.ts"
import { type HealthDegraded, type HealthOk, MAX_PENDING_FOR_READY } from "../Domain/Health.ts"
import { toRfc3339 } from "../Domain/Primitives.ts"
import { journalStats } from "../Sql/Journal.ts"
import { readAlerts } from "./Alerts.ts"
import { ChainStatusBoard } from "./ChainStatusBoard.ts"

/** /health's body without its status: the public route (src/Health/Http.ts) and the status page share it. */
export type HealthBody = Omit<HealthOk, "status"> & Omit<HealthDegraded, "status">

/**
 * Readiness as the spec defines it; the journal figures come from the database, not memory. The cluster's
 * supervision (actors, mailboxes, runners) and the alerts (src/Domain/Alerts.ts) are shown beside it.
 */
export const healthReport = Effect.gen(function* () {
  const board = yield* ChainStatusBoard
  const { deployment } = yield* AppConfig
  // A failed database read never claims readiness and never turns /health into a 500.
  const [chains, pending, journal, now, cluster] = yield* Effect.all(
    [
      board.chains,
      Effect.either(board.pendingTransactions),
      Effect.either(journalStats),
      Clock.currentTimeMillis,
      // Shown beside the spec's fields, never part of ready: an unreadable table shows as empty.
      clusterHealth.pipe(Effect.orElseSucceed(() => ({ actors: [], mailbox_depth: 0, runners: [] }))),
    ],
    { concurrency: "unbounded" },
  )
  const pendingCount = pending._tag === "Right" ? pending.right : 0
  const journalFigures = journal._tag === "Right" ? journal.right : { unpublished: 0, oldestUnpublishedSeconds: 0 }
  const ready =
    pending._tag === "Right" &&
    journal._tag === "Right" &&
    chains.every((c) => c.ready && !c.integrity_mismatch) &&
    pendingCount < MAX_PENDING_FOR_READY
  const alerts = yield* readAlerts({
    nowMs: now,
    chains,
    cluster,
    venues: deployment.venues,
    settlement: deployment.settlement,
  })
  const body: HealthBody = {
    ready,
    server_time: toRfc3339(now),
    pending_transactions: pendingCount,
    chains,
    journal_unpublished: journalFigures.unpublished,
    journal_oldest_unpublished_seconds: journalFigures.oldestUnpublishedSeconds,
    cluster,
    alerts,
  }
  return body
})
