import { HttpApiBuilder } from "@effect/platform"
import { Clock, Effect } from "effect"
import { ChainStatusBoard } from "../Chain/ChainStatusBoard.ts"
import { HealthDegraded, HealthOk, MAX_PENDING_FOR_READY } from "../Domain/Health.ts"
import { toRfc3339 } from "../Domain/Primitives.ts"
import { journalStats } from "../Store/Journal.ts"
import { Api } from "./Api.ts"

/** Readiness as the spec defines it; the journal figures come from the database, not memory. */
export const HealthHandlers = HttpApiBuilder.group(Api, "health", (handlers) =>
  Effect.gen(function* () {
    const board = yield* ChainStatusBoard
    return handlers
      .handle("health", () =>
        Effect.gen(function* () {
          // A failed database read never claims readiness and never turns /health into a 500.
          const [chains, pending, journal, now] = yield* Effect.all(
            [
              board.chains,
              Effect.either(board.pendingTransactions),
              Effect.either(journalStats),
              Clock.currentTimeMillis,
            ],
            { concurrency: "unbounded" },
          )
          const pendingCount = pending._tag === "Right" ? pending.right : 0
          const journalFigures =
            journal._tag === "Right" ? journal.right : { unpublished: 0, oldestUnpublishedSeconds: 0 }
          const ready =
            pending._tag === "Right" &&
            journal._tag === "Right" &&
            chains.every((c) => c.ready && !c.integrity_mismatch) &&
            pendingCount < MAX_PENDING_FOR_READY
          const body = {
            ready,
            server_time: toRfc3339(now),
            pending_transactions: pendingCount,
            chains,
            journal_unpublished: journalFigures.unpublished,
            journal_oldest_unpublished_seconds: journalFigures.oldestUnpublishedSeconds,
          }
          return ready
            ? new HealthOk({ status: "ok", ...body })
            : yield* Effect.fail(new HealthDegraded({ status: "degraded", ...body }))
        }),
      )
      .handle("live", () => Effect.succeed({ status: "live" as const }))
  }),
)
