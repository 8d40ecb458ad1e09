/**
 * Settlement v2 typed data and hashlocks: the TypeScript side (src/Domain/EscrowTypedDataV2.ts, Hashlocks.ts,
 * src/Client/EscrowReadsV2.ts) against the contract's own views and its `lock`, on anvil.
 */
import fc from "fast-check"
import { type Address, bytesToHex, domainSeparator, getAddress, type Hex, hashTypedData, keccak256 } from "viem"
import { privateKeyToAccount } from "viem/accounts"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { ANVIL_PRIVATE_KEYS } from "../../infra/devnet/Anvil.ts"
import { escrowV2ReadAbi } from "../../src/Client/EscrowReadsV2.ts"
import type { CloseOffer, FundOrder } from "../../src/Domain/EscrowTypedData.ts"
import {
  cancelFillDigest,
  cancelFillTypedData,
  cancelFillTypes,
  closeOfferTypes,
  closeOfferV2TypedData,
  escrowDomainV2,
  type FillV2,
  fillDigest,
  fillV2TypedData,
  fillV2Types,
  fundOrderTypes,
  fundOrderV2TypedData,
  orderKey,
  payTakeDigest,
  payTakeTypes,
  type QuoteSetV2,
  quoteSetDigest,
  quoteSetV2AbiArg,
  quoteSetV2Types,
} from "../../src/Domain/EscrowTypedDataV2.ts"
import { deriveHashlockSet, hashlockLeaf, type SecretScope, secretKeyOf } from "../../src/Domain/Hashlocks.ts"
import { fundV2Order, startV2Chain, V2_TIMING, type V2Chain } from "../support/EscrowV2Chains.ts"

// ------------------------------------------------------------------ the pinned type strings (notes/v2-types.md)

type Types = Readonly<Record<string, ReadonlyArray<{ readonly name: string; readonly type: string }>>>

/** EIP-712 encodeType: the primary type, then referenced struct types sorted by name. */
const encodeType = (types: Types, primary: string): string => {
  const deps = new Set<string>()
  const walk = (t: string) => {
    for (const f of types[t]!) {
      const base = f.type.replace(/\[\d*\]$/, "")
      if (types[base] !== undefined && base !== primary && !deps.has(base)) {
        deps.add(base)
        walk(base)
      }
    }
  }
  walk(primary)
  return [primary, ...[...deps].sort()]
    .map((t) => `${t}(${types[t]!.map((f) => `${f.type} ${f.name}`).join(",")})`)
    .join("")
}

describe("v2 type strings are the pinned ones", () => {
  it("FundOrder, CloseOffer, QuoteSet+Quote, Fill, PayTake, CancelFill", () => {
    expect(encodeType(fundOrderTypes, "FundOrder")).toBe(
      "FundOrder(bytes32 orderId,address owner,address operator,address quoteSigner,uint256 amount,uint256 deadline)",
    )
    expect(encodeType(closeOfferTypes, "CloseOffer")).toBe(
      "CloseOffer(bytes32 orderId,address owner,uint32 dex,bool toMargin,uint256 nonce,uint256 deadline)",
    )
    expect(encodeType(quoteSetV2Types, "QuoteSet")).toBe(
      "QuoteSet(address owner,bytes32 orderId,uint64 sequence,uint64 generation,uint256 quoteSize,uint64 issuedAt," +
        "uint64 validUntil,bytes32 hashlockRoot,uint32 hashlockCount,Quote[] quotes)" +
        "Quote(uint256 chainId,address token,address escrow,address recipient,uint256 supply,uint256 receive,uint256 minFill)",
    )
    expect(encodeType(fillV2Types, "Fill")).toBe(
      "Fill(bytes32 fillId,address owner,bytes32 orderId,uint64 sequence,uint256 makerChainId,address makerEscrow," +
        "uint256 takerChainId,address takerEscrow,address payer,address payee,uint256 amountIn,address recipient," +
        "uint256 amountOut,uint32 dex,bool toMargin,bytes32 hashlock,uint32 hashlockIndex,address payKey,uint64 payBy," +
        "uint64 makerExpiry,uint64 takerExpiry)",
    )
    expect(fillV2Types.Fill.length).toBe(21)
    expect(encodeType(payTakeTypes, "PayTake")).toBe("PayTake(bytes32[] fills)")
    expect(encodeType(cancelFillTypes, "CancelFill")).toBe("CancelFill(bytes32 fill)")
  })

  it("the domain is SettlementEscrow version 2", () => {
    expect(escrowDomainV2(999, "0x00000000000000000000000000000000000000aa")).toEqual({
      name: "SettlementEscrow",
      version: "2",
      chainId: 999,
      verifyingContract: "0x00000000000000000000000000000000000000AA",
    })
  })
})

