/**
 * Settlement (DESIGN §10): what the rest of the service asks of a take's settlement. Settlement itself runs in its
 * entity, one per take (protocol src/Settlement/Entity.ts, behaviour actors/Settlement.ts and
 * actors/SettlementV2.ts, rows src/Settlement/Repo.ts and RepoV2.ts); other concepts only
 * - wake a take's entity after a commit that gives it work (a signed take, a payment authorisation, a cancel),
 * - read a maker identity's fade record (routing, the identity's view),
 * - read a taker's locks left unpaid (a new take is refused over the limit),
 * - wait for the escrow index's next page of a venue (a payment authorisation held until the locks are final here).
 * The repository functions stay exported for the actors, which call them inside their own transactions.
 */
import { Sharding } from "@effect/cluster"
import { SqlClient } from "@effect/sql"
import { PgClient } from "@effect/sql-pg"
import { Deferred, Effect, Exit, FiberId, Layer, Option, Schedule, Stream } from "effect"
import { wakeIfClustered } from "./Cluster/KeyedWakes.ts"
import { AppConfig } from "./Config.ts"
import { Settlement as SettlementEntity } from "./Settlement/Entity.ts"
import { identityFades } from "./Settlement/FadeRecord.ts"
import { ESCROW_INDEXED_CHANNEL, parseEscrowIndexed } from "./Settlement/IndexedWake.ts"
import { takerUnpaidLocks } from "./Settlement/RepoV2.ts"
import { SqlTest } from "./Sql/TestDatabase.ts"

export class Settlement extends Effect.Service<Settlement>()("Settlement", {
  scoped: Effect.gen(function* () {
    const { deployment } = yield* AppConfig
    const sql = yield* SqlClient.SqlClient
    const pg = yield* PgClient.PgClient
    const sharding = yield* Effect.serviceOption(Sharding.Sharding)

    // One latch per venue, opened and dropped by the venue's next escrow_indexed notification (any runner's watcher
    // sends it through PostgreSQL; it is delivered when the page commits). A lost connection re-listens; a notification
    // missed meanwhile costs its waiters their bound, never a wrong answer (they re-read the rows).
    const latches = new Map<string, Deferred.Deferred<void>>()
    yield* pg.listen(ESCROW_INDEXED_CHANNEL).pipe(
      Stream.runForEach((payload) =>
        Effect.sync(() => {
          const venue = parseEscrowIndexed(payload).venue
          const latch = latches.get(venue)
          latches.delete(venue)
          if (latch !== undefined) Deferred.unsafeDone(latch, Exit.void)
        }),
      ),
      Effect.retry(Schedule.spaced("1 second")),
      Effect.forkScoped,
    )

    /**
     * Taken, an effect that completes at the venue's next committed escrow index page (v1 or v2, any runner). Take
     * it before reading rows a page may change and await it after the read: a page committed in between completes
     * it, so none is missed. Never fails; the caller bounds the wait.
     */
    const nextIndexed = (venue: string) =>
      Effect.sync(() => {
        let latch = latches.get(venue)
        if (latch === undefined) {
          latch = Deferred.unsafeMake<void>(FiberId.none)
          latches.set(venue, latch)
        }
        return Deferred.await(latch)
      })

    /**
     * Wakes the take's settlement entity, after the caller's transaction committed. Never fails and does not wait
     * (a lost wake costs the entity's cadence; its backstop tick and start-up adoption cover the rows). Without a
     * cluster where this service was built (tests of the HTTP stack alone) it does nothing.
     */
    const wake = Effect.fn("Settlement.wake")(function* (takeId: string) {
      const send = wakeIfClustered(SettlementEntity, takeId)
      yield* Option.isSome(sharding) ? Effect.provideService(send, Sharding.Sharding, sharding.value) : send
    })

    /**
     * A maker identity's fade record in its current window (chances, fades, the flag); null for an unknown
     * identity. `identityId` is a quote identity's UUID.
     */
    const identityFadesOf = Effect.fn("Settlement.identityFades")(function* (identityId: string) {
      return yield* identityFades(identityId).pipe(Effect.provideService(SqlClient.SqlClient, sql), Effect.orDie)
    })

    /** A taker account's locks left unpaid, the configured limit (settlement.max_unpaid_locks), and whether over it. */
    const takerUnpaidLocksOf = Effect.fn("Settlement.takerUnpaidLocks")(function* (master: string) {
      return yield* takerUnpaidLocks(master, deployment.settlement.max_unpaid_locks).pipe(
        Effect.provideService(SqlClient.SqlClient, sql),
        Effect.orDie,
      )
    })

    return { wake, nextIndexed, identityFades: identityFadesOf, takerUnpaidLocks: takerUnpaidLocksOf } as const
  }),
}) {
  /** The service on a throw-away database (SqlTest); the test gives the AppConfig (and a cluster, to see wakes). */
  static readonly Test = Settlement.Default.pipe(Layer.provideMerge(SqlTest))
}
