/**
 * The Settlement service (src/Settlement.ts) on its Test layer: a throw-away database, the development config and
 * the cluster's in-memory runner with a stand-in settlement entity that records its wakes (settlement itself is
 * driven by actors/Settlement.ts and tested in settlement*.test.ts). What other concepts ask of settlement: a maker
 * identity's fade record, a taker's unpaid locks against the configured limit, and waking a take's entity.
 */
import { Entity, Sharding, TestRunner } from "@effect/cluster"
import { SqlClient } from "@effect/sql"
import { describe, expect, layer } from "@effect/vitest"
import { Context, Effect, Layer, Option, Queue } from "effect"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { AppConfig } from "../../src/Config.ts"
import { Settlement as SettlementEntity } from "../../src/Settlement/Entity.ts"
import { Settlement } from "../../src/Settlement.ts"
import { insertRow } from "../support/Rows.ts"
import { testAppConfig } from "../support/TestConfig.ts"

/** The take ids the stand-in settlement entity was woken for. */
class Woken extends Context.Tag("test/SettlementWoken")<Woken, Queue.Queue<string>>() {}

const RecordingSettlement = SettlementEntity.toLayer(
  Effect.gen(function* () {
    const { entityId } = yield* Entity.CurrentAddress
    const woken = yield* Woken
    return { Wake: () => Queue.offer(woken, entityId).pipe(Effect.asVoid), Tick: () => Effect.void }
  }),
)

const Live = Layer.unwrapEffect(
  Effect.map(Queue.unbounded<string>(), (woken) =>
    Settlement.Test.pipe(
      Layer.provideMerge(RecordingSettlement),
      Layer.provideMerge(TestRunner.layer),
      Layer.provideMerge(testAppConfig()),
      Layer.provideMerge(Layer.succeed(Woken, woken)),
    ),
  ),
)

const fresh = () => privateKeyToAccount(generatePrivateKey()).address

/** A mark as settlement writes it: a plain insert, so its triggers run (insertRow turns them off). */
const mark = (kind: "chance" | "fade" | "unpaid", fill: string, identityId: string, master: string, at?: Date) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    Effect.asVoid(sql`
      insert into settlement_v2_marks (fill_id, kind, identity_id, master, created_at)
      values (${fill}, ${kind}, ${identityId}, ${master}, coalesce(${at ?? null}::timestamptz, now()))`),
  )

describe("Settlement service", () => {
  layer(Live, { timeout: 120_000 })((it) => {
    it.effect("identityFades: none for an unknown identity; its window's chances and fades, and the flag", () =>
      Effect.gen(function* () {
        const settlement = yield* Settlement
        const sql = yield* SqlClient.SqlClient
        expect(yield* settlement.identityFades(crypto.randomUUID())).toBeNull()

        const id = crypto.randomUUID()
        const master = fresh().toLowerCase()
        yield* insertRow("accounts", { master, access: "granted", created_at: new Date() })
        yield* insertRow("quote_identities", {
          id,
          master,
          signer: fresh().toLowerCase(),
          kind: "credential",
          lease_expires_at: new Date(),
          created_at: new Date(),
          fade_window_started_at: new Date(Date.now() - 3_600_000),
        })
        const taker = fresh().toLowerCase()
        // Before the window (the owner resumed since): a chance and its fade, not counted.
        const old = crypto.randomUUID()
        yield* mark("chance", old, id, taker, new Date(Date.now() - 7_200_000))
        yield* mark("fade", old, id, taker)
        // In the window: three chances, one of them faded; another identity's marks are not its own.
        const fills = [crypto.randomUUID(), crypto.randomUUID(), crypto.randomUUID()]
        for (const fill of fills) yield* mark("chance", fill, id, taker)
        yield* mark("fade", fills[0]!, id, taker)
        const elsewhere = crypto.randomUUID()
        yield* mark("chance", elsewhere, crypto.randomUUID(), taker)
        yield* mark("fade", elsewhere, crypto.randomUUID(), taker)
        expect(yield* settlement.identityFades(id)).toMatchObject({
          chances: 3,
          fades: 1,
          flagged: false,
          flagged_at: null,
        })

        yield* sql`update quote_identities set fade_flagged_at = now() where id = ${id}`
        const flagged = yield* settlement.identityFades(id)
        expect(flagged).toMatchObject({ chances: 3, fades: 1, flagged: true })
        expect(flagged?.flagged_at).toBeInstanceOf(Date)
      }),
    )

    it.effect("takerUnpaidLocks: the master's unpaid marks against settlement.max_unpaid_locks", () =>
      Effect.gen(function* () {
        const settlement = yield* Settlement
        const { deployment } = yield* AppConfig
        const limit = deployment.settlement.max_unpaid_locks
        const taker = fresh()
        expect(yield* settlement.takerUnpaidLocks(taker)).toEqual({ unpaid: 0, limit, over: false })
        for (let i = 0; i < limit; i++)
          yield* mark("unpaid", crypto.randomUUID(), crypto.randomUUID(), taker.toLowerCase())
        // Other kinds and other takers' marks are not this taker's unpaid locks.
        yield* mark("chance", crypto.randomUUID(), crypto.randomUUID(), taker.toLowerCase())
        yield* mark("unpaid", crypto.randomUUID(), crypto.randomUUID(), fresh().toLowerCase())
        expect(yield* settlement.takerUnpaidLocks(taker)).toEqual({ unpaid: limit, limit, over: false })
        yield* mark("unpaid", crypto.randomUUID(), crypto.randomUUID(), taker.toLowerCase())
        // The address in any case names the same account.
        expect(yield* settlement.takerUnpaidLocks(taker.toLowerCase())).toEqual({
          unpaid: limit + 1,
          limit,
          over: true,
        })
        expect(yield* settlement.takerUnpaidLocks(taker)).toEqual({ unpaid: limit + 1, limit, over: true })
      }),
    )

    it.effect("wake reaches the take's entity on the service's cluster; without a cluster it does nothing", () =>
      Effect.gen(function* () {
        const settlement = yield* Settlement
        const woken = yield* Woken
        const take = crypto.randomUUID()
        yield* settlement.wake(take)
        expect(yield* Queue.take(woken).pipe(Effect.timeout("10 seconds"))).toBe(take)

        // A service built where no cluster runs (the HTTP stack alone in tests): the wake is a no-op, never a failure.
        const unclustered = crypto.randomUUID()
        yield* Effect.scoped(
          Effect.gen(function* () {
            const context = yield* Layer.build(Settlement.Default)
            yield* Context.get(context, Settlement).wake(unclustered)
          }),
        ).pipe(
          Effect.mapInputContext((all: Context.Context<AppConfig | SqlClient.SqlClient | Sharding.Sharding>) =>
            Context.omit(Sharding.Sharding)(all),
          ),
        )
        yield* settlement.wake(take)
        expect(yield* Queue.take(woken).pipe(Effect.timeout("10 seconds"))).toBe(take)
        expect(Option.isNone(yield* Queue.poll(woken))).toBe(true)
      }),
    )
  })
})
