import { Singleton } from "@effect/cluster"
import {
  Cause,
  Clock,
  Context,
  Data,
  Duration,
  Effect,
  HashSet,
  Layer,
  Queue,
  Random,
  Ref,
  Schedule,
  type Scope,
} from "effect"
import { publicDescription } from "../Chain/Failure.ts"
import { renderCause, scrubUrls } from "../Observability/Log.ts"

/**
 * Supervision of this runner's singletons (DESIGN §4 "Decisions for the actors").
 *
 * @effect/cluster 0.60.2 runs a singleton's body once: if it fails or dies the fiber ends and the
 * library starts it again only on the next shard change (Sharding.ts `registerSingleton` wraps it in
 * `orDie`), so a failed watcher would sit idle while counted as running. `supervised` restarts the
 * body itself with capped, jittered exponential backoff and records what happened in `Supervision`,
 * which the runner's status row (src/Cluster/RunnerStatus.ts) publishes and /health shows.
 */

/** What one runner knows of one singleton it hosts (registered here, maybe never started here). */
export interface ActorRecord {
  /** The singleton's name, e.g. `venue-watcher:hyperliquid`. */
  readonly name: string
  /** The name up to its first `:`: one kind per actor loop, e.g. `venue-watcher`. */
  readonly kind: string
  /** Its body is running on this runner now. */
  readonly active: boolean
  /** Times this runner started the body again after a failure (since the process started). */
  readonly restarts: number
  /** The last failure on this runner: one line without URLs' secrets, and when (epoch ms). */
  readonly lastFailure: { readonly message: string; readonly at: number } | null
  /**
   * Set for an entity kind (actors/Keyed.ts): how many of its entities run here now. A kind's record
   * stands for all its entities (one per key), so `active` means "at least one", and the kind is
   * never listed among the runner's singletons.
   */
  readonly instances?: number
}

export const kindOf = (name: string): string => name.split(":")[0] ?? name

export class Supervision extends Context.Tag("Supervision")<
  Supervision,
  {
    readonly register: (name: string) => Effect.Effect<void>
    readonly started: (name: string, restart: boolean) => Effect.Effect<void>
    readonly stopped: (name: string) => Effect.Effect<void>
    readonly failed: (name: string, message: string, at: number) => Effect.Effect<void>
    /** An entity of kind `kind` started (+1) or stopped (-1) here. */
    readonly instances: (kind: string, delta: 1 | -1) => Effect.Effect<void>
    /** A pass of an entity of kind `kind` failed: counted as a restart of the kind, with its message. */
    readonly entityFailed: (kind: string, message: string, at: number) => Effect.Effect<void>
    readonly snapshot: Effect.Effect<ReadonlyArray<ActorRecord>>
    /** Waits until a record changed (a start, stop or failure), so a status row can follow at once. */
    readonly changed: Effect.Effect<void>
  }
>() {
  static readonly Live = Layer.effect(
    Supervision,
    Effect.gen(function* () {
      const records = yield* Ref.make(new Map<string, ActorRecord>())
      const wake = yield* Queue.sliding<void>(1)
      const update = (name: string, f: (r: ActorRecord) => ActorRecord) =>
        Ref.update(records, (m) => {
          const next = new Map(m)
          const current = m.get(name) ?? { name, kind: kindOf(name), active: false, restarts: 0, lastFailure: null }
          next.set(name, f(current))
          return next
        }).pipe(Effect.zipRight(Queue.offer(wake, undefined)), Effect.asVoid)
      return Supervision.of({
        register: (name) => update(name, (r) => r),
        started: (name, restart) =>
          update(name, (r) => ({ ...r, active: true, restarts: r.restarts + (restart ? 1 : 0) })),
        stopped: (name) => update(name, (r) => ({ ...r, active: false })),
        failed: (name, message, at) => update(name, (r) => ({ ...r, active: false, lastFailure: { message, at } })),
        instances: (kind, delta) =>
          update(kind, (r) => {
            const instances = Math.max(0, (r.instances ?? 0) + delta)
            return { ...r, instances, active: instances > 0 }
          }),
        entityFailed: (kind, message, at) =>
          update(kind, (r) => ({
            ...r,
            instances: r.instances ?? 0,
            restarts: r.restarts + 1,
            lastFailure: { message, at },
          })),
        snapshot: Effect.map(Ref.get(records), (m) => [...m.values()].sort((a, b) => a.name.localeCompare(b.name))),
        changed: Queue.take(wake),
      })
    }),
  )
}

