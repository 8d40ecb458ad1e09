/**
 * Settlement throughput and latency versus the chains' own pace, in one run (issue 9 "Benchmark").
 *
 * Two anvil chains with the real contracts (999 = the makers' chain, 42161 = the takers'), finality = 2
 * confirmations (the watcher's rule), the service's VenueWatchers, TxRelayers and the Settlement actor
 * (runSettlement, secrets sealed as the takes routes store them). Mining, BENCH_MINING:
 *   interval (default): one block per second and nothing else, as on the devnet (`npm start`);
 *   auto: a block per transaction plus one every 250 ms (the integration tests' chains): finality comes as fast
 *         as transactions arrive, so the raw path measures little more than RPC round trips.
 * Then:
 *
 *   service: N signed takes of K fills each (one fill per maker order; rows with real signatures exactly as
 *            POST /v1/takes/{id}/signatures leaves them, test/support/Takes.ts) are written at once; the service
 *            drives every fill lock → (final) → pay → (final) → claim → claimPayment → (final) = `settled`.
 *            Per-fill latency = fills.settled_at − takes.signed_at (both the database clock).
 *   raw:     the same shape of N×K fills (own orders, operated by a funded key, and the same kind of signatures:
 *            the payer's Fill and permit, the maker's quote set), sent directly with viem by that key: lock, wait
 *            for its finality, pay, wait, claim, claimPayment, wait for the claimPayment's finality. All fills at
 *            once. Per-fill latency = from start to that final claimPayment. Run a second time waiting for the
 *            claim's finality before claimPayment, as the service's protocol does: the overhead over that run is
 *            the service's machinery alone (index, sweep, relayer), not the protocol's extra wait.
 *
 * Prints fills settled per second for both, their ratio (target ≥ 0.5), per-fill latency percentiles and the
 * median overhead of the service over the raw chain path (target < 1 s), with the load average (the machine may
 * be shared). BENCH_TAKES (default 8) and BENCH_FILLS (default 3) size the run; it ends by itself in a few minutes.
 */
import { loadavg } from "node:os"
import { TestRunner } from "@effect/cluster"
import { SqlClient } from "@effect/sql"
import { Context, Effect, Layer } from "effect"
import { type Address, encodeFunctionData, type Hex } from "viem"
import { generatePrivateKey, type PrivateKeyAccount, privateKeyToAccount } from "viem/accounts"
import { pendingKeys, SettlementLive } from "../../actors/Settlement.ts"
import { runTxRelayer } from "../../actors/TxRelayer.ts"
import { runVenueWatcher } from "../../actors/VenueWatcher.ts"
import { mockUSDCAbi } from "../../src/Chain/artifacts/index.ts"
import { ChainClients } from "../../src/Chain/ChainClients.ts"
import { FaultPoint } from "../../src/Chain/FaultPoint.ts"
import {
  claimCall,
  claimPaymentCall,
  lockCall,
  payCall,
  permitArg,
  quoteSetFromRow,
  type StoredQuote,
} from "../../src/Chain/SettlementCalls.ts"
import { wakeKeyed } from "../../src/Cluster/Keyed.ts"
import { Supervision } from "../../src/Cluster/Supervision.ts"
import { AppConfig } from "../../src/Config.ts"
import { Relayer } from "../../src/Relayer.ts"
import { Settlement } from "../../src/Settlement/Entity.ts"
import { account, key, sendCalls, startTestChain, type TestChain, venueEntry } from "../support/ChainDevnet.ts"
import { TestDatabaseLive } from "../support/Database.ts"
import { runKeyed } from "../support/KeyedActors.ts"
import { type MakerOrder, makerOrder, signedTake, type TakeFill } from "../support/Takes.ts"
import { testAppConfig } from "../support/TestConfig.ts"

const TAKES = Number(process.env.BENCH_TAKES ?? 8)
const FILLS = Number(process.env.BENCH_FILLS ?? 3)
const CONFIRMATIONS = 2
const INTERVAL = (process.env.BENCH_MINING ?? "interval") !== "auto"
/** The extra miner's period in auto mode. */
const BLOCK_MS = 250
const PER_FILL = 1_000_000n
const OPERATOR = 9
const RAW = account(5)
const FUNDER = account(8)
const MINTER = account(7)
const M = "hyperliquid"
const T = "aster"

class Chains extends Context.Tag("bench/Chains")<Chains, { readonly hl: TestChain; readonly aster: TestChain }>() {}

