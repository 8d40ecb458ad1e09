import { Config, Context, Effect, Layer, Option, Ref } from "effect"

/**
 * Named crash points between a durable write and an external effect (BUGGIFY-style). In production
 * every point is a no-op. The crash harness arms one point in a child process through the
 * environment: SETTLEMENT_CRASH_POINT=<name> and SETTLEMENT_CRASH_HIT=<n> (default 1) kill the
 * process with SIGKILL (no finalizer runs) the n-th time that point is reached. The supervision
 * test instead makes a point die: SETTLEMENT_DEFECT_POINT=<name> and SETTLEMENT_DEFECT_TIMES=<n>
 * (default 1) raise a defect the first n times it is reached, then let it pass.
 */
export const FAULT_POINTS = [
  /** The relayer signed a transaction; nothing is persisted yet. */
  "relayer.after-sign-before-persist",
  /** Nonce, raw bytes and hash committed; not broadcast yet. */
  "relayer.after-persist-before-broadcast",
  /** Broadcast; the broadcast is not recorded yet. */
  "relayer.after-broadcast-before-record",
  /** A follow pass read the heads; it has not read the signer's nonce counts yet (a slow pass). */
  "relayer.follow-after-heads",
  /** A status transition (and its journal row) committed; the outcome is not published to waiters yet. */
  "relayer.after-commit-before-publish",
  /** The watcher committed an ingest page; the status row is not updated yet. */
  "watcher.after-ingest-before-status",
  /** Settlement committed a fill's call key (and state); the call is not submitted to the relayer yet. */
  "settlement.after-commit-before-submit",
  /** Before each watcher poll, outside the poll's own retry: a defect here ends the watcher's body. */
  "watcher.before-poll",
] as const
export type FaultPointName = (typeof FAULT_POINTS)[number]

export class FaultPoint extends Context.Tag("FaultPoint")<
  FaultPoint,
  { readonly hit: (name: FaultPointName) => Effect.Effect<void> }
>() {
  static readonly Noop = Layer.succeed(FaultPoint, { hit: () => Effect.void })

  /** Kills this process at the `hit`-th time `point` is reached. */
  static readonly armed = (point: string, hit: number) =>
    countingAt(point, (n, name) =>
      n === hit
        ? Effect.sync(() => {
            process.stderr.write(`fault point ${name} hit ${n}: SIGKILL\n`)
            process.kill(process.pid, "SIGKILL")
          }).pipe(Effect.zipRight(Effect.never))
        : Effect.void,
    )

  /** Dies (a defect, as a bug would) the first `times` times `point` is reached; passes after. */
  static readonly defective = (point: string, times: number) =>
    countingAt(point, (n, name) =>
      n <= times ? Effect.die(new Error(`injected defect ${n} of ${times} at ${name}`)) : Effect.void,
    )

  /** Armed from the environment when SETTLEMENT_CRASH_POINT or SETTLEMENT_DEFECT_POINT is set, otherwise a no-op. */
  static readonly fromEnv = Layer.unwrapEffect(
    Effect.gen(function* () {
      const point = yield* Config.option(Config.string("SETTLEMENT_CRASH_POINT"))
      const hit = yield* Config.integer("SETTLEMENT_CRASH_HIT").pipe(Config.withDefault(1))
      const defect = yield* Config.option(Config.string("SETTLEMENT_DEFECT_POINT"))
      const times = yield* Config.integer("SETTLEMENT_DEFECT_TIMES").pipe(Config.withDefault(1))
      if (Option.isSome(point)) return FaultPoint.armed(point.value, hit)
      return Option.isSome(defect) ? FaultPoint.defective(defect.value, times) : FaultPoint.Noop
    }).pipe(Effect.orDie),
  )
}

/** A FaultPoint that counts the times `point` is reached and runs `onHit` with the count (from 1). */
const countingAt = (point: string, onHit: (n: number, name: FaultPointName) => Effect.Effect<void>) =>
  Layer.effect(
    FaultPoint,
    Effect.map(Ref.make(0), (count) => ({
      hit: (name: FaultPointName) =>
        name !== point
          ? Effect.void
          : Effect.flatMap(
              Ref.updateAndGet(count, (n) => n + 1),
              (n) => onHit(n, name),
            ),
    })),
  )
