import { SqlClient } from "@effect/sql"
import { expect, layer } from "@effect/vitest"
import { Context, Effect, Fiber, Layer, Redacted } from "effect"
import { type Address, encodeFunctionData, type Hex } from "viem"
import { mockUSDCAbi } from "../../src/Chain/artifacts/index.ts"
import type { FaultPointName } from "../../src/Chain/FaultPoint.ts"
import { DevelopmentConfig } from "../../src/DevelopmentConfig.ts"
import { freePorts } from "../../src/FreePort.ts"
import { Relayer } from "../../src/Relayer.ts"
import { databaseLayer } from "../../src/Sql/Database.ts"
import { account, key, startTestChain, type TestChain, venueEntry } from "../support/ChainDevnet.ts"
import { awaitExit, spawnService, stopService } from "../support/ChainProcess.ts"
import { scopedConfigFile } from "../support/ConfigFile.ts"
import { testDatabaseUrl } from "../support/Database.ts"
import { expectJournalGapless } from "../support/JournalInvariant.ts"
import { TEST_ORIGIN, testAppConfig } from "../support/TestConfig.ts"

/**
 * Crash harness (reliability.md §1.5 recipe D): the service runs as a child process with one fault
 * point armed; it is SIGKILLed there, restarted clean, and every request must end final with one
 * on-chain effect per key and gapless nonces. Seeds pick the order of the points, the batch sizes
 * and which hit kills; CHAIN_CRASH_SEEDS=1,2,3 runs more.
 */

const OPERATOR = 6
const operator = account(OPERATOR).address
const POINTS: ReadonlyArray<{ readonly point: FaultPointName; readonly perRequest: boolean }> = [
  { point: "relayer.after-sign-before-persist", perRequest: true },
  { point: "relayer.after-persist-before-broadcast", perRequest: false },
  { point: "relayer.after-broadcast-before-record", perRequest: false },
  { point: "relayer.after-commit-before-publish", perRequest: true },
]
const SEEDS = (process.env.CHAIN_CRASH_SEEDS ?? "1,2").split(",").map(Number)

class Harness extends Context.Tag("test/Harness")<
  Harness,
  { readonly chain: TestChain; readonly env: Record<string, string> }
>() {}

const configFor = (c: TestChain) => ({
  ...DevelopmentConfig,
  app_origins: [TEST_ORIGIN],
  venues: [
    venueEntry(c, "hyperliquid", {
      watcher: { poll_ms: 500 },
      relayer: { poll_ms: 100, allow: [{ contract: c.token, functions: ["mint(address,uint256)"] }] },
    }),
  ],
  operator_key: key(OPERATOR),
})

const Live = Layer.unwrapScoped(
  Effect.gen(function* () {
    const url = yield* testDatabaseUrl
    const chain = yield* Effect.acquireRelease(
      Effect.promise(() => startTestChain({ slotsInAnEpoch: 1 })),
      (c) => Effect.promise(() => c.anvil.stop()),
    )
    const config = configFor(chain)
    const file = yield* scopedConfigFile("chain-crash-", config)
    const [port, runnerPort] = yield* freePorts(2).pipe(Effect.orDie)
    const env = {
      DATABASE_URL: Redacted.value(url),
      SETTLEMENT_CONFIG: file,
      PORT: String(port),
      RUNNER_PORT: String(runnerPort),
    }
    return Relayer.Live.pipe(
      Layer.provideMerge(databaseLayer(url)),
      Layer.provideMerge(testAppConfig(config)),
      Layer.provideMerge(Layer.succeed(Harness, { chain, env })),
    )
  }),
)

/** A small LCG: the same seed gives the same schedule. */
const rng = (seed: number) => {
  let s = seed >>> 0 || 1
  return (n: number) => {
    s = (Math.imul(s, 1_664_525) + 1_013_904_223) >>> 0
    return s % n
  }
}

const recipient = (i: number): Address => `0x${(0xcafe0000 + i).toString(16).padStart(40, "0")}` as Address