const chainOf = (chainId: number, kind: "hyperliquid" | "aster") =>
  Effect.acquireRelease(
    Effect.promise(() => startTestChain({ chainId, kind, ...(INTERVAL ? { blockTime: 1 } : {}) })),
    (c) => Effect.promise(() => c.anvil.stop()),
  )

const fast = {
  watcher: { poll_ms: 100, confirmations: CONFIRMATIONS, integrity_interval_seconds: 3600 },
  relayer: { poll_ms: 100 },
}
const entry = (c: TestChain, id: string) => {
  const { legacy_escrow: _legacy, ...v } = venueEntry(c, id, fast)
  return v
}

/** Both chains (mining per BENCH_MINING), the database, config, chain clients and Relayer; watchers and relayers running. */
const Live = Layer.unwrapScoped(
  Effect.gen(function* () {
    const [hl, aster] = yield* Effect.all([chainOf(999, "hyperliquid"), chainOf(42161, "aster")], { concurrency: 2 })
    const config = testAppConfig({
      venues: [entry(hl, M), entry(aster, T)],
      auth: { rpc_urls: [hl.anvil.rpcUrl] },
      operator_key: key(OPERATOR),
    })
    const base = Layer.mergeAll(ChainClients.Live, FaultPoint.Noop, Relayer.Live).pipe(
      Layer.provideMerge(TestDatabaseLive),
      Layer.provideMerge(config),
    )
    const background = Effect.gen(function* () {
      const { deployment } = yield* AppConfig
      for (const v of deployment.venues) {
        yield* Effect.forkScoped(runVenueWatcher(v))
        yield* Effect.forkScoped(runTxRelayer(v))
      }
      if (!INTERVAL) {
        yield* Effect.forkScoped(
          Effect.promise(() => Promise.all([hl.test.mine({ blocks: 1 }), aster.test.mine({ blocks: 1 })])).pipe(
            Effect.zipRight(Effect.sleep(`${BLOCK_MS} millis`)),
            Effect.forever,
          ),
        )
      }
      return { hl, aster }
    })
    return Layer.scoped(Chains, background).pipe(Layer.provideMerge(base))
  }),
)

// ------------------------------------------------------------------ setup helpers

const fresh = () => privateKeyToAccount(generatePrivateKey())

/** K maker orders on the maker chain, each holding N fills, operated by `operator`. */
const makers = (operator: Address, owner: PrivateKeyAccount) =>
  Effect.gen(function* () {
    const { hl, aster } = yield* Chains
    const out: Array<MakerOrder> = []
    for (let i = 0; i < FILLS; i++) {
      out.push(
        yield* makerOrder(hl, aster, {
          owner,
          signer: fresh(),
          relayer: FUNDER,
          operator,
          payee: fresh().address,
          amount: PER_FILL * BigInt(TAKES),
          makerVenue: M,
          takerVenue: T,
        }),
      )
    }
    return out
  })

/** N payers holding K fills' worth on the taker chain (one mint transaction each, from one key). */
const payers = Effect.gen(function* () {
  const { aster } = yield* Chains
  const list = Array.from({ length: TAKES }, fresh)
  yield* Effect.promise(() =>
    sendCalls(
      aster,
      MINTER,
      list.map((p) => ({
        to: aster.token,
        data: encodeFunctionData({
          abi: mockUSDCAbi,
          functionName: "mint",
          args: [p.address, PER_FILL * BigInt(FILLS)],
        }),
      })),
    ),
  )
  return list
})

const takeOf = (payer: PrivateKeyAccount, orders: ReadonlyArray<MakerOrder>) =>
  Effect.flatMap(Chains, ({ hl, aster }) =>
    signedTake(hl, aster, {
      payer,
      recipient: fresh().address,
      parts: orders.map((order) => ({ order, amountIn: PER_FILL, amountOut: PER_FILL })),
      makerVenue: M,
      takerVenue: T,
    }),
  )

// ------------------------------------------------------------------ the raw path: the same calls, sent directly

/** One sender per (chain, key): nonces assigned in order, receipts awaited concurrently. */
const sender = (c: TestChain, from: PrivateKeyAccount) => {
  let nonce: Promise<number> = c.pub.getTransactionCount({ address: from.address, blockTag: "pending" })
  const send = async (to: Address, data: Hex) => {
    const mine = nonce
    let release: (n: number) => void = () => undefined
    nonce = new Promise((r) => {
      release = r
    })
    const n = await mine
    try {
      const raw = await from.signTransaction({
        chainId: c.chain.id,
        type: "eip1559",
        to,
        data,
        gas: 1_000_000n,
        nonce: n,
        maxFeePerGas: 100_000_000_000n,
        maxPriorityFeePerGas: 1_000_000_000n,
      })
      const hash = await c.pub.request({ method: "eth_sendRawTransaction", params: [raw] })
      release(n + 1)
      const receipt = await c.pub.waitForTransactionReceipt({ hash, pollingInterval: 25, timeout: 120_000 })
      if (receipt.status !== "success") throw new Error(`raw ${hash} reverted`)
      return receipt.blockNumber
    } catch (e) {
      release(n)
      throw e
    }
  }
  return send
}

