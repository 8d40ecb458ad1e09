import { Cause, Duration, Effect, Random } from "effect"
import { describeCause, publicDescription } from "../Chain/Failure.ts"

/** The longest wait after a failed pass (ms); a terminal failure (a wrong chain, a refused key) waits this at once. */
export const MAX_BACKOFF_MS = 15_000

/**
 * A chain actor's pass loop (each venue watcher's poll, each relayer's send and follow passes): run `pass`, then
 * wait as `next` says (a wake, a new head, at most a poll interval). A failed pass is handed to `onFailure` (its
 * one-line description; the watcher records it on its status row), logged once per streak and every 20th failure
 * (a dead RPC must not flood the log), and retried after `baseMs × 2^(failures−1)`, capped at MAX_BACKOFF_MS and
 * jittered ±20% so that runners do not retry in step. It ends only by interruption; a defect in `before` (outside
 * the pass's capture) ends it, for the supervisor (Supervision.ts) to restart.
 */
export const passLoop = <A, E, R, R2>(options: {
  readonly pass: Effect.Effect<A, E, R>
  readonly next: (result: A) => Effect.Effect<void, never, R2>
  /** The first retry's delay (ms), normally the loop's poll interval. */
  readonly baseMs: number
  /** A failure no retry soon can mend: wait the cap at once. */
  readonly terminal: (cause: Cause.Cause<E>) => boolean
  /** The warning's message, e.g. "relayer send pass failed". */
  readonly failureLog: string
  readonly onFailure?: (message: string) => Effect.Effect<void, never, R>
  /** Run before each pass, outside its capture (a fault point whose defect is the supervisor's). */
  readonly before?: Effect.Effect<void, never, R>
}): Effect.Effect<never, never, R | R2> =>
  Effect.gen(function* () {
    let failures = 0
    for (;;) {
      if (options.before !== undefined) yield* options.before
      const exit = yield* Effect.exit(options.pass)
      if (exit._tag === "Success") {
        failures = 0
        yield* options.next(exit.value)
        continue
      }
      if (Cause.isInterruptedOnly(exit.cause)) return yield* Effect.interrupt
      failures++
      const error = describeCause(exit.cause)
      // Public (chain_status.error is on /health): the first line, masked.
      if (options.onFailure !== undefined) yield* options.onFailure(publicDescription(exit.cause))
      if (failures === 1 || failures % 20 === 0) {
        yield* Effect.logWarning(options.failureLog).pipe(Effect.annotateLogs({ failures, error }))
      }
      const base = options.terminal(exit.cause)
        ? MAX_BACKOFF_MS
        : Math.min(MAX_BACKOFF_MS, options.baseMs * 2 ** (failures - 1))
      yield* Effect.sleep(Duration.millis(Math.round(base * (yield* Random.nextRange(0.8, 1.2)))))
    }
  })