// ------------------------------------------------------------------ arbitraries

const hex = (n: number) => fc.uint8Array({ minLength: n, maxLength: n }).map((b) => bytesToHex(b))
const address = hex(20).map((h) => h as Address)
const bytes32 = hex(32)
const u256 = fc.bigInt({ min: 0n, max: 2n ** 256n - 1n })
const u64 = fc.bigInt({ min: 0n, max: 2n ** 64n - 1n })
const u32 = fc.nat({ max: 2 ** 32 - 1 })
const chainId = fc.bigInt({ min: 1n, max: 2n ** 53n - 1n })

const fundOrderArb: fc.Arbitrary<FundOrder> = fc.record({
  orderId: bytes32,
  owner: address,
  operator: address,
  quoteSigner: address,
  amount: u256,
  deadline: u256,
})
const closeOfferArb: fc.Arbitrary<CloseOffer> = fc.record({
  orderId: bytes32,
  owner: address,
  dex: u32,
  toMargin: fc.boolean(),
  nonce: u256,
  deadline: u256,
})
const quoteSetArb: fc.Arbitrary<QuoteSetV2> = fc.record({
  owner: address,
  orderId: bytes32,
  sequence: u64,
  generation: u64,
  quoteSize: u256,
  issuedAt: u64,
  validUntil: u64,
  hashlockRoot: bytes32,
  hashlockCount: u32,
  quotes: fc.array(
    fc.record({
      chainId: u256,
      token: address,
      escrow: address,
      recipient: address,
      supply: u256,
      receive: u256,
      minFill: u256,
    }),
    { maxLength: 4 },
  ),
})
const fillArb: fc.Arbitrary<FillV2> = fc.record({
  fillId: bytes32,
  owner: address,
  orderId: bytes32,
  sequence: u64,
  makerChainId: u256,
  makerEscrow: address,
  takerChainId: chainId,
  takerEscrow: address,
  payer: address,
  payee: address,
  amountIn: u256,
  recipient: address,
  amountOut: u256,
  dex: u32,
  toMargin: fc.boolean(),
  hashlock: bytes32,
  hashlockIndex: u32,
  payKey: address,
  payBy: u64,
  makerExpiry: u64,
  takerExpiry: u64,
})

// ------------------------------------------------------------------ the contract's views

const CHAIN_ID = 999
const account = (i: number) => privateKeyToAccount(ANVIL_PRIVATE_KEYS[i] as Hex)

