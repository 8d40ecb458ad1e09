import { readFileSync } from "node:fs"
import { Either } from "effect"
import fc from "fast-check"
import {
  type Address,
  createPublicClient,
  createWalletClient,
  defineChain,
  domainSeparator,
  getAddress,
  type Hex,
  hashTypedData,
  http,
  recoverTypedDataAddress,
  verifyTypedData,
  zeroAddress,
} from "viem"
import { privateKeyToAccount } from "viem/accounts"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { ANVIL_PRIVATE_KEYS, type AnvilInstance, startAnvil } from "../../infra/devnet/Anvil.ts"
import {
  mockUSDCAbi,
  mockUSDCBytecode,
  settlementEscrowAbi,
  settlementEscrowBytecode,
} from "../../src/Chain/artifacts/index.ts"
import {
  type CloseOffer,
  closeOfferTypedData,
  escrowDomain,
  type Fill,
  type FundOrder,
  fillTypedData,
  fundOrderTypedData,
  hashlockOf,
  type QuoteSet,
  quoteSetAbiArg,
  quoteSetTypedData,
  SPOT_DEX,
} from "../../src/Domain/EscrowTypedData.ts"
import {
  canonicalSignature,
  isLowS,
  normalizeV,
  parseCanonical,
  SECP256K1_HALF_N,
  SECP256K1_N,
} from "../../src/Domain/Signature.ts"

// ------------------------------------------------------------------ public EIP-712 vectors (toolchain sanity)

type Field = { readonly name: string; readonly type: string }
type Vector = {
  readonly name: string
  readonly domain: Record<string, unknown>
  readonly primaryType: string
  readonly types: Record<string, ReadonlyArray<Field>>
  readonly data: Record<string, unknown>
  readonly digest: Hex
  readonly privateKey?: Hex
  readonly signature?: Hex
}

const vectors = JSON.parse(
  readFileSync(new URL("../../../shared/vectors/ethers_typed-data.json", import.meta.url), "utf8"),
) as ReadonlyArray<Vector>

/** The vectors carry (u)int values as strings; viem wants bigints. */
const convert = (types: Vector["types"], type: string, value: unknown): unknown => {
  const array = /^(.*)\[(\d*)\]$/.exec(type)
  if (array?.[1] !== undefined)
    return (value as ReadonlyArray<unknown>).map((v) => convert(types, array[1] as string, v))
  const struct = types[type]
  if (struct !== undefined) {
    const obj = value as Record<string, unknown>
    return Object.fromEntries(struct.map((f) => [f.name, convert(types, f.type, obj[f.name])]))
  }
  if (/^u?int\d*$/.test(type)) return BigInt(value as string | number)
  return value
}

describe("public EIP-712 vectors (ethers typed-data.json)", () => {
  it("viem hashTypedData reproduces every digest", () => {
    expect(vectors.length).toBe(130)
    for (const v of vectors) {
      const message = convert(v.types, v.primaryType, v.data) as Record<string, unknown>
      const digest = hashTypedData({
        domain: v.domain,
        types: v.types,
        primaryType: v.primaryType,
        message,
      })
      expect(digest, v.name).toBe(v.digest)
    }
  })

  it("the signed vector signs and recovers identically", async () => {
    const signed = vectors.filter((v) => v.privateKey !== undefined && v.signature !== undefined)
    expect(signed.length).toBeGreaterThan(0)
    for (const v of signed) {
      const account = privateKeyToAccount(v.privateKey as Hex)
      const message = convert(v.types, v.primaryType, v.data) as Record<string, unknown>
      const def = {
        domain: v.domain,
        types: v.types,
        primaryType: v.primaryType,
        message,
      }
      expect(await account.signTypedData(def)).toBe(v.signature)
      expect(
        await recoverTypedDataAddress({
          ...def,
          signature: v.signature as Hex,
        }),
      ).toBe(account.address)
    }
  })
})

// ------------------------------------------------------------------ TypeScript digests == contract digests

const address = fc
  .uint8Array({ minLength: 20, maxLength: 20 })
  .map((b) => `0x${Buffer.from(b).toString("hex")}` as Address)