/** Until the chain's head is CONFIRMATIONS past `block` (the watcher's finality). */
const finalOn = async (c: TestChain, block: bigint) => {
  while ((await c.pub.getBlockNumber({ cacheTime: 0 })) < block + BigInt(CONFIRMATIONS)) {
    await new Promise((r) => setTimeout(r, 25))
  }
}

interface RawFill {
  readonly fill: TakeFill
  readonly fillSig: Hex
  readonly permit: ReturnType<typeof permitArg>
  readonly quoteSig: Hex
  readonly quoteSet: ReturnType<typeof quoteSetFromRow>
}

/** Signed takes' material for the raw path; their rows are removed so the service never sees them. */
const rawFills = (takes: ReadonlyArray<Effect.Effect.Success<ReturnType<typeof takeOf>>>) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const out: Array<RawFill> = []
    for (const t of takes) {
      const [row] = yield* sql<{ permit_signature: Hex }>`select permit_signature from takes where id = ${t.takeId}`
      const sigs = yield* sql<{
        id: string
        signature: Hex
      }>`select id, signature from fills where take_id = ${t.takeId}`
      for (const f of t.fills) {
        const [qs] = yield* sql<{
          order_id: string
          sequence: string
          identity_generation: string
          quote_size: string
          valid_until: Date
          quotes: ReadonlyArray<StoredQuote>
          signature: Hex
        }>`select order_id, sequence::text, identity_generation::text, quote_size::text, valid_until, quotes, signature
            from quote_sets where order_id = ${f.order.orderId} and sequence = 1`
        out.push({
          fill: f,
          fillSig: sigs.find((s) => s.id === f.id)!.signature,
          permit: permitArg(t.totalIn, t.takerExpiry, row!.permit_signature),
          quoteSig: qs!.signature,
          quoteSet: quoteSetFromRow(qs!),
        })
      }
      yield* sql`delete from fills where take_id = ${t.takeId}`
      yield* sql`delete from takes where id = ${t.takeId}`
    }
    return out
  })

/**
 * `claimFinal`: wait for the claim's finality before claimPayment, as the service's protocol does (it collects
 * the payment once the reveal is final in its index); without it, claimPayment follows the claim at once.
 */
const runRaw = (fills: ReadonlyArray<RawFill>, hl: TestChain, aster: TestChain, claimFinal: boolean) => {
  const onHl = sender(hl, RAW)
  const onAster = sender(aster, RAW)
  const t0 = performance.now()
  return Promise.all(
    fills.map(async (r) => {
      const start = performance.now()
      await finalOn(hl, await onHl(hl.escrow, lockCall(r.fill.fill, r.fillSig, r.quoteSet, 0, r.quoteSig)))
      await finalOn(aster, await onAster(aster.escrow, payCall(r.fill.fill, r.fillSig, r.permit)))
      const claimed = await onHl(hl.escrow, claimCall(r.fill.fillKey, r.fill.secret))
      if (claimFinal) await finalOn(hl, claimed)
      await finalOn(aster, await onAster(aster.escrow, claimPaymentCall(r.fill.fillKey, r.fill.secret)))
      return { latency: (performance.now() - start) / 1000, end: (performance.now() - t0) / 1000 }
    }),
  )
}

// ------------------------------------------------------------------ statistics

const pct = (xs: ReadonlyArray<number>, p: number) => {
  const s = [...xs].sort((a, b) => a - b)
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? Number.NaN
}
const f2 = (x: number) => x.toFixed(2)
const load = () =>
  loadavg()
    .map((x) => x.toFixed(2))
    .join(" ")