describe("v2 digests, order key and leaves equal the contract's", () => {
  let c: V2Chain
  const view = (functionName: string, args: ReadonlyArray<unknown>) =>
    c.pub.readContract({ address: c.escrow, abi: c.abi, functionName, args } as never) as Promise<unknown>

  beforeAll(async () => {
    c = await startV2Chain(CHAIN_ID)
  })
  afterAll(async () => {
    await c?.anvil.stop()
  })

  it("eip712Domain, domainSeparator and domainSeparatorFor", async () => {
    const [fields, name, version, chain, verifyingContract, salt, extensions] = (await view("eip712Domain", [])) as [
      Hex,
      string,
      string,
      bigint,
      Address,
      Hex,
      ReadonlyArray<bigint>,
    ]
    expect({ fields, salt, extensions }).toEqual({ fields: "0x0f", salt: `0x${"0".repeat(64)}`, extensions: [] })
    const domain = escrowDomainV2(CHAIN_ID, c.escrow)
    expect({ name, version, chainId: Number(chain), verifyingContract }).toEqual(domain)
    expect(await view("domainSeparator", [])).toBe(domainSeparator({ domain }))
    const other = escrowDomainV2(42161, "0x00000000000000000000000000000000000000aa")
    expect(await view("domainSeparatorFor", [42161n, other.verifyingContract])).toBe(domainSeparator({ domain: other }))
  })

  it("FundOrder and CloseOffer (v1 types, v2 domain)", async () => {
    await fc.assert(
      fc.asyncProperty(fundOrderArb, closeOfferArb, async (f, o) => {
        expect(await view("hashFundOrder", [f])).toBe(hashTypedData(fundOrderV2TypedData(CHAIN_ID, c.escrow, f)))
        expect(await view("hashCloseOffer", [o])).toBe(hashTypedData(closeOfferV2TypedData(CHAIN_ID, c.escrow, o)))
      }),
      { numRuns: 30 },
    )
  })

  it("QuoteSet with Quote[] (including empty)", async () => {
    await fc.assert(
      fc.asyncProperty(quoteSetArb, async (q) => {
        expect(await view("hashQuoteSet", [quoteSetV2AbiArg(q)])).toBe(quoteSetDigest(CHAIN_ID, c.escrow, q))
      }),
      { numRuns: 30 },
    )
  })

  it("Fill digest, in the taker escrow's domain (recomputed by this escrow)", async () => {
    await fc.assert(
      fc.asyncProperty(fillArb, async (f) => {
        expect(fillV2TypedData(f).domain).toEqual(escrowDomainV2(f.takerChainId, f.takerEscrow))
        expect(await view("hashFill", [f])).toBe(fillDigest(f))
      }),
      { numRuns: 30 },
    )
  })

  it("PayTake (0–8 digests, order matters) and CancelFill, in this escrow's domain", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(bytes32, { maxLength: 8 }), bytes32, async (fills, fill) => {
        expect(await view("hashPayTake", [fills])).toBe(payTakeDigest(CHAIN_ID, c.escrow, fills))
        expect(await view("hashCancelFill", [fill])).toBe(cancelFillDigest(CHAIN_ID, c.escrow, fill))
      }),
      { numRuns: 30 },
    )
    const [a, b] = fc.sample(bytes32, 2) as [Hex, Hex]
    expect(payTakeDigest(CHAIN_ID, c.escrow, [a, b])).not.toBe(payTakeDigest(CHAIN_ID, c.escrow, [b, a]))
  })

  it("orderKey and hashlockLeaf", async () => {
    await fc.assert(
      fc.asyncProperty(address, bytes32, u32, bytes32, async (owner, orderId, i, hashlock) => {
        expect(await view("orderKey", [owner, orderId])).toBe(orderKey(owner, orderId))
        expect(await view("hashlockLeaf", [i, hashlock])).toBe(hashlockLeaf(i, hashlock))
      }),
      { numRuns: 30 },
    )
  })

  it("the client's getLock/getPayment ABI fragment is the contract's", () => {
    for (const entry of escrowV2ReadAbi) {
      const onChain = c.abi.find((x) => x.type === "function" && x.name === entry.name) as
        | { inputs: ReadonlyArray<{ type: string }>; outputs: ReadonlyArray<{ components: ReadonlyArray<unknown> }> }
        | undefined
      expect(onChain, entry.name).toBeDefined()
      const shape = (xs: ReadonlyArray<unknown>) =>
        xs.map((x) => ({ name: (x as { name: string }).name, type: (x as { type: string }).type }))
      expect(shape(onChain!.inputs).map((x) => x.type)).toEqual(entry.inputs.map((x) => x.type))
      expect(shape(onChain!.outputs[0]!.components)).toEqual(shape(entry.outputs[0].components))
    }
  })
})

