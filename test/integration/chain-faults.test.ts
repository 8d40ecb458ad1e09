import { SqlClient } from "@effect/sql"
import { expect, layer } from "@effect/vitest"
import { Effect, Fiber } from "effect"
import { type Address, encodeFunctionData } from "viem"
import { makeTxRelayer } from "../../actors/TxRelayer.ts"
import { makeVenueWatcher } from "../../actors/VenueWatcher.ts"
import { mockUSDCAbi } from "../../src/Chain/artifacts/index.ts"
import { AppConfig } from "../../src/Config.ts"
import { Relayer } from "../../src/Relayer.ts"
import { account, key, venueEntry } from "../support/ChainDevnet.ts"
import { faultControl, faultyTransport, holdCalls } from "../support/ChainFaults.ts"
import { chainStack, TestChainTag } from "../support/ChainStack.ts"
import { rawRequest } from "../support/Http.ts"
import { pollUntil } from "../support/Poll.ts"
import { baseUrl } from "../support/TestServer.ts"

// Interval mining (1 s blocks), finalized = latest - 2, freshness 3 s: /health can be 200 and must
// turn 503 within seconds of a fault.
const control = faultControl()
const OPERATOR = 7
const Live = chainStack({
  anvil: { slotsInAnEpoch: 1, blockTime: 1 },
  config: (c) => ({
    venues: [
      venueEntry(c, "hyperliquid", {
        watcher: { poll_ms: 200, freshness_seconds: 3, integrity_interval_seconds: 3600, min_operator_gas: "10000" },
        relayer: { poll_ms: 100, allow: [{ contract: c.token, functions: ["mint(address,uint256)"] }] },
      }),
    ],
    operator_key: key(OPERATOR),
  }),
  transport: faultyTransport(control),
})

interface Health {
  status: string
  ready: boolean
  pending_transactions: number
  chains: Array<{ ready: boolean; error: string; block: string; checked_at: string | null }>
}

/**
 * Polls /health until it answers `status` (HTTP code) and `also` holds of its body; fails after `seconds`. A 503 for
 * a fault is awaited with the fault's reason: the chain can first read stale (no successful check within the 3 s
 * freshness) when the watcher's failing poll is late, e.g. on a busy machine or under TEST_WATCHER_LAG_MS=3000.
 */
const healthBecomes = (status: 200 | 503, seconds: number, also: (h: Health) => boolean = () => true) =>
  Effect.gen(function* () {
    const url = `${yield* baseUrl}/health`
    const res = yield* pollUntil(rawRequest(url), (r) => r.status === status && also(r.json as Health), {
      every: "100 millis",
      within: `${seconds} seconds`,
    })
    return res.json as Health
  })

/** The chain's reason for not being ready matches `pattern`. */
const reason = (pattern: RegExp) => (h: Health) => pattern.test(h.chains[0]?.error ?? "")

/** Runs the venue's watcher loop (as its singleton would) for the duration of `effect`. */
const withWatcher = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.gen(function* () {
    const { deployment } = yield* AppConfig
    const { run } = yield* makeVenueWatcher(deployment.venues[0])
    const fiber = yield* Effect.fork(run)
    return yield* effect.pipe(Effect.ensuring(Fiber.interrupt(fiber)))
  })

const withRelayer = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.gen(function* () {
    const { deployment } = yield* AppConfig
    const { run } = yield* makeTxRelayer(deployment.venues[0])
    const fiber = yield* Effect.fork(run)
    return yield* effect.pipe(Effect.ensuring(Fiber.interrupt(fiber)))
  })

/** A relayer request under `key`: mint 1 token unit to the address numbered `to`. */
const submitMint = (key: string, to: number) =>
  Effect.gen(function* () {
    const c = yield* TestChainTag
    const r = yield* Relayer
    return yield* r.submit({
      idempotencyKey: key,
      venue: "hyperliquid",
      to: c.token,
      data: encodeFunctionData({
        abi: mockUSDCAbi,
        functionName: "mint",
        args: [`0x${to.toString(16).padStart(40, "0")}` as Address, 1n],
      }),
    })
  })

const heal = Effect.sync(() => {
  control.mode = "ok"
})

