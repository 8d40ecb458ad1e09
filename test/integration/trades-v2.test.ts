/**
 * Trade history and proofs of settlement-v2 fills on two devnet chains (Hyperliquid-like 999 = the makers' chain,
 * Aster-like 42161 = the taker's), each with its SettlementEscrowV2, the real VenueWatchers (v2 index) and
 * TxRelayers, as test/integration/settlement-v2.test.ts drives a v2 take (test/support/TakesV2.ts rows, the
 * Settlement actor's v2 pass, the pay key's PayTake, each maker's own claimPayment). The settled fills are read
 * back from GET /v1/trades and GET /v1/trades/history and their proofs verified OFFLINE with
 * src/Domain/TradeProofV2.ts (viem alone); every transaction's receipt is on the named chain at the named block.
 */
import { SqlClient } from "@effect/sql"
import { expect, layer } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import { encodeFunctionData, type Hex } from "viem"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { chainTimes } from "../../actors/Settlement.ts"
import { sweepSettlementV2 } from "../../actors/SettlementV2.ts"
import { runTxRelayer } from "../../actors/TxRelayer.ts"
import { runVenueWatcher } from "../../actors/VenueWatcher.ts"
import { settlementEscrowV2Abi } from "../../src/Chain/artifacts/index.ts"
import { ChainClients } from "../../src/Chain/ChainClients.ts"
import { FaultPoint } from "../../src/Chain/FaultPoint.ts"
import { Relayer } from "../../src/Chain/Relayer.ts"
import { AppConfig } from "../../src/Config.ts"
import { type TradeProofV2Json, verifyTradeProofV2 } from "../../src/Domain/TradeProof.ts"
import { account, key, sendCalls, startTestChain, type TestChain, venueEntry } from "../support/ChainDevnet.ts"
import { TestDatabaseLive } from "../support/Database.ts"
import { rawRequest } from "../support/Http.ts"
import { pollUntil } from "../support/Poll.ts"
import { authorizePayment, type MakerOrderV2, makerOrderV2, signedTakeV2 } from "../support/TakesV2.ts"
import { testAppConfig } from "../support/TestConfig.ts"
import { baseUrl, TestHttpLive } from "../support/TestServer.ts"

const OPERATOR = 9
const operator = account(OPERATOR).address
const FUNDER = account(8)
const PAYER = account(3)
const M = "hyperliquid"
const T = "aster"

interface Env {
  readonly hl: TestChain
  readonly aster: TestChain
}
class TradesV2Env extends Context.Tag("test/TradesV2Env")<TradesV2Env, Env>() {}

const chainOf = (chainId: number, kind: "hyperliquid" | "aster") =>
  Effect.acquireRelease(
    Effect.promise(() => startTestChain({ chainId, kind })),
    (c) => Effect.promise(() => c.anvil.stop()),
  )

const fast = {
  watcher: { poll_ms: 100, confirmations: 2, integrity_interval_seconds: 3600 },
  relayer: { poll_ms: 100 },
  escrowV2: true,
}
const entry = (c: TestChain, id: string) => {
  const { legacy_escrow: _legacy, ...v } = venueEntry(c, id, fast)
  return v
}

const Live = Layer.unwrapScoped(
  Effect.gen(function* () {
    const [hl, aster] = yield* Effect.all([chainOf(999, "hyperliquid"), chainOf(42161, "aster")], { concurrency: 2 })
    const config = testAppConfig({
      venues: [entry(hl, M), entry(aster, T)],
      auth: { rpc_urls: [hl.anvil.rpcUrl] },
      operator_key: key(OPERATOR),
      settlement: { escrow_version: 2 },
    })
    const base = Layer.mergeAll(TestHttpLive, ChainClients.Live, FaultPoint.Noop, Relayer.Live).pipe(
      Layer.provideMerge(TestDatabaseLive),
      Layer.provideMerge(config),
    )
    const actors = Effect.gen(function* () {
      const { deployment } = yield* AppConfig
      for (const v of deployment.venues) {
        yield* Effect.forkScoped(runVenueWatcher(v))
        yield* Effect.forkScoped(runTxRelayer(v))
      }
      yield* Effect.forkScoped(
        Effect.promise(() => Promise.all([hl.test.mine({ blocks: 1 }), aster.test.mine({ blocks: 1 })])).pipe(
          Effect.zipRight(Effect.sleep("250 millis")),
          Effect.forever,
        ),
      )
      return { hl, aster }
    })
    return Layer.scoped(TradesV2Env, actors).pipe(Layer.provideMerge(base))
  }),
)

/** One settlement-v2 pass, as the singleton runs it. */
const pass = Effect.flatMap(AppConfig, ({ deployment }) =>
  sweepSettlementV2(chainTimes(deployment.venues.map((v) => v.id))),
)

const allIn = (takeId: string, state: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    Effect.map(
      sql<{ state: string }>`select state from fills where take_id = ${takeId}::uuid`,
      (rows) => rows.length > 0 && rows.every((r) => r.state === state),
    ),
  )

const settleUntil = <R>(what: string, done: Effect.Effect<boolean, unknown, R>) =>
  pollUntil(Effect.zipRight(pass, done), (ok) => ok, { every: "200 millis", within: "120 seconds" }).pipe(
    Effect.mapError((e) => new Error(`${what}: ${String(e)}`)),
  )

