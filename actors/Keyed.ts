/**
 * The one loop every keyed actor runs (DESIGN §4 "Decisions for the actors"): an @effect/cluster entity per
 * key (a take, an (owner, chain) close queue, a venue account, …) that drives that key's rows to their end.
 *
 * - The database is the truth. `step(id)` is one pass over this key's rows (guarded UPDATEs, each with its
 *   journal row, as the sweeps did); it answers whether anything is still pending. The entity keeps no state
 *   it cannot rebuild: a new instance (after an idle stop, a crash, a shard move) starts with a pass.
 * - Cadence in memory: while work is pending the loop looks again after the delay `step` asked for, or at
 *   once when a volatile `Wake` arrives (a relayer outcome, a watcher's new block, the entity's own intents).
 * - Crash backstop: while work is pending one persisted `Tick` with a DeliverAt at most `BACKSTOP` ahead is
 *   kept in `cluster_messages`. A runner that dies leaves it there; the shard's next owner delivers it when
 *   due, which starts the entity and its loop there. The tick is acknowledged only after a pass that armed the
 *   next one (when still pending), so an acknowledged tick never leaves pending work without a successor.
 *   Ticks also keep a pending entity from idling out (one message at least every BACKSTOP < maxIdleTime).
 * - A failed pass is logged with the key, counted as a restart of the kind in Supervision (/health), and
 *   retried with the shared backoff; the entity itself stays up.
 * Persisted intents (new economic intents, keyed by client id) are each concept's own RPCs: their handlers
 * write rows in one transaction, then `wake` the loop, and reply.
 */
import { Entity, EntityId, Sharding } from "@effect/cluster"
import type { Rpc } from "@effect/rpc"
import { Cause, Clock, Duration, Effect, Layer, Option, Queue } from "effect"
import { keyedClient, TickAt, wakeKeyed } from "../src/Cluster/Keyed.ts"
import { publicFailureMessage, restartDelay, Supervision } from "../src/Cluster/Supervision.ts"

/** Longest a pending key waits for its backstop tick (plus the shard move after a SIGKILL, ~4–6 s). */
export const BACKSTOP = Duration.seconds(5)
/** An idle entity (nothing pending, no message) stops after this; a new message or tick starts it again. */
export const KEYED_MAX_IDLE = Duration.minutes(1)

/** Options every keyed entity layer takes: ticks and intents may arrive while a pass runs. */
export const keyedEntityOptions = { maxIdleTime: KEYED_MAX_IDLE, concurrency: "unbounded" } as const

/** What one pass answers: nothing pending for this key, or look again within this long. */
export type Next = Option.Option<Duration.Duration>
export const idle: Next = Option.none()
export const again = (within: Duration.DurationInput): Next => Option.some(Duration.decode(within))

export interface Driver {
  /** This entity's key. */
  readonly id: string
  /** Ask the loop for a pass soon (after an intent's transaction committed). */
  readonly wake: Effect.Effect<void>
  /** The `Wake` handler. */
  readonly onWake: () => Effect.Effect<void>
  /** The `Tick` handler: one pass (arming the next tick if still pending), then the acknowledgement. */
  readonly onTick: () => Effect.Effect<void>
}

/**
 * Starts the loop of this entity instance (in the entity's scope: it ends when the entity stops) and
 * returns its handlers. Call it inside the entity's `toLayer` build: `kind` names it in Supervision and in
 * logs, and must equal the entity type so /health joins its mailbox depth.
 */
