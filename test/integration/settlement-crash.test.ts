import { SqlClient } from "@effect/sql"
import { expect, layer } from "@effect/vitest"
import { Context, Effect, Fiber, Layer, Redacted } from "effect"
import type { Address } from "viem"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { mockUSDCAbi } from "../../src/Chain/artifacts/index.ts"
import { DevelopmentConfig } from "../../src/DevelopmentConfig.ts"
import { freePorts } from "../../src/FreePort.ts"
import { databaseLayer } from "../../src/Sql/Database.ts"
import { account, key, startTestChain, type TestChain, venueEntry } from "../support/ChainDevnet.ts"
import { awaitExit, type CrashableService, spawnService, stopService } from "../support/ChainProcess.ts"
import { scopedConfigFile } from "../support/ConfigFile.ts"
import { testDatabaseUrl } from "../support/Database.ts"
import { expectJournalGapless } from "../support/JournalInvariant.ts"
import { settleRequestsAtRest } from "../support/Rows.ts"
import { makerOrder, signedTake } from "../support/Takes.ts"
import { TEST_ORIGIN, testAppConfig } from "../support/TestConfig.ts"

/**
 * The service (src/main.ts, a child process) settling one fill is SIGKILLed at every settlement step, right after
 * the step's key and state commit and before the call reaches the relayer (fault point
 * settlement.after-commit-before-submit): lock, pay, claim, claimPayment. Each restart resubmits the stored key and
 * goes on; the fill ends settled exactly once: one relayer request per step, one payout each side, money conserved,
 * one trade.settled.
 */

const OPERATOR = 9
const M = "hyperliquid"
const T = "aster"

class Harness extends Context.Tag("test/SettlementCrash")<
  Harness,
  { readonly hl: TestChain; readonly aster: TestChain; readonly env: Record<string, string> }
>() {}

const chainOf = (chainId: number, kind: "hyperliquid" | "aster") =>
  Effect.acquireRelease(
    Effect.promise(() => startTestChain({ chainId, kind })),
    (c) => Effect.promise(() => c.anvil.stop()),
  )

const Live = Layer.unwrapScoped(
  Effect.gen(function* () {
    const url = yield* testDatabaseUrl
    const [hl, aster] = yield* Effect.all([chainOf(999, "hyperliquid"), chainOf(42161, "aster")], { concurrency: 2 })
    const entry = (c: TestChain, id: string) => {
      const { legacy_escrow: _legacy, ...v } = venueEntry(c, id, {
        watcher: { poll_ms: 200, confirmations: 2, integrity_interval_seconds: 3600 },
        relayer: { poll_ms: 100 },
      })
      return v
    }
    const config = {
      ...DevelopmentConfig,
      app_origins: [TEST_ORIGIN],
      venues: [entry(hl, M), entry(aster, T)],
      auth: { rpc_urls: [hl.anvil.rpcUrl] },
      operator_key: key(OPERATOR),
    }
    const file = yield* scopedConfigFile("settlement-crash-", config)
    const [port, runnerPort] = yield* freePorts(2).pipe(Effect.orDie)
    const env = {
      DATABASE_URL: Redacted.value(url),
      SETTLEMENT_CONFIG: file,
      PORT: String(port),
      RUNNER_PORT: String(runnerPort),
    }
    return databaseLayer(url).pipe(
      Layer.provideMerge(testAppConfig(config)),
      Layer.merge(Layer.succeed(Harness, { hl, aster, env })),
    )
  }),
)

const t0 = Date.now()
const progress = (what: string) =>
  Effect.sync(() => process.stderr.write(`[settlement-crash +${Date.now() - t0} ms] ${what}\n`))

const balanceOf = (c: TestChain, who: Address) =>
  Effect.promise(() =>
    c.pub.readContract({ address: c.token, abi: mockUSDCAbi, functionName: "balanceOf", args: [who] }),
  )

