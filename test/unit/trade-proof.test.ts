import { hashTypedData } from "viem"
import { describe, expect, it } from "vitest"
import { DevelopmentConfig } from "../../src/DevelopmentConfig.ts"
import { fillTypedData, quoteSetTypedData } from "../../src/Domain/EscrowTypedData.ts"
import {
  buildTradeProof,
  parseWireFill,
  type SettlementTransaction,
  sortTransactions,
  type TradeProofInput,
} from "../../src/Domain/TradeProof.ts"
import {
  type ProofJson,
  type SignedTrade,
  signTrade,
  verifyTradeProofOffline,
  wireFill,
} from "../support/TradeFixtures.ts"

const [hl, aster] = DevelopmentConfig.venues as unknown as [
  { id: string; chain_id: number; token: string; escrow: string },
  { id: string; chain_id: number; token: string; escrow: string },
]

const txs: Array<SettlementTransaction> = [
  { kind: "claim_payment", chain_id: aster.chain_id, hash: "0x04", block_number: 9 },
  { kind: "claim", chain_id: hl.chain_id, hash: "0x03", block_number: 7 },
  { kind: "lock", chain_id: hl.chain_id, hash: "0x01", block_number: 5 },
  { kind: "pay", chain_id: aster.chain_id, hash: "0x02", block_number: 8 },
]

/** The proof input as the history route assembles it from the stored rows. */
const inputOf = (t: SignedTrade, over: Partial<TradeProofInput> = {}): TradeProofInput => {
  const q = t.quoteSet.quotes[0]!
  return {
    makerChainId: t.maker.chain_id,
    makerEscrow: t.maker.escrow,
    quoteSet: {
      orderId: t.orderId,
      sequence: t.quoteSet.sequence.toString(),
      generation: t.quoteSet.generation.toString(),
      quoteSize: t.quoteSet.quoteSize.toString(),
      validUntil: t.quoteSet.validUntil.toString(),
      quotes: [
        {
          chain_id: Number(q.chainId),
          token: q.token.toLowerCase(),
          recipient: q.recipient.toLowerCase(),
          supply: q.supply.toString(),
          receive: q.receive.toString(),
          min_fill: q.minFill.toString(),
        },
      ],
      signature: t.quoteSignature,
      signer: t.quoteSigner.address,
    },
    fill: wireFill(t.fill),
    fillSignature: t.fillSignature,
    payer: t.payer.address,
    quoteIndex: 0,
    secret: t.secret,
    transactions: txs,
    ...over,
  }
}

const amounts = (t: SignedTrade) => ({ amount_in: t.fill.amountIn.toString(), amount_out: t.fill.amountOut.toString() })
const proofOf = (input: TradeProofInput) => JSON.parse(JSON.stringify(buildTradeProof(input))) as ProofJson

describe("trade proof", () => {
  it("a proof built from stored rows verifies offline with viem alone (both directions)", async () => {
    for (const [maker, taker] of [
      [hl, aster],
      [aster, hl],
    ] as const) {
      const t = await signTrade({ maker, taker, amountIn: 123_456_789n })
      const proof = proofOf(inputOf(t))
      expect(await verifyTradeProofOffline(amounts(t), proof)).toEqual([])
      expect(proof.fill.typed_data.domain).toEqual({
        name: "SettlementEscrow",
        version: "1",
        chainId: taker.chain_id,
        verifyingContract: expect.stringMatching(new RegExp(taker.escrow.slice(2), "i")),
      })
      expect(proof.quote_set?.typed_data.domain.chainId).toBe(maker.chain_id)
      expect(proof.transactions.map((x) => x.kind)).toEqual(["lock", "pay", "claim", "claim_payment"])
    }
  })

  it("the typed data is the one that was signed (same digests as the builders)", async () => {
    const t = await signTrade({ maker: hl, taker: aster, amountIn: 10n ** 9n })
    const proof = proofOf(inputOf(t))
    // biome-ignore lint/suspicious/noExplicitAny: wire typed data into viem as a client would
    expect(hashTypedData(proof.fill.typed_data as any)).toBe(hashTypedData(fillTypedData(t.fill)))
    // biome-ignore lint/suspicious/noExplicitAny: idem
    expect(hashTypedData(proof.quote_set!.typed_data as any)).toBe(
      hashTypedData(quoteSetTypedData(hl.chain_id, hl.escrow as `0x${string}`, t.quoteSet)),
    )
  })

  it("offline verification catches a wrong secret, signer, signature, amount, order or price", async () => {
    const t = await signTrade({ maker: hl, taker: aster, amountIn: 5_000_000n })
    const other = await signTrade({ maker: hl, taker: aster, amountIn: 5_000_000n })
    const cases: Array<[string, TradeProofInput]> = [
      ["secret", inputOf(t, { secret: other.secret })],
      ["fill signature", inputOf(t, { payer: other.payer.address })],
      ["fill signature", inputOf(t, { fillSignature: other.fillSignature })],
      ["quote set signature", inputOf(t, { quoteSet: { ...inputOf(t).quoteSet!, signer: other.quoteSigner.address } })],
      ["order", inputOf(t, { quoteSet: { ...inputOf(other).quoteSet!, orderId: other.orderId } })],
    ]
    for (const [check, input] of cases) {
      expect(await verifyTradeProofOffline(amounts(t), proofOf(input)), check).toContain(check)
    }
    expect(await verifyTradeProofOffline({ ...amounts(t), amount_out: "1" }, proofOf(inputOf(t)))).toContain("amounts")
    // A fill that pays more than the quote allows, even when properly signed, fails the price check.
    const greedy = await signTrade({ maker: hl, taker: aster, amountIn: 1_000n, supply: 100n, receive: 100n })
    const overpaid = { ...greedy.fill, amountOut: 1_001n }
    const signed = await greedy.payer.signTypedData(fillTypedData(overpaid))
    const bad = proofOf(inputOf(greedy, { fill: wireFill(overpaid), fillSignature: signed }))
    expect(await verifyTradeProofOffline({ amount_in: "1000", amount_out: "1001" }, bad)).toEqual(["price"])
  })

  it("parses the stored Fill in wire form, or inside a full typed-data object, and refuses junk", async () => {
    const t = await signTrade({ maker: aster, taker: hl, amountIn: 42n })
    expect(parseWireFill(wireFill(t.fill))).toEqual({
      ...t.fill,
      makerEscrow: expect.any(String),
      takerEscrow: expect.any(String),
      payer: expect.any(String),
      payee: expect.any(String),
      recipient: expect.any(String),
    })
    expect(hashTypedData(fillTypedData(parseWireFill(wireFill(t.fill))))).toBe(hashTypedData(fillTypedData(t.fill)))
    const full = { ...fillTypedData(t.fill), message: wireFill(t.fill) }
    expect(hashTypedData(fillTypedData(parseWireFill(full)))).toBe(hashTypedData(fillTypedData(t.fill)))
    for (const junk of [null, {}, { ...wireFill(t.fill), amountIn: "-1" }, { ...wireFill(t.fill), toMargin: "yes" }]) {
      expect(() => parseWireFill(junk)).toThrow()
    }
  })

  it("transactions sort in settlement order, then by block", () => {
    expect(sortTransactions(txs).map((x) => x.hash)).toEqual(["0x01", "0x02", "0x03", "0x04"])
    const twoClaims = sortTransactions([
      { kind: "claim", chain_id: 1, hash: "b", block_number: 9 },
      { kind: "claim", chain_id: 1, hash: "a", block_number: 3 },
    ])
    expect(twoClaims.map((x) => x.hash)).toEqual(["a", "b"])
  })
})