export const keyedDriver = <T extends string, Rpcs extends Rpc.Any, E, R>(
  entity: Entity.Entity<T, Rpcs>,
  step: (id: string) => Effect.Effect<Next, E, R>,
) =>
  Effect.gen(function* () {
    const kind: string = entity.type
    const id = (yield* Entity.CurrentAddress).entityId
    const board = yield* Supervision
    const self = (yield* keyedClient(entity))(id)
    const signal = yield* Queue.sliding<void>(1)
    const permit = yield* Effect.makeSemaphore(1)
    /** The DeliverAt of the tick this instance last stored (undefined: none known pending). */
    let armedAt: number | undefined
    let failures = 0

    const arm = Effect.gen(function* () {
      const now = yield* Clock.currentTimeMillis
      if (armedAt !== undefined && armedAt > now) return
      const every = Duration.toMillis(BACKSTOP)
      const at = (Math.floor(now / every) + 1) * every
      yield* self.Tick(new TickAt({ at }), { discard: true })
      armedAt = at
    })

    // The step's services, captured once so the handlers need none.
    const context = yield* Effect.context<R>()

    /** One pass; a failure counts as pending (looked at again after the backoff's next delay). */
    const pass: Effect.Effect<Duration.Duration | undefined> = permit.withPermits(1)(
      step(id).pipe(
        Effect.map((next) => {
          failures = 0
          return Option.getOrUndefined(next)
        }),
        Effect.catchAllCause((cause) =>
          Effect.gen(function* () {
            if (Cause.isInterruptedOnly(cause)) return yield* Effect.interrupt
            const now = yield* Clock.currentTimeMillis
            const message = publicFailureMessage(cause)
            yield* board.entityFailed(kind, message, now)
            yield* Effect.logError("actor pass failed; retrying with backoff", { failure: message })
            failures += 1
            return yield* restartDelay(failures)
          }),
        ),
        Effect.tap((pending) =>
          pending === undefined
            ? Effect.void
            : arm.pipe(
                Effect.catchAllCause((cause) =>
                  Effect.logWarning("backstop tick not stored; the next pass tries again", {
                    failure: publicFailureMessage(cause),
                  }),
                ),
              ),
        ),
        Effect.provide(context),
      ),
    )

    const loop = Effect.gen(function* () {
      for (;;) {
        const pending = yield* pass
        const woken = Queue.take(signal)
        yield* pending === undefined ? woken : woken.pipe(Effect.timeout(pending), Effect.ignore)
      }
    })

    // Which runner handled which key: every line of this entity names both (operators, the workload test).
    const where = yield* Entity.CurrentRunnerAddress
    const annotations = { actor: kind, key: id, runner: `${where.host}:${where.port}` }
    yield* board.instances(kind, 1)
    yield* Effect.addFinalizer(() =>
      board
        .instances(kind, -1)
        .pipe(Effect.zipRight(Effect.logDebug("actor stopped")), Effect.annotateLogs(annotations)),
    )
    yield* Effect.logInfo("actor started").pipe(Effect.annotateLogs(annotations))
    yield* loop.pipe(Effect.annotateLogs(annotations), Effect.forkScoped)

    const wake = Queue.offer(signal, undefined).pipe(Effect.asVoid)
    return {
      id,
      wake,
      onWake: () => wake,
      onTick: () =>
        Effect.suspend(() => {
          armedAt = undefined // this one is being delivered
          return pass
        }).pipe(Effect.asVoid),
    } satisfies Driver
  })

/** How often each runner looks for keys of its shards with work pending and no entity running. */
export const ADOPT_EVERY = Duration.seconds(10)

/**
 * The safety net under the wakes: every ADOPT_EVERY each runner reads the keys with work pending
 * (`pendingKeys`, from rows) and wakes those on its own shards (a running entity takes it as one more pass). It
 * covers rows whose wake was lost (a crash between a handler's commit and its wake) and rows written
 * before this kind was keyed. Not a singleton: each runner adopts only its own shards, so no key is
 * woken twice and no election is needed. A failed read is logged and tried again next time.
 */
export const keyedAdoption = <T extends string, Rpcs extends Rpc.Any, E, R>(
  entity: Entity.Entity<T, Rpcs>,
  pendingKeys: Effect.Effect<ReadonlyArray<string>, E, R>,
  every: Duration.DurationInput = ADOPT_EVERY,
) =>
  Layer.scopedDiscard(
    Effect.gen(function* () {
      const sharding = yield* Sharding.Sharding
      const adopt = Effect.gen(function* () {
        for (const id of yield* pendingKeys) {
          if (!sharding.hasShardId(yield* entity.getShardId(EntityId.make(id)))) continue
          yield* wakeKeyed(entity, id)
        }
      }).pipe(
        Effect.catchAllCause((cause) =>
          Effect.logWarning("adoption pass failed; next pass retries", { failure: publicFailureMessage(cause) }),
        ),
        Effect.annotateLogs({ actor: entity.type }),
      )
      yield* adopt.pipe(Effect.delay(every), Effect.forever, Effect.forkScoped)
    }),
  )