layer(Live, { timeout: "900 seconds", excludeTestServices: true })("settlement across crashes", (it) => {
  it.effect(
    "SIGKILL after each step's commit: every restart resubmits and the fill settles exactly once",
    () =>
      Effect.gen(function* () {
        const { hl, aster, env } = yield* Harness
        const sql = yield* SqlClient.SqlClient
        const miner = yield* Effect.fork(
          Effect.promise(() => Promise.all([hl.test.mine({ blocks: 1 }), aster.test.mine({ blocks: 1 })])).pipe(
            Effect.zipRight(Effect.sleep("250 millis")),
            Effect.forever,
          ),
        )
        const A = yield* makerOrder(hl, aster, {
          owner: account(1),
          signer: privateKeyToAccount(generatePrivateKey()),
          relayer: account(8),
          operator: account(OPERATOR).address,
          payee: privateKeyToAccount(generatePrivateKey()).address,
          amount: 3_000_000n,
          makerVenue: M,
          takerVenue: T,
        })
        const payer = account(3)
        const recipient = privateKeyToAccount(generatePrivateKey()).address
        const escrowHl0 = yield* balanceOf(hl, hl.escrow)
        const escrowAster0 = yield* balanceOf(aster, aster.escrow)
        const payer0 = yield* balanceOf(aster, payer.address)
        const t = yield* signedTake(hl, aster, {
          payer,
          recipient,
          parts: [{ order: A, amountIn: 1_000_000n, amountOut: 1_000_000n }],
          makerVenue: M,
          takerVenue: T,
        })
        const fillId = t.fills[0]!.id
        const fillState = Effect.map(
          sql<{ state: string }>`select state from fills where id = ${fillId}`,
          (r) => r[0]?.state,
        )

        // One crash per step: the first Submit after each start kills the process. claimPayment is submitted as soon
        // as the claim is included (the secret is public), so before or after the claim's finality is seen.
        const expected = ["locking", "paying", "claiming", ["claiming", "claimed"]]
        for (const [i, state] of expected.entries()) {
          yield* progress(`run ${i + 1}: armed`)
          const service: CrashableService = spawnService({
            ...env,
            SETTLEMENT_CRASH_POINT: "settlement.after-commit-before-submit",
          })
          const exit = yield* awaitExit(service, 240_000)
          if (exit === undefined) {
            yield* stopService(service)
            return yield* Effect.dieMessage(`run ${i + 1} did not crash:\n${service.output().slice(-3000)}`)
          }
          expect(exit.signal, service.output().slice(-2000)).toBe("SIGKILL")
          expect(typeof state === "string" ? [state] : state).toContain(yield* fillState)
          // The key is committed; the relayer never got it.
          const keys = yield* sql<{ idempotency_key: string }>`
            select idempotency_key from relayer_requests where idempotency_key like ${`settle:${fillId}:%`}`
          expect(keys.length).toBe(i)
        }

        yield* progress("final run: unarmed")
        const service = spawnService(env)
        const deadline = Date.now() + 240_000
        while ((yield* fillState) !== "settled") {
          if (Date.now() > deadline || service.child.exitCode !== null) {
            yield* stopService(service)
            return yield* Effect.dieMessage(`not settled:\n${service.output().slice(-3000)}`)
          }
          yield* Effect.sleep("500 millis")
        }
        // Keep the service up until the relayer has finished its rows too.
        const keys = yield* settleRequestsAtRest(fillId)
        yield* stopService(service)
        yield* Fiber.interrupt(miner)

        expect(keys.map((k) => [k.idempotency_key, k.status])).toEqual(
          ["lock", "pay", "claim", "claimPayment"].map((c) => [`settle:${fillId}:${c}`, "final"]),
        )
        // toMargin false in this helper's take: the recipient's wallet got amount_out.
        expect(yield* balanceOf(hl, recipient)).toBe(1_000_000n)
        expect(yield* balanceOf(hl, hl.escrow)).toBe(escrowHl0 - 1_000_000n)
        expect(yield* balanceOf(aster, aster.escrow)).toBe(escrowAster0)
        expect(yield* balanceOf(aster, A.payee)).toBe(1_000_000n)
        expect(yield* balanceOf(aster, payer.address)).toBe(payer0 - 1_000_000n)
        const trades = yield* sql`select 1 from journal where kind = 'trade.settled' and payload->>'id' = ${fillId}`
        expect(trades.length).toBe(1)
        const kinds = yield* sql<{ kind: string; n: string }>`
          select kind, count(*)::text as n from journal where payload->>'fill_id' = ${fillId} group by kind
          order by kind`
        // Each step journaled once per party (taker and maker).
        for (const k of kinds) expect(k.n, k.kind).toBe("2")
        expect(kinds.map((k) => k.kind)).toContain("fill.settled")
        yield* expectJournalGapless
      }),
    900_000,
  )
})