const bytes32 = fc.uint8Array({ minLength: 32, maxLength: 32 }).map((b) => `0x${Buffer.from(b).toString("hex")}` as Hex)
const u256 = fc.bigInt({ min: 0n, max: 2n ** 256n - 1n })
const u64 = fc.bigInt({ min: 0n, max: 2n ** 64n - 1n })
const u32 = fc.nat({ max: 4294967295 })
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
const quoteSetArb: fc.Arbitrary<QuoteSet> = fc.record({
  orderId: bytes32,
  sequence: u64,
  generation: u64,
  quoteSize: u256,
  validUntil: u64,
  quotes: fc.array(
    fc.record({
      chainId: u256,
      token: address,
      recipient: address,
      supply: u256,
      receive: u256,
      minFill: u256,
    }),
    { maxLength: 4 },
  ),
})
const fillArb: fc.Arbitrary<Fill> = fc.record({
  fillId: bytes32,
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
  makerExpiry: u64,
  takerExpiry: u64,
})

describe("escrow typed data: TypeScript digests equal the contract's", () => {
  let anvil: AnvilInstance
  let escrow: Address
  const CHAIN_ID = 999
  const client = () => createPublicClient({ transport: http(anvil.rpcUrl) })
  const read = <F extends "hashFundOrder" | "hashCloseOffer" | "hashQuoteSet" | "hashFill">(
    functionName: F,
    arg: unknown,
  ) =>
    client().readContract({
      address: escrow,
      abi: settlementEscrowAbi,
      functionName,
      args: [arg],
    } as never) as Promise<Hex>

  beforeAll(async () => {
    anvil = await startAnvil({ chainId: CHAIN_ID })
    const account = privateKeyToAccount(ANVIL_PRIVATE_KEYS[0])
    const chain = defineChain({
      id: CHAIN_ID,
      name: "typed-data",
      nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 },
      rpcUrls: { default: { http: [anvil.rpcUrl] } },
    })
    const wallet = createWalletClient({
      account,
      chain,
      transport: http(anvil.rpcUrl),
    })
    const pub = client()
    const deploy = async (hash: Hex) => {
      const rc = await pub.waitForTransactionReceipt({
        hash,
        pollingInterval: 50,
      })
      if (rc.contractAddress == null) throw new Error("no contract")
      return rc.contractAddress
    }
    const token = await deploy(
      await wallet.deployContract({
        abi: mockUSDCAbi,
        bytecode: mockUSDCBytecode,
      }),
    )
    escrow = await deploy(
      await wallet.deployContract({
        abi: settlementEscrowAbi,
        bytecode: settlementEscrowBytecode,
        args: [token, zeroAddress, 600n, 86_400n],
      }),
    )
  })

  afterAll(async () => {
    await anvil?.stop()
  })

  it("eip712Domain() is the domain escrowDomain() builds", async () => {
    const [fields, name, version, chain, verifyingContract, salt, extensions] = await client().readContract({
      address: escrow,
      abi: settlementEscrowAbi,
      functionName: "eip712Domain",
    })
    expect(fields).toBe("0x0f") // name, version, chainId, verifyingContract; no salt (viem's salt pitfall)
    expect(salt).toBe(`0x${"0".repeat(64)}`)
    expect(extensions).toEqual([])
    const domain = escrowDomain(CHAIN_ID, escrow)
    expect(domain.verifyingContract).toBe(getAddress(escrow))
    expect({
      name,
      version,
      chainId: Number(chain),
      verifyingContract,
    }).toEqual(domain)
    const onChain = await client().readContract({
      address: escrow,
      abi: settlementEscrowAbi,
      functionName: "domainSeparator",
    })
    expect(domainSeparator({ domain })).toBe(onChain)
    const other = escrowDomain(42161, "0x00000000000000000000000000000000000000aa")
    const recomputed = await client().readContract({
      address: escrow,
      abi: settlementEscrowAbi,
      functionName: "domainSeparatorFor",
      args: [42161n, other.verifyingContract],
    })
    expect(domainSeparator({ domain: other })).toBe(recomputed)
  })

  it("FundOrder", async () => {
    await fc.assert(
      fc.asyncProperty(fundOrderArb, async (m) => {
        expect(hashTypedData(fundOrderTypedData(CHAIN_ID, escrow, m))).toBe(await read("hashFundOrder", m))
      }),
      { numRuns: 40 },
    )
  })

  it("CloseOffer", async () => {
    await fc.assert(
      fc.asyncProperty(closeOfferArb, async (m) => {
        expect(hashTypedData(closeOfferTypedData(CHAIN_ID, escrow, m))).toBe(await read("hashCloseOffer", m))
      }),
      { numRuns: 40 },
    )
  })

  it("QuoteSet with Quote[] (including empty)", async () => {
    await fc.assert(
      fc.asyncProperty(quoteSetArb, async (m) => {
        expect(hashTypedData(quoteSetTypedData(CHAIN_ID, escrow, m))).toBe(
          await read("hashQuoteSet", quoteSetAbiArg(m)),
        )
      }),
      { numRuns: 40 },
    )
  })

  it("Fill, in the taker chain escrow's domain (recomputed by the maker escrow)", async () => {
    await fc.assert(
      fc.asyncProperty(fillArb, async (m) => {
        const def = fillTypedData(m)
        expect(def.domain).toEqual(escrowDomain(m.takerChainId, m.takerEscrow))
        expect(hashTypedData(def)).toBe(await read("hashFill", m))
      }),
      { numRuns: 40 },
    )
  })

  it("escrowDomain refuses chain ids that are not safe positive integers", () => {
    expect(() => escrowDomain(0, escrow)).toThrow(RangeError)
    expect(() => escrowDomain(2n ** 60n, escrow)).toThrow(RangeError)
  })

  it("hashlockOf is keccak256 of the 32-byte secret", () => {
    expect(hashlockOf(`0x${"00".repeat(32)}`)).toBe(
      "0x290decd9548b62a8d60345a988386fc84ba6bc95484008f6362f93160ef3e563",
    )
    expect(() => hashlockOf("0x1234")).toThrow(RangeError)
  })
})

