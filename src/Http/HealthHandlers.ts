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
          const [chains, pending, journal, now] = yield* Effect.all(
            [board.chains, board.pendingTransactions, journalStats.pipe(Effect.orDie), Clock.currentTimeMillis],
            { concurrency: "unbounded" },
          )
          const ready = chains.every((c) => c.ready && !c.integrity_mismatch) && pending < MAX_PENDING_FOR_READY
          const body = {
            ready,
            server_time: toRfc3339(now),
            pending_transactions: pending,
            chains,
            journal_unpublished: journal.unpublished,
            journal_oldest_unpublished_seconds: journal.oldestUnpublishedSeconds,
          }
          return ready
            ? new HealthOk({ status: "ok", ...body })
            : yield* Effect.fail(new HealthDegraded({ status: "degraded", ...body }))
        }),
      )
      .handle("live", () => Effect.succeed({ status: "live" as const }))
  }),
)
