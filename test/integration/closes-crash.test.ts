import { SqlClient } from "@effect/sql"
import { expect, layer } from "@effect/vitest"
import { Context, Effect, Fiber, Layer, Redacted } from "effect"
import { type Address, getAbiItem } from "viem"
import { mockCoreDepositWalletAbi, settlementEscrowAbi } from "../../src/Chain/artifacts/index.ts"
import { DevelopmentConfig } from "../../src/DevelopmentConfig.ts"
import { closeOffer } from "../../src/Domain/Close.ts"
import { freePorts } from "../../src/FreePort.ts"
import { databaseLayer } from "../../src/Sql/Database.ts"
import { account, fundOrders, key, startTestChain, type TestChain, venueEntry } from "../support/ChainDevnet.ts"
import { type CrashableService, spawnService, stopService } from "../support/ChainProcess.ts"
import { scopedConfigFile } from "../support/ConfigFile.ts"
import { testDatabaseUrl } from "../support/Database.ts"
import { rawRequest } from "../support/Http.ts"
import { expectJournalGapless } from "../support/JournalInvariant.ts"
import { bearer, post, signIn } from "../support/SignIn.ts"
import { TEST_ORIGIN, testAppConfig } from "../support/TestConfig.ts"

/**
 * The service (src/main.ts, a child process) accepts a close and relays it; the transaction is in a block but
 * not final when the process is SIGKILLed. After a restart the close completes exactly once: one OrderClosed on
 * chain, one payout, one close.final, no second transaction.
 *
 * Issue 22: the close queue is an entity per (owner, chain) on the real SQL cluster. Two owners' closes are
 * driven by two entities (their own ids in cluster_messages, an `actor started` line each); each entity's
 * persisted backstop tick is pending when the process dies, and the restarted runner delivers it (the close
 * completes after it).
 */

const OPERATOR = 9
const USDC = 1_000_000n
const ELSEWHERE = "0x00000000000000000000000000000000000bee02" as Address

class Harness extends Context.Tag("test/CloseCrash")<
  Harness,
  { readonly chain: TestChain; readonly env: Record<string, string>; readonly base: string; mining: boolean }
>() {}

const Live = Layer.unwrapScoped(
  Effect.gen(function* () {
    const url = yield* testDatabaseUrl
    const chain = yield* Effect.acquireRelease(
      Effect.promise(() => startTestChain({ chainId: 999, kind: "hyperliquid" })),
      (c) => Effect.promise(() => c.anvil.stop()),
    )
    const { legacy_escrow: _legacy, ...venue } = venueEntry(chain, "hyperliquid", {
      watcher: { poll_ms: 200, confirmations: 2, integrity_interval_seconds: 3600 },
      relayer: { poll_ms: 100 },
    })
    const config = {
      ...DevelopmentConfig,
      app_origins: [TEST_ORIGIN],
      venues: [venue],
      auth: { rpc_urls: [chain.anvil.rpcUrl] },
      operator_key: key(OPERATOR),
    }
    const file = yield* scopedConfigFile("closes-crash-", config)
    const [port, runnerPort] = yield* freePorts(2).pipe(Effect.orDie)
    const env = {
      DATABASE_URL: Redacted.value(url),
      SETTLEMENT_CONFIG: file,
      PORT: String(port),
      RUNNER_PORT: String(runnerPort),
    }
    return databaseLayer(url).pipe(
      Layer.provideMerge(testAppConfig(config)),
      Layer.merge(Layer.succeed(Harness, { chain, env, base: `http://127.0.0.1:${port}`, mining: true })),
    )
  }),
)

const t0 = Date.now()
const progress = (what: string) =>
  Effect.sync(() => process.stderr.write(`[closes-crash +${Date.now() - t0} ms] ${what}\n`))

