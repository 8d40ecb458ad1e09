import { SqlClient } from "@effect/sql"
import { expect, layer } from "@effect/vitest"
import { Context, Effect, Layer, Redacted, Schedule } from "effect"
import { DevelopmentConfig } from "../../src/DevelopmentConfig.ts"
import { databaseLayer } from "../../src/Sql/Database.ts"
import { key, startTestChain, type TestChain, venueEntry } from "../support/ChainDevnet.ts"
import { spawnListening, stopService } from "../support/ChainProcess.ts"
import { scopedConfigFile } from "../support/ConfigFile.ts"
import { testDatabaseUrl } from "../support/Database.ts"
import { rawRequest } from "../support/Http.ts"
import { pollUntil } from "../support/Poll.ts"
import { TEST_ORIGIN } from "../support/TestConfig.ts"

/**
 * /health as an operator sees it on a devnet-shaped deployment: two anvil chains with 1 s interval
 * mining and finality lag (slots 2: finalized = latest - 4), default watcher settings, and two
 * service processes (two runners) on one database. Each chain's watcher runs once in the cluster;
 * both processes must answer the same truthful /health, and reach `ok` within seconds.
 */

class Env extends Context.Tag("test/Env")<
  Env,
  { readonly env: Record<string, string>; readonly chains: ReadonlyArray<TestChain> }
>() {}

const Live = Layer.unwrapScoped(
  Effect.gen(function* () {
    const url = yield* testDatabaseUrl
    const chains = yield* Effect.acquireRelease(
      Effect.promise(() =>
        Promise.all([
          startTestChain({ chainId: 999, kind: "hyperliquid", slotsInAnEpoch: 2, blockTime: 1 }),
          startTestChain({ chainId: 42161, kind: "aster", slotsInAnEpoch: 2, blockTime: 1 }),
        ]),
      ),
      (cs) => Effect.promise(() => Promise.all(cs.map((c) => c.anvil.stop()))),
    )
    const config = {
      ...DevelopmentConfig,
      app_origins: [TEST_ORIGIN],
      venues: [venueEntry(chains[0]!, "hyperliquid"), venueEntry(chains[1]!, "aster")],
      operator_key: key(0),
    }
    const configFile = yield* scopedConfigFile("chain-health-", config)
    return databaseLayer(url).pipe(
      Layer.provideMerge(
        Layer.succeed(Env, {
          env: { DATABASE_URL: Redacted.value(url), SETTLEMENT_CONFIG: configFile },
          chains,
        }),
      ),
    )
  }),
)

interface Health {
  status: string
  ready: boolean
  pending_transactions: number
  chains: Array<{
    venue: string
    ready: boolean
    error: string
    block: string
    finalized_block: string
    operator_gas: string
  }>
}

/** One /health answer (a request that does not answer within 3 s is abandoned and retried). */
const health = (port: number) =>
  rawRequest(`http://127.0.0.1:${port}/health`).pipe(
    Effect.timeout("3 seconds"),
    Effect.retry({ times: 20, schedule: Schedule.spaced("250 millis") }),
    Effect.orDie,
  )

layer(Live, { timeout: "240 seconds", excludeTestServices: true })("/health on a devnet-shaped deployment", (it) => {
  it.effect(
    "two runners both report ok within seconds of starting, the same chains, from the persisted status",
    () =>
      Effect.gen(function* () {
        const { env, chains } = yield* Env
        const sql = yield* SqlClient.SqlClient
        // Both runners start at once on a database the cluster never used: its storage tables are
        // created under an advisory lock (src/Cluster.ts), so the two first-ever starts cannot collide.
        const runner = (name: string) => Effect.acquireRelease(spawnListening(name, env), (r) => stopService(r.service))
        const [a, b] = yield* Effect.all([runner("runner a"), runner("runner b")], { concurrency: 2 })
        const ports = [a.port, a.runnerPort, b.port, b.runnerPort]
        const started = performance.now()
        let okAt: number | undefined
        let last: Health | undefined
        while (performance.now() - started < 30_000) {
          const res = yield* health(ports[0]!)
          last = res.json as Health
          if (res.status === 200) {
            okAt = performance.now() - started
            break
          }
          yield* Effect.sleep("250 millis")
        }
        expect(okAt, `not ok 30 s after start: ${JSON.stringify(last)}`).toBeDefined()
        expect(okAt!).toBeLessThan(20_000)
        console.log(`/health ok ${Math.round(okAt!)} ms after both processes listened`)
        const fromA = (yield* health(ports[0]!)).json as Health
        const fromB = yield* health(ports[2]!)
        expect(fromB.status).toBe(200)
        const bodyB = fromB.json as Health
        expect(bodyB.status).toBe("ok")
        for (const body of [fromA, bodyB]) {
          expect(body.chains.map((c) => [c.venue, c.ready, c.error])).toEqual([
            ["hyperliquid", true, ""],
            ["aster", true, ""],
          ])
          for (const c of body.chains) {
            expect(BigInt(c.block) - BigInt(c.finalized_block)).toBeGreaterThanOrEqual(4n)
            expect(BigInt(c.operator_gas)).toBeGreaterThan(10n ** 18n)
          }
        }
        // One watcher per chain in the whole cluster: the status rows are written, heads keep moving.
        const rows = yield* sql<{ venue: string; latest_block: string; indexed_block: string }>`
          select venue, latest_block::text, indexed_block::text from chain_status order by venue`
        expect(rows.map((r) => r.venue)).toEqual(["aster", "hyperliquid"])
        const head0 = BigInt(rows[1]!.latest_block)
        // Blocks come every second; the head moves as soon as the watcher's next poll lands (up to its interval
        // later, longer on a busy machine or under TEST_WATCHER_LAG_MS), so wait for it rather than a fixed time.
        yield* pollUntil(
          Effect.map(health(ports[2]!), (res) => BigInt((res.json as Health).chains[0]!.block)),
          (block) => block > head0,
          { every: "250 millis", within: "20 seconds" },
        )
        // The legacy offers the devnet deploy made are indexed (history at the final head).
        const offers = yield* sql<{ n: string }>`select count(*)::text as n from legacy_offers`
        expect(Number(offers[0]!.n)).toBe(chains.length * 3)
      }).pipe(Effect.scoped),
    240_000,
  )
})
