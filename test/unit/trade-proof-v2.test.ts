import { getAddress, type Hex, keccak256, toHex } from "viem"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { describe, expect, it } from "vitest"
import {
  type FillV2,
  fillDigest,
  fillV2TypedData,
  payTakeTypedData,
  type QuoteSetV2,
  quoteSetV2TypedData,
} from "../../src/Domain/EscrowTypedDataV2.ts"
import { hashlockTree } from "../../src/Domain/Hashlocks.ts"
import {
  buildTradeProofV2,
  type TradeProofV2Failure,
  type TradeProofV2Input,
  type TradeProofV2Json,
  verifyTradeProofV2,
} from "../../src/Domain/TradeProof.ts"
import { toWireTypedData } from "../../src/Domain/WireTypedData.ts"

const MAKER_CHAIN = 999
const TAKER_CHAIN = 42161
const makerEscrow = getAddress(`0x${"a1".repeat(20)}`)
const takerEscrow = getAddress(`0x${"b2".repeat(20)}`)
const token = getAddress(`0x${"c3".repeat(20)}`)
const fresh = () => privateKeyToAccount(generatePrivateKey())
const rand32 = () => toHex(crypto.getRandomValues(new Uint8Array(32)))

/** A signed v2 trade (fill 1 of a two-fill take) and the inputs the history route would assemble for it. */
const signV2Trade = async (opts: { amountOut?: bigint } = {}) => {
  const owner = fresh()
  const signer = fresh()
  const payer = fresh()
  const payKey = fresh()
  const payee = fresh().address
  const secrets = Array.from({ length: 5 }, rand32)
  const hashlocks = secrets.map((s) => keccak256(s))
  const tree = hashlockTree(hashlocks)
  const index = 3
  const set: QuoteSetV2 = {
    owner: owner.address,
    orderId: rand32(),
    sequence: 7n,
    generation: 2n,
    quoteSize: 10n ** 12n,
    issuedAt: 1_800_000_000n,
    validUntil: 1_800_000_300n,
    hashlockRoot: tree.root,
    hashlockCount: tree.count,
    quotes: [
      {
        chainId: BigInt(TAKER_CHAIN),
        token,
        escrow: takerEscrow,
        recipient: payee,
        supply: 99n,
        receive: 100n,
        minFill: 10n,
      },
    ],
  }
  const fill: FillV2 = {
    fillId: rand32(),
    owner: owner.address,
    orderId: set.orderId,
    sequence: set.sequence,
    makerChainId: BigInt(MAKER_CHAIN),
    makerEscrow,
    takerChainId: BigInt(TAKER_CHAIN),
    takerEscrow,
    payer: payer.address,
    payee,
    amountIn: 1_000_000n,
    recipient: fresh().address,
    amountOut: opts.amountOut ?? 990_000n,
    dex: 0,
    toMargin: true,
    hashlock: hashlocks[index]!,
    hashlockIndex: index,
    payKey: payKey.address,
    payBy: 1_800_000_120n,
    makerExpiry: 1_800_002_000n,
    takerExpiry: 1_800_001_000n,
  }
  const digest = fillDigest(fill)
  const digests = [rand32(), digest]
  const input: TradeProofV2Input = {
    quoteSet: {
      owner: owner.address.toLowerCase(),
      orderId: set.orderId,
      sequence: "7",
      generation: "2",
      quoteSize: set.quoteSize.toString(),
      issuedAt: set.issuedAt.toString(),
      validUntil: set.validUntil.toString(),
      hashlockRoot: tree.root,
      hashlockCount: tree.count,
      quotes: [
        {
          chain_id: TAKER_CHAIN,
          token: token.toLowerCase(),
          escrow: takerEscrow.toLowerCase(),
          recipient: payee.toLowerCase(),
          supply: "99",
          receive: "100",
          min_fill: "10",
        },
      ],
      signature: await signer.signTypedData(quoteSetV2TypedData(MAKER_CHAIN, makerEscrow, set)),
      signer: signer.address,
    },
    hashlockIndex: index,
    hashlockProof: [...tree.proof(index)],
    fill: (toWireTypedData(fillV2TypedData(fill)) as { message: unknown }).message,
    fillSignature: await payer.signTypedData(fillV2TypedData(fill)),
    payer: payer.address,
    quoteIndex: 0,
    payAuthorization: {
      signature: await payKey.signTypedData(payTakeTypedData(TAKER_CHAIN, takerEscrow, digests)),
      fills: digests,
    },
    secret: secrets[index]!,
    transactions: [
      { kind: "claim", chain_id: MAKER_CHAIN, hash: "0x04", block_number: 40 },
      { kind: "claim_payment", chain_id: TAKER_CHAIN, hash: "0x03", block_number: 30 },
      { kind: "pay", chain_id: TAKER_CHAIN, hash: "0x02", block_number: 20 },
      { kind: "lock", chain_id: MAKER_CHAIN, hash: "0x01", block_number: 10 },
    ],
  }
  return { input, fill, set, signer, payer, payKey, secrets, tree, digest, digests, index }
}