const fresh = () => privateKeyToAccount(generatePrivateKey()).address

const newMaker = (i: number) =>
  Effect.gen(function* () {
    const { hl, aster } = yield* TradesV2Env
    const signerKey = generatePrivateKey()
    return yield* makerOrderV2(hl, aster, {
      owner: account(i),
      signerKey,
      signer: privateKeyToAccount(signerKey),
      relayer: FUNDER,
      operator,
      payee: fresh(),
      amount: 5_000_000n,
      makerVenue: M,
      takerVenue: T,
    })
  })

/** The maker's reveal: its own claimPayment on the taker chain. */
const reveal = (order: MakerOrderV2, digest: Hex, index: number) =>
  Effect.gen(function* () {
    const { aster } = yield* TradesV2Env
    const data = encodeFunctionData({
      abi: settlementEscrowV2Abi,
      functionName: "claimPayment",
      args: [digest, order.hashlocks.secrets[index]!],
    })
    yield* Effect.promise(() => sendCalls(aster, order.owner, [{ to: aster.escrowV2!, data }]))
  })

interface Item {
  readonly id: string
  readonly from: string
  readonly to: string
  readonly amount_in: string
  readonly amount_out: string
  readonly order_id: string
  readonly proof: TradeProofV2Json & {
    readonly escrow_version: number
    readonly transactions: ReadonlyArray<{ kind: string; chain_id: number; hash: string; block_number: number }>
  }
}

layer(Live, { timeout: "300 seconds", excludeTestServices: true })("trades v2 on devnet", (it) => {
  it.effect("a settled v2 take over two makers lists in GET /v1/trades and history; proofs verify offline", () =>
    Effect.gen(function* () {
      const { hl, aster } = yield* TradesV2Env
      const base = yield* baseUrl
      const A = yield* newMaker(1)
      const B = yield* newMaker(6)
      const payKey = privateKeyToAccount(generatePrivateKey())
      const take = yield* signedTakeV2(hl, aster, {
        payer: PAYER,
        payKey: payKey.address,
        recipient: fresh(),
        parts: [
          { order: A, amountIn: 1_000_000n, amountOut: 1_000_000n, index: 2 },
          { order: B, amountIn: 400_000n, amountOut: 400_000n, index: 7 },
        ],
        makerVenue: M,
        takerVenue: T,
      })
      yield* settleUntil("the locks final", allIn(take.takeId, "locked"))
      yield* authorizePayment(aster, take, payKey)
      yield* settleUntil("the payment final", allIn(take.takeId, "paid"))
      yield* reveal(A, take.fills[0]!.digest, 2)
      yield* reveal(B, take.fills[1]!.digest, 7)
      yield* settleUntil("settled", allIn(take.takeId, "settled"))

      const recent = yield* rawRequest(`${base}/v1/trades?a=${M}&b=${T}`)
      expect(recent.status, recent.text).toBe(200)
      const listed = (recent.json as { trades: Array<{ id: string; from: string; amount_in: string }> }).trades
      for (const f of take.fills) {
        expect(listed.find((x) => x.id === f.id)).toMatchObject({ from: T, amount_in: f.fill.amountIn.toString() })
      }

      const res = yield* rawRequest(`${base}/v1/trades/history?a=${T}&b=${M}`)
      expect(res.status, res.text).toBe(200)
      const items = (res.json as { data: ReadonlyArray<Item> }).data
      for (const [i, f] of take.fills.entries()) {
        const item = items.find((x) => x.id === f.id)!
        expect(item, f.id).toMatchObject({
          from: T,
          to: M,
          order_id: f.order.orderId,
          amount_in: f.fill.amountIn.toString(),
          amount_out: f.fill.amountOut.toString(),
        })
        const proof = item.proof
        expect(yield* Effect.promise(() => verifyTradeProofV2(item, proof)), f.id).toEqual([])
        expect(proof.escrow_version).toBe(2)
        expect(proof.fill.digest).toBe(f.digest)
        expect(proof.quote_set?.hashlock_index).toBe(f.index)
        expect(proof.secret).toBe(f.order.hashlocks.secrets[f.index])
        // One PayTake for the take: both fills' proofs carry the same signature over both digests, in order.
        expect((proof.pay_authorization!.typed_data.message as { fills: Array<string> }).fills).toEqual(
          take.fills.map((x) => x.digest),
        )
        expect(proof.pay_authorization?.signer).toBe(payKey.address.toLowerCase())
        expect(
          proof.transactions.map((x) => [x.kind, x.chain_id]),
          `fill ${i}`,
        ).toEqual([
          ["lock", 999],
          ["pay", 42161],
          ["claim_payment", 42161],
          ["claim", 999],
        ])
        for (const tx of proof.transactions) {
          const chain = tx.chain_id === 999 ? hl : aster
          const receipt = yield* Effect.promise(() => chain.pub.getTransactionReceipt({ hash: tx.hash as Hex }))
          expect([receipt.status, Number(receipt.blockNumber)], tx.kind).toEqual(["success", tx.block_number])
        }
      }
      // Two fills, one payTake: the pay transactions are the same one.
      const pays = items
        .filter((x) => take.fills.some((f) => f.id === x.id))
        .map((x) => x.proof.transactions.find((t) => t.kind === "pay")!.hash)
      expect(new Set(pays).size).toBe(1)
    }),
  )
})
