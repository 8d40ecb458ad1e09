import { Config, Context, Effect, Layer, Option, Ref } from "effect"

/**
 * Named crash points between a durable write and an external effect (BUGGIFY-style). In production
 * every point is a no-op. The crash harness arms one point in a child process through the
 * environment: SETTLEMENT_CRASH_POINT=<name> and SETTLEMENT_CRASH_HIT=<n> (default 1) kill the
 * process with SIGKILL (no finalizer runs) the n-th time that point is reached.
 */
export const FAULT_POINTS = [
  /** The relayer signed a transaction; nothing is persisted yet. */
  "relayer.after-sign-before-persist",
  /** Nonce, raw bytes and hash committed; not broadcast yet. */
  "relayer.after-persist-before-broadcast",
  /** Broadcast; the broadcast is not recorded yet. */
  "relayer.after-broadcast-before-record",
  /** A status transition (and its journal row) committed; the outcome is not published to waiters yet. */
  "relayer.after-commit-before-publish",
  /** The watcher committed an ingest page; the status row is not updated yet. */
  "watcher.after-ingest-before-status",
  /** Settlement committed a fill's call key (and state); the call is not submitted to the relayer yet. */
  "settlement.after-commit-before-submit",
] as const
export type FaultPointName = (typeof FAULT_POINTS)[number]

export class FaultPoint extends Context.Tag("FaultPoint")<
  FaultPoint,
  { readonly hit: (name: FaultPointName) => Effect.Effect<void> }
>() {
  static readonly Noop = Layer.succeed(FaultPoint, { hit: () => Effect.void })

  /** Kills this process at the `hit`-th time `point` is reached. */
  static readonly armed = (point: string, hit: number) =>
    Layer.effect(
      FaultPoint,
      Effect.gen(function* () {
        const count = yield* Ref.make(0)
        return {
          hit: (name: FaultPointName) =>
            name !== point
              ? Effect.void
              : Ref.updateAndGet(count, (n) => n + 1).pipe(
                  Effect.flatMap((n) =>
                    n === hit
                      ? Effect.sync(() => {
                          process.stderr.write(`fault point ${name} hit ${n}: SIGKILL\n`)
                          process.kill(process.pid, "SIGKILL")
                        }).pipe(Effect.zipRight(Effect.never))
                      : Effect.void,
                  ),
                ),
        }
      }),
    )

  /** Armed from the environment when SETTLEMENT_CRASH_POINT is set, otherwise a no-op. */
  static readonly fromEnv = Layer.unwrapEffect(
    Effect.gen(function* () {
      const point = yield* Config.option(Config.string("SETTLEMENT_CRASH_POINT"))
      const hit = yield* Config.integer("SETTLEMENT_CRASH_HIT").pipe(Config.withDefault(1))
      return Option.isSome(point) ? FaultPoint.armed(point.value, hit) : FaultPoint.Noop
    }).pipe(Effect.orDie),
  )
}
