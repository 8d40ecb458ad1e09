import { Entity } from "@effect/cluster"
import { SqlClient } from "@effect/sql"
import { Clock, Duration, Effect, FiberHandle, Layer, Schedule } from "effect"
import { publicFailureMessage, Supervision } from "../src/Cluster/Supervision.ts"
import { toLeaseExpiry } from "../src/Domain/Primitives.ts"
import { BackstopAt, QuoteIdentityLease, type Renew } from "../src/QuoteIdentities/Lease.ts"
import { runRenewal } from "../src/QuoteIdentities/Renewal.ts"
import { expireLease } from "../src/QuoteIdentities/Repo.ts"

const KIND = "quote-identity-lease"
/** An entity without messages stops after this: longer than the longest lease (120 s), so a timer always fires. */
export const LEASE_MAX_IDLE = Duration.minutes(3)
/** Leases further away than this are not timed: a browser identity's lease is the far future. */
const TIMED_WITHIN_MS = Duration.toMillis(Duration.days(1))
/** Between failed expiry attempts (the database did not answer): 0.2 s doubling, at most 5 s. */
const RETRY = Schedule.exponential("200 millis").pipe(Schedule.union(Schedule.spaced("5 seconds")))

/**
 * The lease of one quote identity (protocol: src/QuoteIdentities/Lease.ts; DESIGN §4). The database is
 * the truth; the entity only keeps the timer and which generation's backstop it wrote.
 *
 * - `Renew` runs the renewal's one statement (renewLease) and answers it. The lease then ends, unless renewed
 *   again, `remaining_ms` later in database time: the entity sleeps that long in memory (one timer; a renewal
 *   moves its deadline) and runs the expiry: one guarded UPDATE and its journal row per
 *   generation (expireLease), on the runner that hosts the identity.
 * - When a generation starts (first renewal this instance sees of it), one persisted `Backstop` is written for
 *   the expiry, keyed by the generation (written again by a new instance, it is the same row). If the runner
 *   dies, the shard's next owner delivers it when due; it expires the lease, or finds it renewed and re-arms
 *   itself (keyed generation@expiry) and the timer. Renewals never write a message: one row per generation and
 *   at most one per lease period while the backstop finds the lease renewed.
 * - Idle time (LEASE_MAX_IDLE) is longer than the longest lease, so the timer of the last renewal fires.
 */
