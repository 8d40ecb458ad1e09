/**
 * Crash of the service while a withdrawal is `submitting`: the service runs as a child process (`src/main.ts`,
 * the cluster singleton desk included) against a Hyperliquid simulator that holds the transfer request open. The
 * child is SIGKILLed mid-send, then started again on the same database: the desk turns the `submitting` row into
 * `unknown` and resolves it from venue evidence, never sending the transfer a second time.
 * - applied by the venue before the crash → unknown → relayed; the venue debited it once, paid it once;
 * - not applied → unknown → failed once the signed transfer can no longer land; nothing moved.
 */
import { SqlClient } from "@effect/sql"
import { expect, layer } from "@effect/vitest"
import { Context, Duration, Effect, Layer, Redacted } from "effect"
import type { Hex } from "viem"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { DevelopmentConfig } from "../../src/DevelopmentConfig.ts"
import { freePorts } from "../../src/FreePort.ts"
import { databaseLayer } from "../../src/Sql/Database.ts"
import { scopedConfigFile } from "../support/ConfigFile.ts"
import { testDatabaseUrl } from "../support/Database.ts"
import { expectJournalGapless } from "../support/JournalInvariant.ts"
import { type ServiceProcess, startService } from "../support/Process.ts"
import { bearer, post, signIn } from "../support/SignIn.ts"
import { TEST_ORIGIN } from "../support/TestConfig.ts"
import { startVenueNode, type VenueNode } from "../support/VenueNode.ts"
import {
  prepareOk,
  signPrepared,
  submit,
  USDC,
  venueConfigOf,
  type WithdrawalView,
} from "../support/WithdrawalDevnet.ts"

/** How long a signed Hyperliquid transfer may land after its nonce (sim and service alike). */
const WINDOW_MS = 8_000

class Env extends Context.Tag("test/CrashEnv")<
  Env,
  { readonly url: string; readonly node: VenueNode; readonly configPath: string }
>() {}

const Live = Layer.unwrapScoped(
  Effect.gen(function* () {
    const url = yield* testDatabaseUrl
    const node = yield* startVenueNode("hyperliquid", { nonceWindow: { pastMs: WINDOW_MS, futureMs: 86_400_000 } })
    const config = {
      ...DevelopmentConfig,
      app_origins: [TEST_ORIGIN],
      venues: [
        // The service waits up to 60 s for the venue: the crash comes while it is still waiting.
        venueConfigOf("hyperliquid", node, { request_timeout_ms: 60_000, nonce_window_past_ms: WINDOW_MS }),
      ],
      auth: { rpc_urls: [node.chain.anvil.rpcUrl] },
      withdrawals: { poll_ms: 100, reconcile_ms: 300, reconcile_max_ms: 1_000 },
    }
    const configPath = yield* scopedConfigFile("withdrawal-crash-", config)
    return databaseLayer(url).pipe(Layer.merge(Layer.succeed(Env, { url: Redacted.value(url), node, configPath })))
  }),
)

const stateOf = (id: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<{ state: string; error: string }>`select state, error from withdrawals where id = ${id}`.pipe(
      Effect.map((rows) => rows[0]),
    ),
  )

const journalStates = (id: string) =>
  Effect.flatMap(
    SqlClient.SqlClient,
    (sql) =>
      sql<{ state: string; revision: string }>`
      select payload->>'state' as state, payload->>'revision' as revision from journal
      where payload->>'withdrawal_id' = ${id} order by id`,
  )

/** Polls `check` every 100 ms until it holds, for at most `timeoutMs`. */
const until = <E, R>(what: string, check: Effect.Effect<boolean, E, R>, timeoutMs: number) =>
  Effect.gen(function* () {
    const deadline = Date.now() + timeoutMs
    while (Date.now() < deadline) {
      if (yield* check) return
      yield* Effect.sleep(Duration.millis(100))
    }
    return yield* Effect.dieMessage(`timed out waiting for ${what}`)
  })

const sigkill = (service: ServiceProcess) =>
  Effect.async<void>((resume) => {
    if (service.child.exitCode !== null || service.child.signalCode !== null) return resume(Effect.void)
    service.child.once("exit", () => resume(Effect.void))
    service.child.kill("SIGKILL")
  })

/** A signed-in account with its Hyperliquid account linked and credited, and its first withdrawal prepared. */
const preparedAccount = (base: string, node: VenueNode, log: (m: string) => Effect.Effect<void>, dump: () => string) =>
  Effect.gen(function* () {
    const account = privateKeyToAccount(generatePrivateKey())
    const address = account.address.toLowerCase() as Hex
    const token = yield* signIn(base, account).pipe(
      Effect.timeout("30 seconds"),
      Effect.tapErrorCause(() => log(`sign-in did not answer; service output:\n${dump().slice(-4000)}`)),
      Effect.orDie,
    )
    expect((yield* post(`${base}/v1/accounts`, { venue: "hyperliquid", address }, bearer(token))).status).toBe(201)
    node.sim.control.credit(address, 50n * USDC)
    const prepared = yield* prepareOk(base, token, { venue: "hyperliquid", amount: "12000000", to: "signer" })
    const signature = yield* signPrepared(account, prepared)
    const onChain = yield* onChainBalance(node, address)
    return { address, token, prepared, signature, onChain }
  })

