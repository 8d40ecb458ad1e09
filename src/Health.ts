/**
 * Health (spec GET /health, GET /health/live): readiness as the spec defines it, with the cluster's supervision
 * and the alerts shown beside it. Every figure comes from rows (the watchers' status rows, relayer requests, the
 * journal, the runners' status rows), so every runner answers the same whichever one runs the watchers.
 * src/Health/Http.ts serves it on the public API; the operators' listener (src/Observability/OperatorListener.ts)
 * serves the same answer to the status page.
 */
import { SqlClient } from "@effect/sql"
import { Clock, Effect, Layer } from "effect"
import { clusterHealth } from "./Cluster/RunnerStatusRepo.ts"
import { AppConfig } from "./Config.ts"
import { HealthDegraded, HealthOk, MAX_PENDING_FOR_READY } from "./Domain/Health.ts"
import { toRfc3339 } from "./Domain/Primitives.ts"
import { readAlerts } from "./Health/Alerts.ts"
import { ChainStatusBoard } from "./Health/ChainStatusBoard.ts"
import { journalStats } from "./Sql/Journal.ts"
import { SqlTest } from "./Sql/TestDatabase.ts"

/** /health's body without its status. */
export type HealthBody = Omit<HealthOk, "status"> & Omit<HealthDegraded, "status">

export class Health extends Effect.Service<Health>()("Health", {
  effect: Effect.gen(function* () {
    const board = yield* ChainStatusBoard
    const { deployment } = yield* AppConfig
    const sql = yield* SqlClient.SqlClient

    /**
     * Ready: every chain fresh at its finalized head with enough gas and no integrity mismatch, fewer than
     * MAX_PENDING_FOR_READY pending transactions, and the journal and relayer tables readable. A failed database
     * read never claims readiness and never fails the report (no 500): it shows as not ready.
     */
    const report: Effect.Effect<HealthBody> = Effect.gen(function* () {
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
    }).pipe(Effect.provideService(SqlClient.SqlClient, sql), Effect.withSpan("Health.report"))

    /** The spec's answer: `ok` (200) when ready, else the same body failing as `degraded` (503). */
    const check: Effect.Effect<HealthOk, HealthDegraded> = Effect.flatMap(report, (body) =>
      body.ready
        ? Effect.succeed(new HealthOk({ status: "ok", ...body }))
        : Effect.fail(new HealthDegraded({ status: "degraded", ...body })),
    )

    /** Liveness: the process answers; nothing is read. */
    const live = Effect.succeed({ status: "live" as const })

    return { report, check, live } as const
  }),
  dependencies: [ChainStatusBoard.Live],
}) {
  /** The service on a throw-away database (SqlTest); the test gives the AppConfig. */
  static readonly Test = Health.Default.pipe(Layer.provideMerge(SqlTest))
}