const QuoteIdentityLeaseEntityLive = QuoteIdentityLease.toLayer(
  Effect.gen(function* () {
    const { entityId: id } = yield* Entity.CurrentAddress
    const runnerAddress = yield* Entity.CurrentRunnerAddress
    const runner = `${runnerAddress.host}:${runnerAddress.port}`
    const self = (yield* QuoteIdentityLease.client)(id)
    const timer = yield* FiberHandle.make()
    const sql = yield* SqlClient.SqlClient
    /** The generation whose backstop this instance wrote (or found written). */
    let backstopOf: string | null = null

    // Every line names the identity and the runner (as keyed actors' do); /health counts the running instances.
    const annotate = Effect.annotateLogs({ actor: KIND, key: id, runner })
    const board = yield* Supervision
    yield* board.instances(KIND, 1)
    yield* Effect.addFinalizer(() => board.instances(KIND, -1))

    /** One expiry attempt; the transaction is never cut by a renewal's new timer (it waits for it). */
    const expireOnce = Effect.uninterruptible(expireLease({ id, runner })).pipe(
      Effect.provideService(SqlClient.SqlClient, sql),
      Effect.tap((outcome) =>
        outcome._tag === "Expired"
          ? Effect.logInfo("quote identity lease expired").pipe(Effect.annotateLogs({ generation: outcome.generation }))
          : Effect.void,
      ),
    )

    /**
     * The in-memory timer. `deadline` is when the lease ends by the last answer this instance saw (this runner's
     * clock, ms); one timer fiber sleeps towards it and, woken, sleeps again if a renewal moved it later. A renewal
     * therefore only moves the number (no fiber per renewal); one that brings the end nearer (a shorter ttl)
     * restarts the timer. At the end: expire; a lease found still live (renewed elsewhere) is slept again.
     */
    let deadline = 0
    /** What the timer fiber sleeps until; null while it is not sleeping (expiring, or not running). */
    let sleepingUntil: number | null = null
    const expireWhenDue: Effect.Effect<void> = Effect.gen(function* () {
      for (;;) {
        const now = yield* Clock.currentTimeMillis
        if (deadline > now) {
          sleepingUntil = deadline
          yield* Effect.sleep(Duration.millis(deadline - now)).pipe(
            Effect.ensuring(Effect.sync(() => (sleepingUntil = null))),
          )
          continue
        }
        const outcome = yield* expireOnce.pipe(
          Effect.tapErrorCause((cause) =>
            Effect.logWarning("lease expiry failed; retrying", cause).pipe(
              Effect.zipRight(Clock.currentTimeMillis),
              Effect.flatMap((at) => board.entityFailed(KIND, publicFailureMessage(cause), at)),
            ),
          ),
          Effect.retry(RETRY),
          Effect.orDie,
        )
        if (outcome._tag !== "Live") return
        deadline = (yield* Clock.currentTimeMillis) + Math.max(0, outcome.remaining_ms)
      }
    }).pipe(annotate)
    const arm = (ms: number) =>
      Effect.flatMap(Clock.currentTimeMillis, (now) => {
        deadline = now + Math.max(0, ms)
        return sleepingUntil !== null && deadline >= sleepingUntil ? Effect.void : FiberHandle.run(timer, expireWhenDue)
      })

    /** Writes the persisted backstop, due in `ms` (`key` de-duplicates it). */
    const writeBackstop = (key: string, generation: string, ms: number) =>
      Effect.gen(function* () {
        const at = (yield* Clock.currentTimeMillis) + Math.max(0, ms)
        yield* self.Backstop(new BackstopAt({ key, generation, at }), { discard: true })
        backstopOf = generation
      })

    /** The renewal's one statement and its answer (runRenewal: resolve, charge and renew at once). */
    const renewal = (payload: typeof Renew.payloadSchema.Type) =>
      runRenewal(id, payload).pipe(Effect.provideService(SqlClient.SqlClient, sql))

    return QuoteIdentityLease.of({
      Renew: ({ payload }) =>
        Effect.gen(function* () {
          const renewed = yield* renewal(payload)
          if (renewed._tag === "BudgetSpent") return renewed
          if (renewed.remaining_ms < TIMED_WITHIN_MS) {
            yield* arm(renewed.remaining_ms)
            // A failure is logged and not the renewal's: the timer runs, and the next renewal writes it again.
            if (backstopOf !== renewed.generation) {
              yield* writeBackstop(renewed.generation, renewed.generation, renewed.remaining_ms).pipe(
                Effect.catchAllCause((cause) => Effect.logWarning("lease backstop not written", cause)),
                annotate,
              )
            }
          }
          return {
            _tag: "Renewed" as const,
            generation: renewed.generation,
            expires_at: toLeaseExpiry(renewed.lease_expires_at),
          }
        }),
      Backstop: ({ payload }) =>
        Effect.gen(function* () {
          const outcome = yield* expireOnce.pipe(Effect.orDie)
          if (outcome._tag !== "Live") return
          // Renewed since: re-arm this generation's backstop at the current expiry, or make sure a newer
          // generation has its own; and time the expiry in memory here (this may be a new instance).
          // A failed write dies: this message is then delivered again (at least once) and writes it then.
          const { generation, remaining_ms } = outcome
          if (generation === payload.generation) {
            yield* writeBackstop(`${generation}@${outcome.expires_at.getTime()}`, generation, remaining_ms)
          } else if (backstopOf !== generation) {
            yield* writeBackstop(generation, generation, remaining_ms)
          }
          yield* arm(remaining_ms)
        }).pipe(Effect.orDie, annotate),
    })
  }),
  { maxIdleTime: LEASE_MAX_IDLE },
)

/**
 * At each runner's start: every credential identity whose current generation's expiry is not journaled yet gets
 * that generation's backstop (the same row when it exists: nothing new), so leases renewed before the lease was an
 * entity, or whose runner died between the renewal and its backstop, still expire. Idempotent, on every runner.
 */
const adoptLeases = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const lease = yield* QuoteIdentityLease.client
  const rows = yield* sql<{ id: string; generation: string; remaining_ms: number }>`
    select id, generation::text as generation,
           greatest(0, extract(epoch from lease_expires_at - now()) * 1000)::float8 as remaining_ms
    from quote_identities
    where kind = 'credential' and revoked_at is null and generation > 0
      and lease_expiry_journaled_generation is distinct from generation`
  const now = yield* Clock.currentTimeMillis
  yield* Effect.forEach(
    rows,
    (row) =>
      lease(row.id).Backstop(
        new BackstopAt({ key: row.generation, generation: row.generation, at: now + row.remaining_ms }),
        { discard: true },
      ),
    { concurrency: 8, discard: true },
  )
  if (rows.length > 0) yield* Effect.logInfo(`quote identity leases adopted: ${rows.length}`)
}).pipe(
  Effect.tapErrorCause((cause) => Effect.logWarning("lease adoption failed; retrying", cause)),
  Effect.retry(RETRY),
  Effect.annotateLogs({ actor: KIND }),
)

/** The lease entity, registered on this runner, and the adoption of leases at start (in the background). */
export const QuoteIdentityLeaseLive = Layer.merge(
  QuoteIdentityLeaseEntityLive,
  Layer.scopedDiscard(Effect.forkScoped(adoptLeases)),
)