const onChainBalance = (node: VenueNode, address: Hex) =>
  Effect.promise(() =>
    node.chain.pub.readContract({
      address: node.chain.token,
      abi: BALANCE_OF,
      functionName: "balanceOf",
      args: [address],
    }),
  )

const BALANCE_OF = [
  {
    type: "function",
    name: "balanceOf",
    stateMutability: "view",
    inputs: [{ name: "a", type: "address" }],
    outputs: [{ type: "uint256" }],
  },
] as const

layer(Live, { timeout: "300 seconds", excludeTestServices: true })("withdrawal desk crash", (it) => {
  it.effect(
    "SIGKILL while two transfers are submitting (one applied by the venue, one not): after a restart, " +
      "unknown → relayed and unknown → failed by evidence; each moved funds at most once",
    () =>
      Effect.gen(function* () {
        const { url, node, configPath } = yield* Env
        const sql = yield* SqlClient.SqlClient
        const [port, runnerPort] = yield* freePorts(2)
        const env = {
          DATABASE_URL: url,
          SETTLEMENT_CONFIG: configPath,
          PORT: String(port),
          RUNNER_PORT: String(runnerPort),
        }
        const base = `http://127.0.0.1:${port}`
        const t0 = Date.now()
        const log = (m: string) => Effect.sync(() => console.log(`[crash test +${Date.now() - t0} ms] ${m}`))
        const first = yield* startService(env)
        yield* log("service started")
        const applied = yield* preparedAccount(base, node, log, first.output)
        const lost = yield* preparedAccount(base, node, log, first.output)

        // The venue takes each request and never answers: the first after applying it, the second without.
        node.sim.control.timeoutNext(1, { holdMs: 120_000, apply: true })
        const a = yield* submit(base, applied.token, applied.prepared, applied.signature)
        expect(a.status, a.text).toBe(200)
        const appliedId = (a.json as WithdrawalView).id
        yield* until(
          "the first send to be applied",
          Effect.sync(() => node.sim.control.balance(applied.address) === 38n * USDC),
          20_000,
        )
        node.sim.control.timeoutNext(1, { holdMs: 120_000, apply: false })
        const b = yield* submit(base, lost.token, lost.prepared, lost.signature)
        expect(b.status, b.text).toBe(200)
        const lostId = (b.json as WithdrawalView).id
        yield* until(
          "the second send to be in flight",
          Effect.map(stateOf(lostId), (r) => r?.state === "submitting"),
          20_000,
        )
        yield* Effect.sleep(Duration.millis(300))
        expect((yield* stateOf(appliedId))?.state).toBe("submitting")
        yield* log("both submitting; SIGKILL")
        yield* sigkill(first)
        expect((yield* stateOf(appliedId))?.state).toBe("submitting")
        expect((yield* stateOf(lostId))?.state).toBe("submitting")

        // Restart on the same database and runner address.
        yield* startService(env)
        const restarted = Date.now()
        yield* log("service restarted")
        yield* until(
          "relayed by evidence",
          Effect.map(stateOf(appliedId), (r) => r?.state === "relayed"),
          30_000,
        )
        yield* log("first relayed")
        yield* until(
          "failed after the window",
          Effect.map(stateOf(lostId), (r) => r?.state === "failed"),
          WINDOW_MS + 30_000,
        )
        yield* log("second failed")
        expect(Date.now() - restarted).toBeLessThan(WINDOW_MS + 30_000)
        for (const [id, final] of [
          [appliedId, "relayed"],
          [lostId, "failed"],
        ] as const) {
          const journal = yield* journalStates(id)
          expect(journal.map((j) => j.state)).toEqual(["queued", "submitting", "unknown", final])
          expect(journal.map((j) => j.revision)).toEqual(["1", "2", "3", "4"])
        }
        const [row] = yield* sql<{ error: string }>`select error from withdrawals where id = ${lostId}`
        expect(row!.error).toMatch(/nonce window/)
        // Exactly one transfer for the applied one, none for the other: at the venue and on chain.
        yield* Effect.promise(() => node.sim.control.payoutsSettled())
        expect(node.sim.control.balance(applied.address)).toBe(38n * USDC)
        expect((yield* onChainBalance(node, applied.address)) - applied.onChain).toBe(12n * USDC)
        expect(node.sim.control.balance(lost.address)).toBe(50n * USDC)
        expect(yield* onChainBalance(node, lost.address)).toBe(lost.onChain)
        yield* expectJournalGapless
      }).pipe(Effect.scoped),
    240_000,
  )
})