layer(Live, { timeout: "400 seconds", excludeTestServices: true })("crash harness", (it) => {
  it.effect(
    "SIGKILL at each named point, restart: every request final, one effect per key, gapless nonces",
    () =>
      Effect.gen(function* () {
        const { chain, env } = yield* Harness
        const r = yield* Relayer
        const sql = yield* SqlClient.SqlClient
        // Blocks keep coming (finality = 2 blocks) whatever the service is doing.
        const miner = yield* Effect.fork(
          Effect.promise(() => chain.test.mine({ blocks: 1 })).pipe(
            Effect.zipRight(Effect.sleep("250 millis")),
            Effect.forever,
          ),
        )
        let next = 0
        const submitted: Array<{ key: string; to: Address; amount: bigint }> = []
        for (const seed of SEEDS) {
          const random = rng(seed)
          const order = [...POINTS].sort(() => random(3) - 1)
          const keys: Array<string> = []
          // Crash after crash: each armed process also inherits whatever the previous one left half done.
          for (const { point, perRequest } of order) {
            const batch = 2 + random(4)
            const hit = perRequest ? 1 + random(Math.min(batch, 3)) : 1
            for (let i = 0; i < batch; i++) {
              const n = next++
              const amount = 1_000n + BigInt(n)
              const k = `crash-${seed}-${n}`
              keys.push(k)
              submitted.push({ key: k, to: recipient(n), amount })
              yield* r.submit({
                idempotencyKey: k,
                venue: "hyperliquid",
                to: chain.token,
                data: encodeFunctionData({ abi: mockUSDCAbi, functionName: "mint", args: [recipient(n), amount] }),
              })
            }
            const armed = spawnService({ ...env, SETTLEMENT_CRASH_POINT: point, SETTLEMENT_CRASH_HIT: String(hit) })
            const exit = yield* awaitExit(armed, 90_000)
            if (exit === undefined) yield* stopService(armed)
            expect(exit?.signal, `seed ${seed}: ${point} (hit ${hit}) was not reached:\n${armed.output()}`).toBe(
              "SIGKILL",
            )
            expect(armed.output()).toContain(`fault point ${point} hit ${hit}: SIGKILL`)
          }
          // A clean restart finishes everything.
          const clean = spawnService(env)
          const outcomes = yield* Effect.forEach(keys, (k) => r.awaitOutcome(k, { timeout: "90 seconds" }), {
            concurrency: "unbounded",
          }).pipe(
            Effect.tapError(() => Effect.sync(() => console.error(clean.output()))),
            Effect.ensuring(stopService(clean)),
          )
          expect(outcomes.map((o) => o.status)).toEqual(keys.map(() => "final"))
        }
        yield* Fiber.interrupt(miner)

        // One on-chain effect per key.
        for (const s of submitted) {
          const balance = yield* Effect.promise(() =>
            chain.pub.readContract({ abi: mockUSDCAbi, address: chain.token, functionName: "balanceOf", args: [s.to] }),
          )
          expect(balance, s.key).toBe(s.amount)
        }
        // Gapless nonces: 0..n-1, one request each, the chain agrees, each mined hash is one of the request's attempts.
        const rows = yield* sql<{ nonce: string; tx_hash: Hex; hashes: Array<string> }>`
          select q.nonce::text, q.tx_hash, array_agg(a.tx_hash order by a.attempt) as hashes
          from relayer_requests q join relayer_attempts a on a.request_id = q.id
          where q.signer = ${operator.toLowerCase()} group by q.id order by q.nonce`
        expect(rows.map((x) => Number(x.nonce))).toEqual(submitted.map((_, i) => i))
        expect(yield* Effect.promise(() => chain.pub.getTransactionCount({ address: operator }))).toBe(submitted.length)
        for (const x of rows) {
          expect(x.hashes).toContain(x.tx_hash)
          const receipt = yield* Effect.promise(() => chain.pub.getTransactionReceipt({ hash: x.tx_hash }))
          expect(receipt.status).toBe("success")
          expect(receipt.from.toLowerCase()).toBe(operator.toLowerCase())
        }
        const journal = yield* sql<{ kind: string; n: string }>`
          select kind, count(*)::text as n from journal where kind in ('tx.queued', 'tx.final') group by kind`
        expect(Object.fromEntries(journal.map((j) => [j.kind, Number(j.n)]))).toEqual({
          "tx.queued": submitted.length,
          "tx.final": submitted.length,
        })
        yield* expectJournalGapless
      }),
    400_000,
  )
})