type Trade = Awaited<ReturnType<typeof signV2Trade>>
const amounts = (t: Trade) => ({ amount_in: t.fill.amountIn.toString(), amount_out: t.fill.amountOut.toString() })
/** The proof as a third party receives it: JSON. */
const json = (input: TradeProofV2Input) => JSON.parse(JSON.stringify(buildTradeProofV2(input))) as TradeProofV2Json
// biome-ignore lint/suspicious/noExplicitAny: tampering with the JSON a client received
type Mutable = any
const tamper = (t: Trade, f: (p: Mutable) => void) => {
  const p = json(t.input) as Mutable
  f(p)
  return p as TradeProofV2Json
}

describe("trade proof v2", () => {
  it("a proof built from the stored rows verifies offline; settlement order lock, pay, claim_payment, claim", async () => {
    const t = await signV2Trade()
    const proof = json(t.input)
    expect(await verifyTradeProofV2(amounts(t), proof)).toEqual([])
    const built = buildTradeProofV2(t.input)
    expect(built.escrow_version).toBe(2)
    expect(built.fill.digest).toBe(t.digest)
    expect(built.quote_set?.hashlock_index).toBe(3)
    expect(built.transactions.map((x) => x.kind)).toEqual(["lock", "pay", "claim_payment", "claim"])
    expect((built.quote_set!.typed_data as { domain: unknown }).domain).toEqual({
      name: "SettlementEscrow",
      version: "2",
      chainId: MAKER_CHAIN,
      verifyingContract: makerEscrow,
    })
    expect((built.pay_authorization!.typed_data as { message: unknown }).message).toEqual({ fills: t.digests })
    expect(built.pay_authorization?.signer).toBe(t.payKey.address.toLowerCase())
  })

  it("each tampered field fails with its named reason", async () => {
    const t = await signV2Trade()
    const other = await signV2Trade()
    const cases: Array<[TradeProofV2Failure, TradeProofV2Json]> = [
      ["fill", tamper(t, (p) => delete p.fill.typed_data.message.payKey)],
      ["fill_domain", tamper(t, (p) => (p.fill.typed_data.domain.chainId = 1))],
      ["fill_signature", tamper(t, (p) => (p.fill.signature = other.input.fillSignature))],
      ["fill_signature", tamper(t, (p) => (p.fill.typed_data.message.amountOut = "1"))],
      ["payer", tamper(t, (p) => (p.fill.signer = other.payer.address))],
      ["fill_digest", tamper(t, (p) => (p.fill.digest = other.digest))],
      ["quote_set", tamper(t, (p) => (p.quote_set = null))],
      ["quote_set_domain", tamper(t, (p) => (p.quote_set.typed_data.domain.verifyingContract = takerEscrow))],
      ["quote_set_signature", tamper(t, (p) => (p.quote_set.signer = other.signer.address))],
      ["quote_set_signature", tamper(t, (p) => (p.quote_set.typed_data.message.issuedAt = "1"))],
      ["quote_set_signature", tamper(t, (p) => (p.quote_set.typed_data.message.hashlockRoot = other.tree.root))],
      ["quote_set_order", tamper(t, (p) => (p.quote_set = json(other.input).quote_set))],
      ["quote_index", tamper(t, (p) => (p.fill.quote_index = 1))],
      ["quote_escrow", tamper(t, (p) => (p.quote_set.typed_data.message.quotes[0].escrow = makerEscrow))],
      ["quote_recipient", tamper(t, (p) => (p.quote_set.typed_data.message.quotes[0].recipient = token))],
      ["quote_chain", tamper(t, (p) => (p.quote_set.typed_data.message.quotes[0].chainId = "1"))],
      ["hashlock_index", tamper(t, (p) => (p.quote_set.hashlock_index = 2))],
      ["hashlock_proof", tamper(t, (p) => (p.quote_set.hashlock_proof = other.tree.proof(3)))],
      ["hashlock_proof", tamper(t, (p) => (p.quote_set.hashlock_proof = ["0x12"]))],
      ["secret", tamper(t, (p) => (p.secret = t.secrets[0]))],
      ["secret", tamper(t, (p) => (p.secret = null))],
      ["pay_authorization", tamper(t, (p) => (p.pay_authorization = null))],
      ["pay_authorization_domain", tamper(t, (p) => (p.pay_authorization.typed_data.domain.version = "1"))],
      [
        "pay_authorization_signature",
        tamper(t, (p) => (p.pay_authorization.signature = other.input.payAuthorization!.signature)),
      ],
      ["pay_authorization_signature", tamper(t, (p) => (p.pay_authorization.signer = other.payKey.address))],
      // A list without this fill's digest: the signature no longer matches either.
      ["pay_authorization_fills", tamper(t, (p) => (p.pay_authorization.typed_data.message.fills = [other.digest]))],
    ]
    for (const [reason, proof] of cases) {
      expect(await verifyTradeProofV2(amounts(t), proof), reason).toContain(reason)
    }
    expect(await verifyTradeProofV2({ ...amounts(t), amount_out: "1" }, json(t.input))).toEqual(["amounts"])
  })

  it("a properly signed Fill that pays more than its quote allows fails price (and min_fill below the minimum)", async () => {
    const greedy = await signV2Trade({ amountOut: 991_000n })
    expect(await verifyTradeProofV2(amounts(greedy), json(greedy.input))).toEqual(["price"])
    const tiny = await signV2Trade({ amountOut: 9n })
    expect(await verifyTradeProofV2(amounts(tiny), json(tiny.input))).toEqual(["min_fill"])
  })

  it("a PayTake signed by another key over the right list fails; a pay key's list over other digests fails", async () => {
    const t = await signV2Trade()
    const stranger = fresh()
    const forged = await stranger.signTypedData(payTakeTypedData(TAKER_CHAIN, takerEscrow, t.digests))
    expect(
      await verifyTradeProofV2(
        amounts(t),
        json({ ...t.input, payAuthorization: { signature: forged, fills: t.digests } }),
      ),
    ).toEqual(["pay_authorization_signature"])
    const elsewhere = [rand32()] as Array<Hex>
    const signedElsewhere = await t.payKey.signTypedData(payTakeTypedData(TAKER_CHAIN, takerEscrow, elsewhere))
    expect(
      await verifyTradeProofV2(
        amounts(t),
        json({ ...t.input, payAuthorization: { signature: signedElsewhere, fills: elsewhere } }),
      ),
    ).toEqual(["pay_authorization_fills"])
  })

  it("a stored Fill that is not a v2 Fill does not build", async () => {
    const t = await signV2Trade()
    const { payKey: _gone, ...v1Like } = t.input.fill as Record<string, unknown>
    expect(() => buildTradeProofV2({ ...t.input, fill: v1Like })).toThrow(/payKey/)
    expect(() => buildTradeProofV2({ ...t.input, fill: { ...(t.input.fill as object), extra: 1 } })).toThrow(/extra/)
  })
})
