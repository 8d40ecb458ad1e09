import { SqlClient, type SqlError } from "@effect/sql"
import { Clock, Context, Effect, Layer } from "effect"
import { AppConfig } from "../Config.ts"
import type { ChainHealth } from "../Domain/Health.ts"
import { chainStatusRows } from "../Escrow/ChainStatus.ts"
import { pendingTransactionCount } from "../Relayer/Repo.ts"
import { chainHealth } from "./Readiness.ts"

/**
 * What /health reports per chain, read from the status rows the watchers persist, so that every
 * runner answers the same whichever one runs the watcher. A venue without a row (its watcher never
 * ran) is not ready with an error saying so. If the database cannot be read, every chain is
 * reported not ready (503), never a 500. Part of the Health service (src/Health.ts lists it in its
 * dependencies); the composition root also provides it (src/ChainLive.ts), the same layer, so one instance.
 */
export class ChainStatusBoard extends Context.Tag("ChainStatusBoard")<
  ChainStatusBoard,
  {
    readonly chains: Effect.Effect<ReadonlyArray<ChainHealth>>
    /** Relayer requests not yet included in a block (queued or signed and in flight). */
    readonly pendingTransactions: Effect.Effect<number, SqlError.SqlError>
  }
>() {
  static readonly Live = Layer.effect(
    ChainStatusBoard,
    Effect.gen(function* () {
      const { deployment } = yield* AppConfig
      const sql = yield* SqlClient.SqlClient
      const chains = Effect.gen(function* () {
        const now = yield* Clock.currentTimeMillis
        const rows = yield* chainStatusRows.pipe(Effect.either)
        if (rows._tag === "Left") {
          return deployment.venues.map((v) => ({
            ...chainHealth(v, undefined, now),
            error: "chain status unavailable (database)",
          }))
        }
        const byVenue = new Map(rows.right.map((r) => [r.venue, r]))
        return deployment.venues.map((v) => chainHealth(v, byVenue.get(v.id), now))
      }).pipe(Effect.provideService(SqlClient.SqlClient, sql))
      return ChainStatusBoard.of({
        chains,
        pendingTransactions: pendingTransactionCount.pipe(Effect.provideService(SqlClient.SqlClient, sql)),
      })
    }),
  )
}