/** Polls `effect` until `done`, at most `seconds`. */
const eventually = <A, E, R>(what: string, effect: Effect.Effect<A, E, R>, done: (a: A) => boolean, seconds = 60) =>
  Effect.gen(function* () {
    yield* progress(`waiting for ${what}`)
    const deadline = Date.now() + seconds * 1000
    let lastReport = Date.now()
    for (;;) {
      const value = yield* effect
      if (Date.now() - lastReport > 5000) {
        lastReport = Date.now()
        yield* progress(`still waiting for ${what}: ${JSON.stringify(value).slice(-400)}`)
      }
      if (done(value)) return value
      if (Date.now() > deadline)
        return yield* Effect.dieMessage(`timed out waiting for ${what}: ${JSON.stringify(value)}`)
      yield* Effect.sleep("250 millis")
    }
  })

/** Starts the service and waits (bounded) until it listens. */
const start = (env: Record<string, string>) =>
  Effect.gen(function* () {
    const service = spawnService(env)
    yield* eventually(
      "the service to listen",
      // The whole output is searched (a warning printed after the banner must not hide it); the tail is reported.
      Effect.sync(() => {
        const out = service.output()
        return {
          listening: out.includes("listening on"),
          tail: out.slice(-300),
          exited: service.child.exitCode !== null,
        }
      }),
      (s) => s.listening || s.exited,
      // Loading src/main.ts under tsx alone takes 25 s or more on a loaded 2-core machine.
      240,
    ).pipe(Effect.tapError(() => Effect.sync(() => console.error(service.output()))))
    if (service.child.exitCode !== null) return yield* Effect.dieMessage(`service exited:\n${service.output()}`)
    // Probe with short timeouts until the service answers, as a load balancer's health check would (a request
    // that hangs must not hang the test).
    yield* eventually(
      "the service to answer",
      Effect.promise(() =>
        fetch(`http://127.0.0.1:${env.PORT}/health/live`, { signal: AbortSignal.timeout(2000) }).then(
          (r) => r.status,
          () => 0,
        ),
      ),
      (status) => status === 200,
      120,
    )
    return service
  })

const kill = (s: CrashableService) =>
  Effect.promise(async () => {
    s.child.kill("SIGKILL")
    return s.exited
  })

