import { SqlClient } from "@effect/sql"
import { expect, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { FILL_ATTEMPTS_MAX } from "../../src/Domain/Alerts.ts"
import { TestDatabaseLive } from "../support/Database.ts"
import { rawRequest } from "../support/Http.ts"
import { ago, insertRow } from "../support/Rows.ts"
import { testAppConfig, testDeployment } from "../support/TestConfig.ts"
import { baseUrl, TestHttpLive } from "../support/TestServer.ts"

/**
 * Issue 17 item 4: /health names what waits for a person, read from real rows in a real PostgreSQL: a fill
 * whose call failed its last permitted attempt, a fill past every timeout, a close pending too long, a relayer
 * key below the gas minimum (which also makes the chain not ready: degraded), an actor restarting in a loop, a
 * singleton no live runner runs, shards no live runner holds. Rows are written as their owners would leave them
 * (only the columns the alerts read matter; the rest get neutral values, foreign keys unchecked).
 */

const Live = TestHttpLive.pipe(Layer.provideMerge(TestDatabaseLive), Layer.provideMerge(testAppConfig()))
const deployment = testDeployment()

layer(Live, { timeout: "120 seconds", excludeTestServices: true })("health alerts", (it) => {
  it.effect("each condition is named in /health; only the gas one degrades", () =>
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const base = yield* baseUrl
      const health = Effect.map(rawRequest(`${base}/health`), (r) => ({
        status: r.status,
        body: r.json as { status: string; alerts: Array<Record<string, unknown>>; chains: Array<{ error: string }> },
      }))
      expect((yield* health).body.alerts).toEqual([])

      // A fill whose lock failed its last attempt; one that did not reach it (attempt 2): no alert for that one.
      const failedFill = crypto.randomUUID()
      const retrying = crypto.randomUUID()
      for (const id of [failedFill, retrying])
        yield* insertRow("fills", { id, state: "locking", final: false, created_at: ago(60), updated_at: ago(60) })
      yield* insertRow("relayer_requests", {
        idempotency_key: `settle:${failedFill}:lock:${FILL_ATTEMPTS_MAX}`,
        venue: "hyperliquid",
        status: "reverted",
        revert_reason: "NotOpen(0x01)",
      })
      yield* insertRow("relayer_requests", {
        idempotency_key: `settle:${retrying}:lock:2`,
        venue: "hyperliquid",
        status: "reverted",
      })
      // A fill past every timeout (maker 1800 s, taker 3600 s, + 900 s), one final fill as old: only the first.
      const stuckFill = crypto.randomUUID()
      const oldFinal = crypto.randomUUID()
      yield* insertRow("fills", {
        id: stuckFill,
        state: "paid",
        final: false,
        created_at: ago(4600),
        updated_at: ago(4600),
      })
      yield* insertRow("fills", {
        id: oldFinal,
        state: "settled",
        final: true,
        created_at: ago(9000),
        updated_at: ago(9000),
      })
      // A close pending for 20 minutes, a pending one of a minute, an old final one: only the first.
      const stuckClose = crypto.randomUUID()
      yield* insertRow("closes", {
        id: stuckClose,
        kind: "managed",
        venue: "aster",
        state: "pending",
        created_at: ago(1200),
      })
      yield* insertRow("closes", { kind: "managed", venue: "aster", state: "pending", created_at: ago(60) })
      yield* insertRow("closes", { kind: "managed", venue: "aster", state: "final", created_at: ago(5000) })
      // The hyperliquid operator below its gas minimum (the watcher's row), aster above it.
      for (const [venue, gas] of [
        ["hyperliquid", "1000"],
        ["aster", "100000000000000000000"],
      ] as const) {
        const v = deployment.venues.find((x) => x.id === venue)!
        yield* insertRow("chain_status", {
          venue,
          chain_id: v.chain_id,
          checked_at: new Date(),
          head_seen_at: new Date(),
          latest_block: 10,
          finalized_block: 8,
          indexed_block: 8,
          operator_gas: gas,
        })
      }
      // Two runners alive, one dead: the watcher restarting in a loop on A; the settlement singleton registered
      // on both and running on none; A holds 200 shards, B 90 (10 of 300 held by no live runner); the dead
      // runner's singleton and shards count for nothing.
      const actor = (name: string, active: boolean, restarts = 0, failedAgo: number | null = null) => ({
        name,
        kind: name.split(":")[0],
        active,
        restarts,
        last_failure:
          failedAgo === null ? null : { message: "rpc: connection refused", at: Date.now() - failedAgo * 1000 },
      })
      const runner = (address: string, beat: Date, shards: number, actors: ReadonlyArray<ReturnType<typeof actor>>) =>
        sql`insert into runner_status (address, heartbeat_at, shards, singletons, actors)
            values (${address}, ${beat}, ${shards}, ${actors.filter((a) => a.active).map((a) => a.name)},
              ${JSON.stringify(actors)}::jsonb)`
      yield* runner("10.0.0.1:34431", new Date(), 200, [
        actor("venue-watcher:hyperliquid", false, 4, 5),
        actor("settlement", false),
      ])
      yield* runner("10.0.0.2:34431", new Date(), 90, [actor("settlement", false), actor("journal-publisher", true)])
      yield* runner("10.0.0.3:34431", ago(60), 10, [actor("tx-relayer:aster", true)])

      const { status, body } = yield* health
      expect(status).toBe(503)
      expect(body.status).toBe("degraded")
      const named = body.alerts.map((a) => [a.kind, a.subject, a.degrades])
      expect(named).toEqual([
        ["fill_needs_operator", failedFill, false],
        ["fill_stuck", stuckFill, false],
        ["close_stuck", stuckClose, false],
        ["relayer_out_of_gas", "hyperliquid", true],
        ["actor_restarting", "venue-watcher", false],
        ["singleton_unowned", "settlement", false],
        ["singleton_unowned", "venue-watcher:hyperliquid", false],
        ["shards_unowned", "10", false],
      ])
      const byKind = Object.fromEntries(body.alerts.map((a) => [a.kind, a]))
      expect(byKind.fill_needs_operator!.message).toBe(
        `lock failed ${FILL_ATTEMPTS_MAX} times (NotOpen(0x01)); settlement no longer retries it`,
      )
      expect(byKind.relayer_out_of_gas!.message).toMatch(/^operator gas 1000 wei below the minimum \d+/)
      expect(byKind.actor_restarting!.message).toMatch(/^4 restarts, the last \d+ s ago: rpc: connection refused$/)
      expect(byKind.shards_unowned!.message).toBe("10 of 300 shards held by no live runner")
      // The spec's readiness says why the gas chain is not ready, as before.
      expect(body.chains.some((c) => c.error.startsWith("operator gas 1000 below the minimum"))).toBe(true)

      // The person acts: the fill and the close end, gas is topped up, the singleton and shards are taken:
      // those alerts go (the restart loop stays while its last failure is recent).
      yield* sql`update fills set final = true, state = 'failed' where id in (${failedFill}, ${stuckFill})`
      yield* sql`update closes set state = 'final' where id = ${stuckClose}`
      yield* sql`update chain_status set operator_gas = '100000000000000000000'`
      yield* sql`update runner_status set shards = 100,
                 singletons = array['settlement', 'venue-watcher:hyperliquid', 'journal-publisher']
                 where address = '10.0.0.2:34431'`
      const after = yield* health
      expect(after.body.alerts.map((a) => a.kind)).toEqual(["actor_restarting"])
    }),
  )
})
