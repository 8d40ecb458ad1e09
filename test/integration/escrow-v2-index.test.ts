import { SqlClient } from "@effect/sql"
import { expect, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import {
  type Abi,
  type Address,
  createWalletClient,
  custom,
  getAddress,
  type Hex,
  http,
  keccak256,
  toHex,
  zeroHash,
} from "viem"
import type { PrivateKeyAccount } from "viem/accounts"
import { makeVenueWatcher } from "../../actors/VenueWatcher.ts"
import { ANVIL_PRIVATE_KEYS } from "../../infra/devnet/Anvil.ts"
import { mockUSDCAbi, settlementEscrowV2Abi } from "../../src/Chain/artifacts/index.ts"
import { ChainClients, type ChainTransportFactory } from "../../src/Chain/ChainClients.ts"
import { decodeV2Logs } from "../../src/Chain/EscrowLogsV2.ts"
import { FaultPoint } from "../../src/Chain/FaultPoint.ts"
import { AppConfig } from "../../src/Config.ts"
import {
  cancelFillTypedData,
  type FillV2,
  fillDigest,
  fillV2TypedData,
  fundOrderV2TypedData,
  orderKey,
  payTakeTypedData,
  type QuoteSetV2,
  quoteSetV2AbiArg,
  quoteSetV2TypedData,
} from "../../src/Domain/EscrowTypedDataV2.ts"
import { deriveHashlockSet, secretKeyOf } from "../../src/Domain/Hashlocks.ts"
import { DEVNET_TIMING_V2 } from "../../src/Domain/SettlementTimingV2.ts"
import { CursorMoved } from "../../src/Escrow/ChainIndex.ts"
import { ingestV2Page, v2Cursor } from "../../src/Escrow/ChainIndexV2.ts"
import { chainStatus } from "../../src/Escrow/ChainStatus.ts"
import { account, mine, startTestChain, type TestChain, venueEntry } from "../support/ChainDevnet.ts"
import { TestDatabaseLive } from "../support/Database.ts"
import { testAppConfig } from "../support/TestConfig.ts"

/**
 * The v2 event index on two real devnet chains (maker 999, taker 42161), each with SettlementEscrowV2 deployed beside
 * v1 by the devnet deploy (DEVNET_TIMING_V2): fund, lock, payTake, claimPayment, claim, cancelLock, refundPayment,
 * refund and a sticky close are indexed by the VenueWatcher into the v2 tables; a replayed page changes nothing; the
 * v1 index takes none of them.
 */

const chainsLive = Layer.unwrapScoped(
  Effect.gen(function* () {
    const start = (chainId: number, kind: "hyperliquid" | "aster") =>
      Effect.acquireRelease(
        Effect.promise(() => startTestChain({ chainId, kind, slotsInAnEpoch: 1 })),
        (c) => Effect.promise(() => c.anvil.stop()),
      )
    const [m, t] = yield* Effect.all([start(999, "hyperliquid"), start(42161, "aster")], { concurrency: 2 })
    const watcher = { page_blocks: 5, poll_ms: 50, integrity_interval_seconds: 3600 }
    const config = testAppConfig({
      venues: [
        venueEntry(m, "hyperliquid", { watcher, escrowV2: true }),
        venueEntry(t, "aster", { watcher, escrowV2: true }),
      ],
    })
    return Layer.mergeAll(ChainClients.layerWith(), FaultPoint.Noop).pipe(
      Layer.provideMerge(TestDatabaseLive),
      Layer.provideMerge(config),
      Layer.merge(Layer.succeed(TwoChains, { m, t })),
    )
  }),
)

import { Context } from "effect"

class TwoChains extends Context.Tag("test/TwoChains")<TwoChains, { readonly m: TestChain; readonly t: TestChain }>() {}

const operator = account(0)
const owner = account(1)
const payer = account(2)
const payKey = account(3)
const quoteSigner = account(5)
const payee = account(6).address
const recipient = account(7).address
const relayer = account(8)

let abi: Abi
const send = async (
  c: TestChain,
  from: PrivateKeyAccount,
  functionName: string,
  args: ReadonlyArray<unknown>,
  to?: Address,
) => {
  const wallet = createWalletClient({ account: from, chain: c.chain, transport: http(c.anvil.rpcUrl) })
  const address = to ?? c.escrowV2!
  const hash = await wallet.writeContract({
    address,
    abi: address === c.token ? (mockUSDCAbi as Abi) : abi,
    functionName,
    args,
  } as never)
  const rc = await c.pub.waitForTransactionReceipt({ hash, pollingInterval: 20, timeout: 20_000 })
  if (rc.status !== "success") throw new Error(`${functionName} reverted`)
  return rc
}
const now = async (c: TestChain) => (await c.pub.getBlock()).timestamp

/** Every table a v2 page writes (a refused replay must leave each as it was). */
const INDEX_TABLES_V2 = [
  "escrow_v2_orders",
  "escrow_v2_locks",
  "escrow_v2_payments",
  "escrow_v2_secrets",
  "escrow_v2_balances",
  "escrow_v2_events",
]

const rows = (table: string, venue: string) =>
  Effect.flatMap(
    SqlClient.SqlClient,
    (sql) => sql<Record<string, unknown>>`select * from ${sql(table)} where venue = ${venue} order by 2, 3`,
  )

const catchUp = (venueIndex: number) =>
  Effect.gen(function* () {
    const { deployment } = yield* AppConfig
    const venue = deployment.venues[venueIndex]!
    const w = (yield* makeVenueWatcher(venue)).handle
    for (let i = 0; i < 60; i++) {
      yield* w.poll
      const row = yield* chainStatus(venue.id)
      const v2 = yield* v2Cursor(venue.id)
      if (
        row?.finalizedBlock != null &&
        row.indexedBlock >= row.finalizedBlock &&
        v2 &&
        v2.indexedBlock >= row.finalizedBlock
      ) {
        return
      }
    }
    return yield* Effect.die(new Error(`watcher of ${venue.id} did not catch up`))
  })

layer(chainsLive, { timeout: "240 seconds", excludeTestServices: true })("v2 escrow index", (it) => {
  it.effect(
    "fund, lock, payTake, claimPayment, claim, cancelLock, refundPayment, refund and a sticky close are indexed",
    () =>
      Effect.gen(function* () {
        const { m, t } = yield* TwoChains
        expect(m.escrowV2, "the devnet deploys SettlementEscrowV2").toBeDefined()
        abi = settlementEscrowV2Abi
        const orderId = keccak256(toHex("v2-order-1"))
        const closedId = keccak256(toHex("v2-order-2"))
        const amount = 50_000_000n
        const fills = yield* Effect.promise(async () => {
          // Fund two orders on the maker chain (the owner holds devnet USDC).
          await send(m, owner, "approve", [m.escrowV2, 2n ** 255n], m.token)
          for (const id of [orderId, closedId]) {
            const order = {
              orderId: id,
              owner: owner.address,
              operator: operator.address,
              quoteSigner: quoteSigner.address,
              amount,
              deadline: (await now(m)) + 3600n,
            }
            const sig = await owner.signTypedData(fundOrderV2TypedData(m.chain.id, m.escrowV2!, order))
            await send(m, relayer, "fund", [order, sig, { value: 0n, deadline: 0n, v: 0, r: zeroHash, s: zeroHash }])
          }
          // The sticky close: the owner's own call on an order with everything available.
          await send(m, owner, "close", [closedId, 0, false])
          // A quote set of 3 hashlocks, paid on the taker chain's v2 escrow.
          const scope = {
            chainId: BigInt(m.chain.id),
            makerEscrow: m.escrowV2!,
            owner: owner.address,
            orderId,
            sequence: 1n,
          }
          const hs = deriveHashlockSet(secretKeyOf(ANVIL_PRIVATE_KEYS[5] as Hex), scope, 3)
          const issuedAt = await now(m)
          const set: QuoteSetV2 = {
            owner: owner.address,
            orderId,
            sequence: 1n,
            generation: 1n,
            quoteSize: amount,
            issuedAt,
            validUntil: issuedAt + 200n,
            hashlockRoot: hs.root,
            hashlockCount: 3,
            quotes: [
              {
                chainId: BigInt(t.chain.id),
                token: t.token,
                escrow: t.escrowV2!,
                recipient: payee,
                supply: 1n,
                receive: 1n,
                minFill: 1n,
              },
            ],
          }
          const quoteSig = await quoteSigner.signTypedData(quoteSetV2TypedData(m.chain.id, m.escrowV2!, set))
          const payBy = (await now(m)) + 100n
          const takerExpiry = payBy + BigInt(DEVNET_TIMING_V2.takerTimeoutMin)
          const fillOf = (i: number): FillV2 => ({
            fillId: keccak256(toHex(`v2-fill-${i}`)),
            owner: owner.address,
            orderId,
            sequence: 1n,
            makerChainId: BigInt(m.chain.id),
            makerEscrow: getAddress(m.escrowV2!),
            takerChainId: BigInt(t.chain.id),
            takerEscrow: getAddress(t.escrowV2!),
            payer: payer.address,
            payee,
            amountIn: 1_000_000n * BigInt(i + 1),
            recipient,
            amountOut: 1_000_000n * BigInt(i + 1),
            dex: 0,
            toMargin: false,
            hashlock: hs.hashlocks[i]!,
            hashlockIndex: i,
            payKey: payKey.address,
            payBy,
            makerExpiry: takerExpiry + BigInt(DEVNET_TIMING_V2.claimWindow),
            takerExpiry,
          })
          const fs = [0, 1, 2].map(fillOf)
          const sigs = await Promise.all(fs.map((f) => payer.signTypedData(fillV2TypedData(f))))
          for (const [i, f] of fs.entries()) {
            await send(m, operator, "lock", [f, sigs[i], quoteSetV2AbiArg(set), 0n, quoteSig, hs.proof(i)])
          }
          const [a, b, c] = fs.map(fillDigest) as [Hex, Hex, Hex]
          // B: the pay key cancels before authorising.
          await send(m, relayer, "cancelLock", [
            b,
            await payKey.signTypedData(cancelFillTypedData(m.chain.id, m.escrowV2!, b)),
          ])
          // A and C paid in one take on the taker chain.
          await send(t, payer, "approve", [t.escrowV2, 2n ** 255n], t.token)
          const payKeySig = await payKey.signTypedData(payTakeTypedData(t.chain.id, t.escrowV2!, [a, c]))
          await send(t, relayer, "payTake", [
            [fs[0], fs[2]],
            [sigs[0], sigs[2]],
            payKeySig,
            { value: 0n, deadline: 0n, v: 0, r: zeroHash, s: zeroHash },
          ])
          // A: the maker reveals on the taker chain, the claim follows on the maker chain.
          await send(t, quoteSigner, "claimPayment", [a, hs.secrets[0]])
          await send(m, relayer, "claim", [a, hs.secrets[0]])
          // C: nobody reveals; both sides refund after their expiries.
          for (const [chain, digest, fn, expiry] of [
            [t, c, "refundPayment", fs[2]!.takerExpiry],
            [m, c, "refund", fs[2]!.makerExpiry],
          ] as const) {
            await chain.test.setNextBlockTimestamp({ timestamp: expiry + 1n })
            await chain.test.mine({ blocks: 1 })
            await send(chain, relayer, fn, [digest])
          }
          await m.test.mine({ blocks: 3 })
          await t.test.mine({ blocks: 3 })
          return { fs, digests: [a, b, c], secret: hs.secrets[0]! }
        })
        yield* catchUp(0)
        yield* catchUp(1)

        const [a, b, c] = fills.digests as [Hex, Hex, Hex]
        const lc = (s: string) => s.toLowerCase()
        const orders = yield* rows("escrow_v2_orders", "hyperliquid")
        expect(orders).toHaveLength(2)
        const o1 = orders.find((o) => o.order_id === lc(orderId))!
        expect(o1).toMatchObject({
          owner: lc(owner.address),
          order_key: lc(orderKey(owner.address, orderId)),
          operator: lc(operator.address),
          quote_signer: lc(quoteSigner.address),
          // 1 claimed (A) out, 2 cancelled (B) and 3 refunded (C) back to available.
          available: (amount - 1_000_000n).toString(),
          locked: "0",
          close_requested: false,
        })
        expect(orders.find((o) => o.order_id === lc(closedId))).toMatchObject({
          available: "0",
          locked: "0",
          close_requested: true,
          close_dex: "0",
          close_to_margin: false,
        })
        const locks = yield* rows("escrow_v2_locks", "hyperliquid")
        const lock = (d: Hex) => locks.find((l) => l.fill_digest === lc(d))!
        expect(locks).toHaveLength(3)
        expect(lock(a)).toMatchObject({
          state: "claimed",
          owner: lc(owner.address),
          order_id: lc(orderId),
          amount_out: "1000000",
          amount_in: "1000000",
          recipient: lc(recipient),
          hashlock: lc(fills.fs[0]!.hashlock),
          expiry: fills.fs[0]!.makerExpiry.toString(),
          pay_key: lc(payKey.address),
          pay_by: fills.fs[0]!.payBy.toString(),
          secret: lc(fills.secret),
          refused: false,
        })
        expect(lock(b)).toMatchObject({ state: "cancelled", amount_out: "2000000", secret: null, to_owner: false })
        expect(lock(c)).toMatchObject({ state: "refunded", amount_out: "3000000", secret: null, to_owner: false })
        const payments = yield* rows("escrow_v2_payments", "aster")
        const payment = (d: Hex) => payments.find((p) => p.fill_digest === lc(d))!
        expect(payments).toHaveLength(2)
        expect(payment(a)).toMatchObject({
          state: "claimed",
          payer: lc(payer.address),
          payee: lc(payee),
          amount_in: "1000000",
          hashlock: lc(fills.fs[0]!.hashlock),
          expiry: fills.fs[0]!.takerExpiry.toString(),
          secret: lc(fills.secret),
        })
        expect(payment(c)).toMatchObject({ state: "refunded", amount_in: "3000000", secret: null })
        const secrets = [
          ...(yield* rows("escrow_v2_secrets", "hyperliquid")),
          ...(yield* rows("escrow_v2_secrets", "aster")),
        ]
        expect(secrets.map((s) => [s.venue, s.event, s.fill_digest, s.hashlock, s.secret]).sort()).toEqual(
          [
            ["aster", "PaymentClaimed", lc(a), lc(fills.fs[0]!.hashlock), lc(fills.secret)],
            ["hyperliquid", "Claimed", lc(a), lc(fills.fs[0]!.hashlock), lc(fills.secret)],
          ].sort(),
        )
        // v1 indexing is unchanged: none of the v2 escrow's events are in the v1 tables.
        const sql = yield* SqlClient.SqlClient
        const v1 = yield* sql<{ n: string }>`
          select count(*)::text as n from escrow_events where contract in (${lc(m.escrowV2!)}, ${lc(t.escrowV2!)})`
        expect(v1[0]!.n).toBe("0")
        const events = yield* sql<{
          event: string
        }>`select event from escrow_v2_events order by venue, block_number, log_index`
        expect(new Set(events.map((e) => e.event))).toEqual(
          new Set([
            "OrderFunded",
            "CloseRequested",
            "OrderClosed",
            "Locked",
            "LockCancelled",
            "Claimed",
            "Refunded",
            "Paid",
            "PaymentClaimed",
            "PaymentRefunded",
          ]),
        )

        // Replaying a page: refused by the cursor, nothing changes.
        const snapshot = yield* Effect.all(INDEX_TABLES_V2.map((tname) => rows(tname, "hyperliquid")))
        const deployBlock = BigInt(m.deployment.contracts.escrowV2!.block)
        const head = (yield* v2Cursor("hyperliquid"))!.indexedBlock
        const logs = yield* Effect.promise(() =>
          m.pub.getLogs({ address: m.escrowV2!, fromBlock: deployBlock, toBlock: head }),
        )
        const replay = yield* ingestV2Page({
          venue: "hyperliquid",
          fromBlock: deployBlock,
          toBlock: head,
          toHash: (yield* Effect.promise(() => m.pub.getBlock({ blockNumber: head }))).hash!,
          events: decodeV2Logs(logs, m.escrowV2!),
        }).pipe(Effect.flip)
        expect(replay).toBeInstanceOf(CursorMoved)
        const after = yield* Effect.all(INDEX_TABLES_V2.map((tname) => rows(tname, "hyperliquid")))
        expect(after).toEqual(snapshot)
        // A fresh poll re-reads nothing already indexed.
        yield* catchUp(0)
        expect(yield* rows("escrow_v2_locks", "hyperliquid")).toEqual(snapshot[1])
      }),
  )

  it.effect("a v1 page that fails does not hold the v2 index back: the two ingest side by side", () =>
    Effect.gen(function* () {
      const { m } = yield* TwoChains
      const { deployment } = yield* AppConfig
      const venue = deployment.venues[0]!
      yield* catchUp(0)
      yield* Effect.promise(() => mine(m, 3))
      // The node refuses the v1 escrow's logs (a terminal error: no retry); every other call is forwarded.
      const v1 = venue.escrow.toLowerCase()
      const refusingV1: ChainTransportFactory = (v) => {
        const upstream = http(v.rpc_urls[0], { retryCount: 0 })({ retryCount: 0 })
        return custom({
          request: ({ method, params }) => {
            const filter = (params as Array<{ address?: string | Array<string> }> | undefined)?.[0]
            const addresses = [filter?.address ?? []].flat().map((a) => a.toLowerCase())
            if (method === "eth_getLogs" && addresses.includes(v1)) {
              return Promise.reject(Object.assign(new Error("injected: v1 logs refused"), { code: -32601 }))
            }
            return upstream.request({ method, params } as never)
          },
        })
      }
      const before = (yield* chainStatus(venue.id))!.indexedBlock
      const finalized = (yield* Effect.promise(() => m.pub.getBlock({ blockTag: "finalized" }))).number
      expect(finalized).toBeGreaterThan(before)
      const w = (yield* makeVenueWatcher(venue).pipe(Effect.provide(ChainClients.layerWith(refusingV1)))).handle
      const failed = yield* Effect.flip(w.poll)
      expect(String((failed as { message?: string }).message)).toContain("injected: v1 logs refused")
      // The v1 cursor stayed; the v2 index reached the finalized head read by the same poll.
      expect((yield* chainStatus(venue.id))!.indexedBlock).toBe(before)
      expect((yield* v2Cursor(venue.id))!.indexedBlock).toBeGreaterThanOrEqual(finalized)
    }),
  )
})