layer(Live, { timeout: "180 seconds", excludeTestServices: true })("chain faults and /health", (it) => {
  it.effect("an unreachable RPC makes the chain not ready (503) and it recovers when the RPC heals", () =>
    withWatcher(
      Effect.gen(function* () {
        const ok = yield* healthBecomes(200, 20)
        expect(ok.status).toBe("ok")
        expect(ok.chains[0]!.ready).toBe(true)
        control.mode = "unreachable"
        const down = yield* healthBecomes(503, 5, reason(/^rpc eth_/))
        expect(down.status).toBe("degraded")
        expect(down.chains[0]!.ready).toBe(false)
        expect(down.chains[0]!.error).toMatch(/^rpc eth_/)
        yield* heal
        const back = yield* healthBecomes(200, 20)
        expect(back.chains[0]!.error).toBe("")
      }).pipe(Effect.ensuring(heal)),
    ),
  )

  it.effect("an RPC answering errors makes the chain not ready and it recovers", () =>
    withWatcher(
      Effect.gen(function* () {
        yield* healthBecomes(200, 20)
        control.mode = "error"
        const down = yield* healthBecomes(503, 5, reason(/internal error/i))
        expect(down.chains[0]!.error).toMatch(/internal error/i)
        yield* heal
        yield* healthBecomes(200, 20)
      }).pipe(Effect.ensuring(heal)),
    ),
  )

  it.effect("an RPC serving a stale head makes the chain not ready once past the freshness threshold", () =>
    withWatcher(
      Effect.gen(function* () {
        yield* healthBecomes(200, 20)
        control.mode = "stale"
        const down = yield* healthBecomes(503, 8, reason(/^head /))
        expect(down.chains[0]!.error).toMatch(/^head \d+ unchanged for \d+ s$/)
        yield* heal
        const back = yield* healthBecomes(200, 20)
        expect(BigInt(back.chains[0]!.block)).toBeGreaterThan(BigInt(down.chains[0]!.block))
      }).pipe(Effect.ensuring(heal)),
    ),
  )

  it.effect("operator gas below the configured minimum makes the chain not ready", () =>
    withWatcher(
      Effect.gen(function* () {
        const c = yield* TestChainTag
        const operator = account(OPERATOR).address
        const balance = yield* Effect.promise(() => c.pub.getBalance({ address: operator }))
        yield* healthBecomes(200, 20)
        yield* Effect.promise(() => c.test.setBalance({ address: operator, value: 9999n }))
        const down = yield* healthBecomes(503, 5, reason(/^operator gas /))
        expect(down.chains[0]!.error).toBe("operator gas 9999 below the minimum 10000")
        yield* Effect.promise(() => c.test.setBalance({ address: operator, value: balance }))
        yield* healthBecomes(200, 10)
      }),
    ),
  )

  it.effect("32 pending transactions make the service not ready; draining them makes it ready", () =>
    withWatcher(
      Effect.gen(function* () {
        const r = yield* Relayer
        yield* healthBecomes(200, 20)
        const keys = Array.from({ length: 32 }, (_, i) => `queue-${i}`)
        yield* Effect.forEach(keys, (k, i) => submitMint(k, 0xc0de00 + i))
        const down = yield* healthBecomes(503, 5)
        expect(down.pending_transactions).toBe(32)
        expect(down.chains[0]!.ready).toBe(true)
        yield* withRelayer(
          Effect.forEach(keys, (k) => r.awaitOutcome(k, { until: "included", timeout: "30 seconds" }), {
            concurrency: "unbounded",
          }),
        )
        const back = yield* healthBecomes(200, 10)
        expect(back.pending_transactions).toBe(0)
      }),
    ),
  )

  it.effect("the tip is asked for directly; a node without the method gets viem's fallback", () =>
    Effect.gen(function* () {
      const r = yield* Relayer
      const mint = (k: string, i: number) => submitMint(k, 0xf00d00 + i)
      const included = (k: string) => withRelayer(r.awaitOutcome(k, { until: "included", timeout: "30 seconds" }))
      yield* mint("tip-direct", 1)
      control.calls.clear()
      yield* included("tip-direct")
      expect(control.calls.get("eth_maxPriorityFeePerGas") ?? 0).toBeGreaterThan(0)
      expect(control.calls.get("eth_gasPrice") ?? 0).toBe(0)
      // Method not found (terminal): viem's fallback prices the tip from eth_gasPrice − the base fee.
      control.failMethodAfter = { method: "eth_maxPriorityFeePerGas", after: 0, code: -32601 }
      yield* mint("tip-fallback", 2)
      control.calls.clear()
      yield* included("tip-fallback").pipe(Effect.ensuring(Effect.sync(() => (control.failMethodAfter = undefined))))
      expect(control.calls.get("eth_gasPrice") ?? 0).toBeGreaterThan(0)
    }),
  )

  it.effect("a new request goes out while a follow pass waits on a slow RPC answer", () =>
    withRelayer(
      Effect.gen(function* () {
        const c = yield* TestChainTag
        const r = yield* Relayer
        const balance = (to: number) =>
          Effect.promise(() =>
            c.pub.readContract({
              abi: mockUSDCAbi,
              address: c.token,
              functionName: "balanceOf",
              args: [`0x${to.toString(16).padStart(40, "0")}` as Address],
            }),
          )
        yield* submitMint("slow-follow-a", 0x51000a)
        yield* r.awaitOutcome("slow-follow-a", { until: "included", timeout: "30 seconds" })
        // A is open until final (2 blocks): each follow pass reads the nonce count at the finalized block, a block
        // number (a send reads it only at "latest"). Those answers are held, so the follow pass in progress waits.
        const hold = holdCalls(
          control,
          (method, params) => method === "eth_getTransactionCount" && Array.isArray(params) && params[1] !== "latest",
        )
        yield* Effect.gen(function* () {
          for (let i = 0; i < 100 && hold.waiting() === 0; i++) yield* Effect.sleep("50 millis")
          expect(hold.waiting()).toBeGreaterThan(0)
          yield* submitMint("slow-follow-b", 0x51000b)
          // B is signed, sent and mined (1 s blocks) while that follow pass is still held.
          let minted = 0n
          for (let i = 0; i < 100 && minted === 0n; i++) {
            yield* Effect.sleep("100 millis")
            minted = yield* balance(0x51000b)
          }
          expect(minted).toBe(1n)
          expect(hold.waiting()).toBeGreaterThan(0)
        }).pipe(Effect.ensuring(Effect.sync(hold.release)))
        for (const k of ["slow-follow-a", "slow-follow-b"]) {
          expect((yield* r.awaitOutcome(k, { timeout: "30 seconds" })).status).toBe("final")
        }
      }),
    ),
  )

  it.effect("pg_terminate_backend of the service's connections: watcher, relayer and /health recover", () =>
    withWatcher(
      withRelayer(
        Effect.gen(function* () {
          const c = yield* TestChainTag
          const r = yield* Relayer
          const sql = yield* SqlClient.SqlClient
          yield* healthBecomes(200, 20)
          const before = yield* sql<{ checked_at: Date }>`select checked_at from chain_status`
          let killed = 0
          for (let round = 0; round < 3; round++) {
            const rows = yield* sql<{ ok: boolean }>`
              select pg_terminate_backend(pid) as ok from pg_stat_activity
              where application_name = 'settlement' and pid <> pg_backend_pid()`
            killed += rows.length
            yield* Effect.sleep("300 millis")
          }
          expect(killed).toBeGreaterThan(1)
          yield* r.submit({
            idempotencyKey: "after-terminate",
            venue: "hyperliquid",
            to: c.token,
            data: encodeFunctionData({
              abi: mockUSDCAbi,
              functionName: "mint",
              args: [account(6).address, 5n],
            }),
          })
          const outcome = yield* r.awaitOutcome("after-terminate", { timeout: "40 seconds" })
          expect(outcome.status).toBe("final")
          yield* healthBecomes(200, 20)
          const after = yield* sql<{ checked_at: Date }>`select checked_at from chain_status`
          expect(after[0]!.checked_at.getTime()).toBeGreaterThan(before[0]!.checked_at.getTime())
        }),
      ),
    ),
  )
})
