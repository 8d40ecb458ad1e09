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
import { Effect } from "effect"
import type { Hex } from "viem"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { type TradeProofV2Json, verifyTradeProofV2 } from "../../src/Domain/TradeProof.ts"
import { rawRequest } from "../support/Http.ts"
import { pollUntil } from "../support/Poll.ts"
import {
  fresh,
  M,
  newMakerV2,
  PAYER,
  revealV2,
  SettleV2Env,
  settleUntil,
  settleV2ActorsLive,
  T,
} from "../support/SettleV2Actors.ts"
import { authorizePayment, signedTakeV2 } from "../support/TakesV2.ts"
import { baseUrl } from "../support/TestServer.ts"

const Live = settleV2ActorsLive({ escrow_version: 2 })

const allIn = (takeId: string, state: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    Effect.map(
      sql<{ state: string }>`select state from fills where take_id = ${takeId}::uuid`,
      (rows) => rows.length > 0 && rows.every((r) => r.state === state),
    ),
  )

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
      const { hl, aster } = yield* SettleV2Env
      const base = yield* baseUrl
      const A = yield* newMakerV2(1, 5_000_000n)
      const B = yield* newMakerV2(6, 5_000_000n)
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
      yield* revealV2(A, take.fills[0]!.digest, 2)
      yield* revealV2(B, take.fills[1]!.digest, 7)
      yield* settleUntil("settled", allIn(take.takeId, "settled"))
      // A fill settles on the relayer's final receipt of our claim (effectiveFactsV2), which can come a watcher poll
      // before the index has that block; a proof lists what the index saw (README, Trades). Once the index has each
      // fill's Claimed, every proof must be complete.
      const digests = take.fills.map((f) => f.digest.toLowerCase())
      yield* pollUntil(
        Effect.flatMap(
          SqlClient.SqlClient,
          (sql) => sql<{ n: number }>`
            select count(*)::int as n from escrow_v2_secrets
            where venue = ${M} and event = 'Claimed' and fill_digest in ${sql.in(digests)}`,
        ),
        (rows) => rows[0]?.n === digests.length,
        { every: "100 millis", within: "30 seconds" },
      )

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
        // A failure prints the index rows the proof is built from, so it explains itself.
        const indexRows = yield* Effect.flatMap(SqlClient.SqlClient, (sql) =>
          Effect.all([
            sql`select venue, event, tx_hash, block_number::text from escrow_v2_secrets where fill_digest = ${f.digest.toLowerCase()}`,
            sql`select venue, state, tx_hash from escrow_v2_locks where fill_digest = ${f.digest.toLowerCase()}`,
            sql`select state, settled_at::text from fills where id = ${f.id}::uuid`,
          ]),
        )
        expect(
          proof.transactions.map((x) => [x.kind, x.chain_id]),
          `fill ${i}; transactions ${JSON.stringify(proof.transactions)}; index rows ${JSON.stringify(indexRows)}`,
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
