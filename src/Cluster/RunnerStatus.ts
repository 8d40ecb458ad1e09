import { ShardId, Sharding, ShardingConfig } from "@effect/cluster"
import { Clock, Duration, Effect, Layer, Option } from "effect"
import { foldFadeDeltas } from "../Sql/FadeTotals.ts"
import { foldStateDeltas } from "../Sql/StateTotals.ts"
import { MESSAGE_RETENTION, STATUS_INTERVAL } from "./Config.ts"
import {
  deleteRunnerStatus,
  purgeProcessedMessages,
  removeDeadRunners,
  upsertRunnerStatus,
} from "./RunnerStatusRepo.ts"
import { Supervision } from "./Supervision.ts"

/** How often the retention job runs (each run deletes in batches until nothing is due). */
const RETENTION_EVERY = Duration.minutes(5)

/**
 * Per runner, not a singleton: every STATUS_INTERVAL, and at once when one of its actors starts,
 * stops or fails, it rewrites its status row (its supervision records, singletons held, shards
 * owned); then it removes dead runners' rows. Every few minutes it deletes processed cluster
 * messages past their retention and folds the state deltas and the quote identities' fade deltas into their totals
 * (src/Sql/StateTotals.ts, src/Sql/FadeTotals.ts).
 * The janitor's deletes and folds are safe to run anywhere at once, so every runner running them
 * costs a few cheap statements and needs no election. A failed pass is logged and retried on the
 * next beat; the loop never stops the runner.
 */
export const RunnerStatusLive = Layer.scopedDiscard(
  Effect.gen(function* () {
    const board = yield* Supervision
    const sharding = yield* Sharding.Sharding
    const config = yield* ShardingConfig.ShardingConfig
    if (Option.isNone(config.runnerAddress)) return
    const address = `${config.runnerAddress.value.host}:${config.runnerAddress.value.port}`
    const shardIds = config.assignedShardGroups.flatMap((group) =>
      Array.from({ length: config.shardsPerGroup }, (_, i) => ShardId.make(group, i + 1)),
    )

    const write = Effect.gen(function* () {
      const shards = shardIds.filter((id) => sharding.hasShardId(id)).length
      yield* upsertRunnerStatus(address, shards, yield* board.snapshot)
      yield* removeDeadRunners
    }).pipe(Effect.catchAllCause((cause) => Effect.logWarning("runner status write failed; next beat retries", cause)))

    const retention = Effect.gen(function* () {
      const now = yield* Clock.currentTimeMillis
      let removed = 0
      for (;;) {
        const n = yield* purgeProcessedMessages(now, MESSAGE_RETENTION)
        removed += n
        if (n === 0) break
      }
      if (removed > 0) yield* Effect.logInfo("cluster message retention", { removed })
    }).pipe(Effect.catchAllCause((cause) => Effect.logWarning("cluster message retention failed", cause)))

    // The state deltas since the last fold (one row per close or withdrawal state change) go into the totals, so
    // the /metrics read stays small between folds.
    // So do the fade deltas (one row per chance or fade of a maker's identity): its fade record's read stays small.
    const fold = Effect.zipRight(
      foldStateDeltas.pipe(
        Effect.tap((folded) => Effect.logDebug("state totals folded", { folded })),
        Effect.catchAllCause((cause) => Effect.logWarning("folding state totals failed; the next run retries", cause)),
      ),
      foldFadeDeltas.pipe(
        Effect.tap((folded) => Effect.logDebug("fade totals folded", { folded })),
        Effect.catchAllCause((cause) => Effect.logWarning("folding fade totals failed; the next run retries", cause)),
      ),
    )

    // Added first, so it runs after the loops below are interrupted: a graceful stop removes the row
    // (the cluster unregisters the runner itself).
    yield* Effect.addFinalizer(() => deleteRunnerStatus(address).pipe(Effect.ignore))
    // Whichever comes first: the beat, or a change of an actor here (a restart or a singleton moving
    // shows in the row within milliseconds, not at the next beat).
    yield* write.pipe(
      Effect.zipRight(board.changed.pipe(Effect.timeout(STATUS_INTERVAL), Effect.ignore)),
      Effect.forever,
      Effect.annotateLogs({ runner: address }),
      Effect.forkScoped,
    )
    yield* Effect.zipRight(retention, fold).pipe(Effect.delay(RETENTION_EVERY), Effect.forever, Effect.forkScoped)
  }),
)