const program = Effect.gen(function* () {
  const { hl, aster } = yield* Chains
  const sql = yield* SqlClient.SqlClient
  const fills = TAKES * FILLS
  const mining = INTERVAL ? "a block every 1 s (devnet)" : `automine + a block every ${BLOCK_MS} ms`
  console.log(
    `settle bench: ${TAKES} takes × ${FILLS} fills = ${fills} fills; ${mining}, finality ${CONFIRMATIONS} confirmations; load ${load()}`,
  )

  // Raw first, while no Settlement actor runs (its takes' rows exist only between signing and extraction).
  const rawRun = (claimFinal: boolean) =>
    Effect.gen(function* () {
      const orders = yield* makers(RAW.address, account(2))
      const takes = []
      for (const p of yield* payers) takes.push(yield* takeOf(p, orders))
      const material = yield* rawFills(takes)
      const results = yield* Effect.promise(() => runRaw(material, hl, aster, claimFinal))
      return {
        n: material.length,
        span: Math.max(...results.map((r) => r.end)),
        latency: results.map((r) => r.latency),
      }
    })
  const { n: rawN, span: rawSpan, latency: rawLatency } = yield* rawRun(false)
  const matched = yield* rawRun(true)

  // The service: a Settlement entity per take drives its signed fills from now on.
  const serviceOrders = yield* makers(account(OPERATOR).address, account(1))
  const servicePayers = yield* payers
  // The escrow index must show the orders funded before a lock is decided on.
  yield* Effect.sleep(`${(INTERVAL ? 1000 : BLOCK_MS) * (CONFIRMATIONS + 2)} millis`)
  // A Settlement entity per take on an in-memory runner, each woken once its take is signed (as the route does).
  const cluster = yield* Layer.build(Layer.merge(TestRunner.layer, Supervision.Live))
  yield* Effect.forkScoped(runKeyed(SettlementLive, Settlement, pendingKeys).pipe(Effect.provide(cluster)))
  const takeIds: Array<string> = []
  for (const p of servicePayers) {
    const takeId = (yield* takeOf(p, serviceOrders)).takeId
    takeIds.push(takeId)
    yield* wakeKeyed(Settlement, takeId).pipe(Effect.provide(cluster))
  }
  const deadline = performance.now() + 300_000
  let rows: ReadonlyArray<{ state: string; latency: number; signed: number; settled: number }> = []
  for (;;) {
    rows = yield* sql<{ state: string; latency: number; signed: number; settled: number }>`
      select f.state, extract(epoch from f.settled_at - t.signed_at)::float8 as latency,
             extract(epoch from t.signed_at)::float8 as signed, extract(epoch from f.settled_at)::float8 as settled
        from fills f join takes t on t.id = f.take_id where f.take_id in ${sql.in(takeIds)} and f.final`
    if (rows.length === fills || performance.now() > deadline) break
    yield* Effect.sleep("100 millis")
  }
  const settled = rows.filter((r) => r.state === "settled")
  if (settled.length !== fills) {
    console.log(`service: only ${settled.length} of ${fills} fills settled (${rows.length} final) within 300 s`)
  }
  const serviceSpan = Math.max(...settled.map((r) => r.settled)) - Math.min(...rows.map((r) => r.signed))
  const serviceLatency = settled.map((r) => r.latency)

  const rawRate = rawN / rawSpan
  const serviceRate = settled.length / serviceSpan
  const overhead = pct(serviceLatency, 50) - pct(rawLatency, 50)
  console.log(
    `raw anvil (lock, pay, claim, claimPayment by one funded key): ${rawN} fills in ${f2(rawSpan)} s = ${f2(rawRate)} fills/s; latency p50 ${f2(pct(rawLatency, 50))} s p90 ${f2(pct(rawLatency, 90))} s max ${f2(Math.max(...rawLatency))} s`,
  )
  console.log(
    `service (Settlement + Relayer + watchers):              ${settled.length} fills in ${f2(serviceSpan)} s = ${f2(serviceRate)} fills/s; latency p50 ${f2(pct(serviceLatency, 50))} s p90 ${f2(pct(serviceLatency, 90))} s max ${f2(Math.max(...serviceLatency))} s`,
  )
  console.log(
    `raw, claim final before claimPayment (the service's protocol): ${matched.n} fills in ${f2(matched.span)} s = ${f2(matched.n / matched.span)} fills/s; latency p50 ${f2(pct(matched.latency, 50))} s; the service's median overhead over it ${f2(pct(serviceLatency, 50) - pct(matched.latency, 50))} s`,
  )
  console.log(
    `ratio service/raw ${f2(serviceRate / rawRate)} (target ≥ 0.5)  median overhead ${f2(overhead)} s (target < 1 s)  load ${load()}`,
  )
})

Effect.runPromise(Effect.scoped(program).pipe(Effect.provide(Live))).then(
  () => process.exit(0),
  (e: unknown) => {
    console.error(e)
    process.exit(1)
  },
)