// ------------------------------------------------------------------ the contract's lock accepts our roots and proofs

describe("v2 lock: our quote-set digest, Fill digest, root and proofs are what the contract verifies", () => {
  let c: V2Chain
  const operator = account(0)
  const owner = account(1)
  const payer = account(2)
  const payKey = account(3)
  const signerKey = ANVIL_PRIVATE_KEYS[5]
  const quoteSigner = account(5)
  const payee = getAddress("0x00000000000000000000000000000000000000b0")
  const takerEscrow = getAddress("0x00000000000000000000000000000000000000e2")
  const orderId = keccak256("0x01")
  const TAKER_CHAIN = 42161n

  const quoteSetOf = async (sequence: bigint, count: number) => {
    const now = await c.latestTime()
    const scope: SecretScope = {
      chainId: BigInt(CHAIN_ID),
      makerEscrow: c.escrow,
      owner: owner.address,
      orderId,
      sequence,
    }
    const hashlocks = deriveHashlockSet(secretKeyOf(signerKey), scope, count)
    const set: QuoteSetV2 = {
      owner: owner.address,
      orderId,
      sequence,
      generation: 1n,
      quoteSize: 10_000_000n,
      issuedAt: now,
      validUntil: now + 500n,
      hashlockRoot: hashlocks.root,
      hashlockCount: count,
      quotes: [
        {
          chainId: TAKER_CHAIN,
          token: "0x00000000000000000000000000000000000000c0",
          escrow: takerEscrow,
          recipient: payee,
          supply: 1n,
          receive: 1n,
          minFill: 1n,
        },
      ],
    }
    const quoteSig = await quoteSigner.signTypedData({
      domain: escrowDomainV2(CHAIN_ID, c.escrow),
      types: quoteSetV2Types,
      primaryType: "QuoteSet",
      message: set,
    })
    return { set, quoteSig, hashlocks }
  }

  const fillOf = async (set: QuoteSetV2, index: number, hashlock: Hex): Promise<FillV2> => {
    const now = await c.latestTime()
    const payBy = now + 200n
    return {
      fillId: keccak256(`0x${index.toString(16).padStart(2, "0")}${set.sequence.toString(16).padStart(2, "0")}`),
      owner: owner.address,
      orderId,
      sequence: set.sequence,
      makerChainId: BigInt(CHAIN_ID),
      makerEscrow: c.escrow,
      takerChainId: TAKER_CHAIN,
      takerEscrow,
      payer: payer.address,
      payee,
      amountIn: 100_000n,
      recipient: payer.address,
      amountOut: 100_000n,
      dex: 0,
      toMargin: false,
      hashlock,
      hashlockIndex: index,
      payKey: payKey.address,
      payBy,
      makerExpiry: payBy + V2_TIMING.takerTimeoutMin + V2_TIMING.claimWindow,
      takerExpiry: payBy + V2_TIMING.takerTimeoutMin,
    }
  }

  const lockArgs = async (
    fill: FillV2,
    q: { set: QuoteSetV2; quoteSig: Hex },
    proof: ReadonlyArray<Hex>,
  ): Promise<ReadonlyArray<unknown>> => [
    fill,
    await payer.signTypedData(fillV2TypedData(fill)),
    quoteSetV2AbiArg(q.set),
    0n,
    q.quoteSig,
    proof,
  ]

  const lockState = async (digest: Hex) =>
    (
      (await c.pub.readContract({
        address: c.escrow,
        abi: escrowV2ReadAbi,
        functionName: "getLock",
        args: [digest],
      })) as { state: number }
    ).state

  beforeAll(async () => {
    c = await startV2Chain(CHAIN_ID)
    await fundV2Order(c, {
      owner,
      relayer: operator,
      orderId,
      operator: operator.address,
      quoteSigner: quoteSigner.address,
      amount: 5_000_000n,
    })
  })
  afterAll(async () => {
    await c?.anvil.stop()
  })

  it("every hashlock of a 5-set locks with its proof, keyed by our Fill digest", async () => {
    const q = await quoteSetOf(1n, 5)
    for (let i = 0; i < 5; i++) {
      const fill = await fillOf(q.set, i, q.hashlocks.hashlocks[i]!)
      await c.send(operator, "lock", await lockArgs(fill, q, q.hashlocks.proof(i)))
      expect(await lockState(fillDigest(fill))).toBe(1) // Locked
    }
  })

  it("one hashlock: the root is the leaf, the proof empty", async () => {
    const q = await quoteSetOf(2n, 1)
    expect(q.hashlocks.root).toBe(hashlockLeaf(0, q.hashlocks.hashlocks[0]!))
    const fill = await fillOf(q.set, 0, q.hashlocks.hashlocks[0]!)
    await c.send(operator, "lock", await lockArgs(fill, q, []))
    expect(await lockState(fillDigest(fill))).toBe(1)
  })

  it("refuses a proof at another index, an internal node, an index past the count, another set's hashlock", async () => {
    const q = await quoteSetOf(3n, 6)
    const other = await quoteSetOf(4n, 6)
    const h = q.hashlocks.hashlocks
    // Proof of leaf 2 presented for (3, hashlock_2).
    expect(
      await c.revertOf(operator, "lock", await lockArgs(await fillOf(q.set, 3, h[2]!), q, q.hashlocks.proof(2))),
    ).toBe("InvalidHashlockProof")
    // An internal node (node 1 of the packed tree) with the path above it.
    const node = q.hashlocks.nodes[1]!
    expect(
      await c.revertOf(operator, "lock", await lockArgs(await fillOf(q.set, 0, node), q, [q.hashlocks.nodes[2]!])),
    ).toBe("InvalidHashlockProof")
    expect(
      await c.revertOf(operator, "lock", await lockArgs(await fillOf(q.set, 6, h[0]!), q, q.hashlocks.proof(0))),
    ).toBe("HashlockIndexOutOfRange")
    const foreign = other.hashlocks.hashlocks[0]!
    expect(
      await c.revertOf(operator, "lock", await lockArgs(await fillOf(q.set, 0, foreign), q, other.hashlocks.proof(0))),
    ).toBe("InvalidHashlockProof")
    // And the honest one passes the same simulation.
    expect(
      await c.revertOf(operator, "lock", await lockArgs(await fillOf(q.set, 0, h[0]!), q, q.hashlocks.proof(0))),
    ).toBe(undefined)
  })

  it("cancelLock takes the pay key's CancelFill over our digest (maker domain), and nobody else's", async () => {
    const q = await quoteSetOf(5n, 2)
    const fill = await fillOf(q.set, 1, q.hashlocks.hashlocks[1]!)
    await c.send(operator, "lock", await lockArgs(fill, q, q.hashlocks.proof(1)))
    const digest = fillDigest(fill)
    const typed = cancelFillTypedData(CHAIN_ID, c.escrow, digest)
    expect(await c.revertOf(operator, "cancelLock", [digest, await operator.signTypedData(typed)])).toBe(
      "InvalidSignature",
    )
    // Signed in the taker escrow's domain instead: refused.
    const wrongDomain = cancelFillTypedData(TAKER_CHAIN, takerEscrow, digest)
    expect(await c.revertOf(operator, "cancelLock", [digest, await payKey.signTypedData(wrongDomain)])).toBe(
      "InvalidSignature",
    )
    await c.send(operator, "cancelLock", [digest, await payKey.signTypedData(typed)])
    expect(await lockState(digest)).toBe(4) // Cancelled
  })
})