/**
 * One line for logs and /health (which is public): URLs lose their credentials, path and query
 * (RPC endpoints carry API keys there), and the line is bounded.
 */
export const publicFailureMessage = (cause: Cause.Cause<unknown>): string => publicDescription(cause)

/** The body ended without failing; a singleton loop never should, so it is restarted like a failure. */
class BodyReturned extends Data.TaggedError("BodyReturned")<{ readonly message: string }> {}

/** A failed run of a body, with how long it ran (a long healthy run resets the backoff). */
class Attempt extends Data.Class<{ readonly ranMs: number }> {}

/** After a run this long, the next failure is treated as a first one again. */
const HEALTHY_RUN_MS = 60_000

/**
 * Restart delays: 500 ms doubling, capped at 30 s, each ±20 % (jitter: runners restarting the same
 * kind do not retry in lockstep), back to 500 ms after a run of a minute or more. Delays are
 * Effect sleeps (Clock), so TestClock drives them.
 */
export const restartBackoff = Schedule.exponential("500 millis").pipe(
  Schedule.union(Schedule.spaced("30 seconds")),
  Schedule.jittered,
  Schedule.intersect(Schedule.identity<Attempt>()),
  Schedule.resetWhen(([, attempt]) => attempt.ranMs >= HEALTHY_RUN_MS),
)

/**
 * `restartBackoff`'s n-th delay (n ≥ 1: 500 ms doubling, capped at 30 s, ±20 %) for a loop that counts its
 * failures itself instead of being retried by the schedule (actors/Keyed.ts: a failed pass of a keyed entity).
 */
export const restartDelay = (n: number) =>
  Effect.map(Random.nextRange(0.8, 1.2), (jitter) => Duration.millis(Math.min(500 * 2 ** (n - 1), 30_000) * jitter))

/**
 * Runs `body` until interrupted, restarting it (with `restartBackoff`) whenever it fails, dies or
 * returns. Each run has its own scope, so its resources (LISTEN connections, forked fibers) are
 * released before the next. Interruption (the shard moved, the runner stops) ends it quietly.
 */
export const supervised = <E, R>(
  name: string,
  body: Effect.Effect<void, E, R>,
): Effect.Effect<never, never, Supervision | Exclude<R, Scope.Scope>> =>
  Effect.gen(function* () {
    const board = yield* Supervision
    let runs = 0
    const once = Effect.gen(function* () {
      const startedAt = yield* Clock.currentTimeMillis
      yield* board.started(name, runs++ > 0)
      const exit = yield* Effect.scoped(body).pipe(
        Effect.zipRight(Effect.fail(new BodyReturned({ message: `${name} returned` }))),
        Effect.ensuring(board.stopped(name)),
        Effect.exit,
      )
      // Interrupted from outside: the singleton is being stopped (shard moved, runner stopping), not
      // failing. A body that ends by interrupting itself is restarted like any other end.
      if (HashSet.size((yield* Effect.descriptor).interruptors) > 0) return yield* Effect.interrupt
      const cause = exit._tag === "Failure" ? exit.cause : Cause.empty
      const now = yield* Clock.currentTimeMillis
      const message = publicFailureMessage(cause)
      yield* board.failed(name, message, now)
      yield* Effect.logError("actor failed; restarting with backoff", {
        actor: name,
        failure: message,
        next_restart: runs,
        // Every error of the cause and what each wraps, masked and with URLs scrubbed like the message; no stack.
        cause: scrubUrls(renderCause(cause)),
      })
      return yield* Effect.fail(new Attempt({ ranMs: now - startedAt }))
    })
    return yield* once.pipe(
      Effect.retry(restartBackoff),
      // The schedule never ends, so retry only stops by interruption.
      Effect.zipRight(Effect.never),
      Effect.orDie,
    )
  }).pipe(Effect.annotateLogs({ actor: name }))

/**
 * A cluster singleton whose body is `supervised`. The only place that registers singletons (a
 * hygiene test keeps it so): each is listed in this runner's Supervision records from the start.
 */
export const supervisedSingleton = <E, R>(name: string, body: Effect.Effect<void, E, R>) =>
  Layer.merge(
    Layer.effectDiscard(Effect.flatMap(Supervision, (board) => board.register(name))),
    Singleton.make(name, supervised(name, body)),
  )