layer(Live, { timeout: "540 seconds", excludeTestServices: true })("closes across a crash", (it) => {
  it.effect(
    "SIGKILL between relay and finality: after a restart the close completes once",
    () =>
      Effect.gen(function* () {
        const h = yield* Harness
        const { chain, base } = h
        const sql = yield* SqlClient.SqlClient
        const owner = account(3)
        const miner = yield* Effect.fork(
          Effect.promise(() => (h.mining ? chain.test.mine({ blocks: 1 }) : Promise.resolve())).pipe(
            Effect.zipRight(Effect.sleep("250 millis")),
            Effect.forever,
          ),
        )
        let service = yield* start(h.env)
        const token = yield* signIn(base, owner)
        const auth = bearer(token)
        expect(
          (yield* post(`${base}/v1/accounts`, { venue: "hyperliquid", address: owner.address }, auth)).status,
        ).toBe(201)
        const [order] = yield* Effect.promise(() =>
          fundOrders(chain, {
            owner,
            relayer: account(8),
            label: "crash",
            count: 1,
            amount: 5n * USDC,
            operator: ELSEWHERE,
          }),
        )
        const orderId = order!.orderId.toLowerCase()
        const escrow = Effect.map(rawRequest(`${base}/v1/escrow`, { headers: auth }), (r) =>
          ((r.json as { data?: Array<{ order_id: string; closing: boolean }> }).data ?? []).find(
            (o) => o.order_id === orderId,
          ),
        )
        yield* eventually("the order indexed", escrow, (o) => o !== undefined)
        const depositsOf = Effect.promise(() =>
          chain.pub.readContract({
            abi: mockCoreDepositWalletAbi,
            address: chain.deployment.contracts.venue.address,
            functionName: "deposits",
            args: [owner.address, 0],
          }),
        )
        const depositsBefore = yield* depositsOf

        // A second owner on the same chain: another (owner, chain) queue, so another entity.
        const other = account(4)
        const otherAuth = bearer(yield* signIn(base, other))
        expect(
          (yield* post(`${base}/v1/accounts`, { venue: "hyperliquid", address: other.address }, otherAuth)).status,
        ).toBe(201)
        const [otherOrder] = yield* Effect.promise(() =>
          fundOrders(chain, {
            owner: other,
            relayer: account(8),
            label: "crash-other",
            count: 1,
            amount: 3n * USDC,
            operator: ELSEWHERE,
          }),
        )
        const otherOrderId = otherOrder!.orderId.toLowerCase()
        yield* eventually(
          "the other owner's order indexed",
          Effect.map(rawRequest(`${base}/v1/escrow`, { headers: otherAuth }), (r) =>
            ((r.json as { data?: Array<{ order_id: string }> }).data ?? []).some((o) => o.order_id === otherOrderId),
          ),
          (found) => found,
        )

        // No more blocks: the close's transaction is mined (automine) but cannot become final.
        h.mining = false
        const prepared = (yield* post(
          `${base}/v1/escrow/close/prepare`,
          { venue: "hyperliquid", order_id: orderId },
          auth,
        )).json as {
          // biome-ignore lint/suspicious/noExplicitAny: wire typed data
          to_sign: Array<{ typed_data: any }>
          dex: number
          nonce: string
          deadline: number
          to_margin: boolean
        }
        const signature = yield* Effect.promise(() => owner.signTypedData(prepared.to_sign[0]!.typed_data))
        const body = {
          venue: "hyperliquid",
          order_id: orderId,
          dex: prepared.dex,
          nonce: prepared.nonce,
          deadline: prepared.deadline,
          signature,
          to_margin: prepared.to_margin,
        }
        const accepted = yield* post(`${base}/v1/escrow/close`, body, auth)
        expect(accepted.status, accepted.text).toBe(200)
        expect(accepted.json).toMatchObject({ order_id: orderId, closing: true })
        const digest = closeOffer(999, chain.escrow, {
          orderId,
          owner: owner.address,
          dex: prepared.dex,
          toMargin: prepared.to_margin,
          nonce: BigInt(prepared.nonce),
          deadline: BigInt(prepared.deadline),
        }).digest
        const relayKey = `close:${digest}`
        const request = sql<{ status: string; tx_hash: string | null; id: string }>`
          select status, tx_hash, id::text from relayer_requests where idempotency_key = ${relayKey}`
        yield* eventually("the close transaction in a block", request, (r) => r[0]?.status === "included")

        // The other owner's close, also in a block before the crash.
        const otherPrepared = (yield* post(
          `${base}/v1/escrow/close/prepare`,
          { venue: "hyperliquid", order_id: otherOrderId },
          otherAuth,
        )).json as typeof prepared
        const otherSignature = yield* Effect.promise(() => other.signTypedData(otherPrepared.to_sign[0]!.typed_data))
        const otherAccepted = yield* post(
          `${base}/v1/escrow/close`,
          {
            venue: "hyperliquid",
            order_id: otherOrderId,
            dex: otherPrepared.dex,
            nonce: otherPrepared.nonce,
            deadline: otherPrepared.deadline,
            signature: otherSignature,
            to_margin: otherPrepared.to_margin,
          },
          otherAuth,
        )
        expect(otherAccepted.status, otherAccepted.text).toBe(200)
        const otherRelayKey = (yield* sql<{ relay_key: string }>`
          select relay_key from closes where order_id = ${otherOrderId}`)[0]!.relay_key
        yield* eventually(
          "the other close transaction in a block",
          sql<{ status: string }>`select status from relayer_requests where idempotency_key = ${otherRelayKey}`,
          (r) => r[0]?.status === "included",
        )

        // Two queues, two entities: each close's intent went to its own (owner, chain) entity, which started and
        // keeps a persisted backstop tick pending while its close is open.
        const queues = [`${owner.address.toLowerCase()}:999`, `${other.address.toLowerCase()}:999`]
        const messages = (tag: string) =>
          sql<{ entity_id: string; id: string; processed: boolean }>`
            select entity_id, id::text, processed from cluster_messages
            where entity_type = 'close-queue' and tag = ${tag} order by id`
        expect([...new Set((yield* messages("Enqueue")).map((m) => m.entity_id))].sort()).toEqual([...queues].sort())
        const firstOutput = service.output()
        for (const queue of queues) {
          expect(
            firstOutput.split("\n").some((line) => line.includes("actor started") && line.includes(queue)),
            `an 'actor started' line for ${queue}`,
          ).toBe(true)
        }
        yield* eventually(
          "a pending backstop tick of each queue",
          Effect.map(messages("Tick"), (ticks) => ticks.filter((t) => !t.processed)),
          (pending) => queues.every((q) => pending.some((t) => t.entity_id === q)),
        )

        // Crash between relay and finality.
        const exit = yield* kill(service)
        expect(exit.signal).toBe("SIGKILL")
        const pending = yield* sql<{ state: string }>`select state from closes where relay_key = ${relayKey}`
        expect(pending).toEqual([{ state: "pending" }])
        expect(yield* sql<{ state: string }>`select state from closes where relay_key = ${otherRelayKey}`).toEqual([
          { state: "pending" },
        ])
        // What the dead runner left: each queue's backstop tick, not yet delivered.
        const backstops = (yield* messages("Tick")).filter((t) => !t.processed)
        for (const queue of queues) expect(backstops.map((t) => t.entity_id)).toContain(queue)

        // Restart; blocks resume; the close completes.
        service = yield* start(h.env)
        h.mining = true
        yield* eventually(
          "the close final",
          sql<{ state: string }>`select state from closes where relay_key = ${relayKey}`,
          (r) => r[0]?.state === "final",
        ).pipe(Effect.tapError(() => Effect.sync(() => console.error(service.output()))))
        yield* eventually(
          "the other close final",
          sql<{ state: string }>`select state from closes where relay_key = ${otherRelayKey}`,
          (r) => r[0]?.state === "final",
        )
        // The backstop ticks the dead runner left pending are delivered by the restarted one, each when it is due
        // (up to the backstop interval after it was scheduled): the closes can end first, their queues started by
        // the runners' adoption of queues with open closes, so this waits for the delivery rather than assuming it.
        yield* eventually(
          "the backstop ticks pending at the crash delivered",
          Effect.map(messages("Tick"), (ticks) => ticks.filter((t) => t.processed).map((t) => t.id)),
          (processed) =>
            queues.every((queue) => backstops.some((t) => t.entity_id === queue && processed.includes(t.id))),
        )
        const after = yield* escrow
        expect(after === undefined || after.closing === false).toBe(true)
        yield* stopService(service)
        yield* Fiber.interrupt(miner)

        // Exactly once: one OrderClosed for the order, one payout, one transaction, one close.final.
        const logs = yield* Effect.promise(() =>
          chain.pub.getLogs({
            address: chain.escrow,
            event: getAbiItem({ abi: settlementEscrowAbi, name: "OrderClosed" }),
            args: { orderId: orderId as `0x${string}` },
            fromBlock: 0n,
          }),
        )
        expect(logs).toHaveLength(1)
        expect(yield* depositsOf).toBe(depositsBefore + 5n * USDC)
        const [req] = yield* request
        expect(req!.status).toBe("final")
        const attempts = yield* sql<{ n: string }>`
          select count(*)::text as n from relayer_attempts where request_id = ${req!.id}`
        expect(attempts[0]!.n).toBe("1")
        const journal = yield* sql<{ kind: string; n: string }>`
          select kind, count(*)::text as n from journal where kind like 'close.%' and payload->>'order_id' = ${orderId}
          group by kind order by kind`
        expect(journal).toEqual([
          { kind: "close.final", n: "1" },
          { kind: "close.pending", n: "1" },
        ])
        yield* expectJournalGapless
      }),
    540_000,
  )
})