// ------------------------------------------------------------------ signature shape

describe("Signature helpers (low s, v forms)", () => {
  const account = privateKeyToAccount(ANVIL_PRIVATE_KEYS[1])
  const def = closeOfferTypedData(999, "0x00000000000000000000000000000000000000aa", {
    orderId: `0x${"11".repeat(32)}`,
    owner: account.address,
    dex: SPOT_DEX,
    toMargin: true,
    nonce: 7n,
    deadline: 1_800_000_000n,
  })
  const hex32 = (x: bigint) => x.toString(16).padStart(64, "0")
  const withV = (sig: Hex, v: number) => `${sig.slice(0, 130)}${v.toString(16).padStart(2, "0")}` as Hex
  const twin = (sig: Hex): Hex => {
    const s = BigInt(`0x${sig.slice(66, 130)}`)
    const v = Number.parseInt(sig.slice(130), 16)
    return `${sig.slice(0, 66)}${hex32(SECP256K1_N - s)}${(v === 27 ? 28 : 27).toString(16)}` as Hex
  }

  it("a viem signature is low-s; its malleated twin is not, although viem verifies it", async () => {
    const sig = await account.signTypedData(def)
    expect(isLowS(sig)).toBe(true)
    const high = twin(sig)
    expect(isLowS(high)).toBe(false)
    expect(
      await verifyTypedData({
        ...def,
        address: account.address,
        signature: high,
      }),
    ).toBe(true)
    const parsed = parseCanonical(high)
    expect(Either.isLeft(parsed) && parsed.left.reason).toBe("high-s")
    expect(Either.isLeft(canonicalSignature(high))).toBe(true)
  })

  it("normalizeV maps yParity 0/1 to 27/28 and keeps 27/28", async () => {
    const sig = await account.signTypedData(def)
    const v = Number.parseInt(sig.slice(130), 16)
    const parity = withV(sig, v - 27)
    expect(isLowS(parity)).toBe(true)
    expect(normalizeV(parity)).toEqual(Either.right(sig.toLowerCase()))
    expect(normalizeV(sig)).toEqual(Either.right(sig.toLowerCase()))
    expect(canonicalSignature(parity)).toEqual(Either.right(sig.toLowerCase()))
  })

  it("rejects other v values, lengths, and out-of-range r or s", async () => {
    const sig = await account.signTypedData(def)
    for (const v of [2, 26, 29, 35, 255]) {
      const r = normalizeV(withV(sig, v))
      expect(Either.isLeft(r) && r.left.reason).toBe("v")
      expect(isLowS(withV(sig, v))).toBe(false)
    }
    expect(isLowS(sig.slice(0, 130) as Hex)).toBe(false)
    expect(isLowS(`${sig}00` as Hex)).toBe(false)
    expect(isLowS(`0x${"00".repeat(32)}${sig.slice(66)}` as Hex)).toBe(false)
    expect(isLowS(`${sig.slice(0, 66)}${"00".repeat(32)}1b` as Hex)).toBe(false)
    expect(isLowS(`${sig.slice(0, 66)}${hex32(SECP256K1_HALF_N)}1b` as Hex)).toBe(true)
    expect(isLowS(`${sig.slice(0, 66)}${hex32(SECP256K1_HALF_N + 1n)}1b` as Hex)).toBe(false)
  })
})
