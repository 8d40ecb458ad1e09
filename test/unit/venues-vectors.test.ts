/**
 * Every published venue vector, reproduced byte for byte from our own builders: typed-data JSON (as
 * `JSON.stringify(…, null, 2)`, i.e. the exact text of the vector file), encodeType, domain separator, struct hash,
 * digest and the deterministic (RFC 6979) signature of the test key; CoreWriter action bytes, calldata and selectors.
 *
 * The vector file is a verbatim copy of shared/research/venue-vectors.txt (test/fixtures/venues/); the two Python
 * SDK vectors come from research/venues.md §3.5 (hyperliquid-python-sdk tests/signing_test.py).
 */
import { readFileSync } from "node:fs"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Either } from "effect"
import { type Address, encodeFunctionData, type Hex, parseSignature, toFunctionSelector } from "viem"
import { privateKeyToAccount } from "viem/accounts"
import {
  agentApprovalMessage,
  agentApprovalTypedData,
  withdrawActionTypedData,
} from "../../src/Domain/AsterTypedData.ts"
import {
  domainSeparator,
  encodeType,
  messageStructHash,
  recoverTypedDataSigner,
  type TypedDataObject,
  typedDataDigest,
} from "../../src/Domain/TypedData.ts"
import { toWholeTokens } from "../../src/Venues/DecimalAmount.ts"
import {
  CORE_WRITER_ADDRESS,
  coreDepositWalletAbi,
  encodeSendAsset,
  encodeSpotSend,
  encodeUsdClassTransfer,
  PERP_DEX_ID,
  SPOT_DEX_ID,
  USDC_TOKEN_INDEX,
  usdcPerpToSpotWei,
} from "../../src/Venues/HyperliquidCoreWriter.ts"
import {
  approveAgentTypedData,
  sendAssetTypedData,
  USDC_SYSTEM_ADDRESS,
  usdSendTypedData,
  withdraw3TypedData,
} from "../../src/Venues/HyperliquidTypedData.ts"

const TEST_KEY: Hex = "0x0123456789012345678901234567890123456789012345678901234567890123"
const user = privateKeyToAccount(TEST_KEY)
const USER: Address = "0x14791697260e4c9a71f18484c9f997b308e59325"
const AGENT: Address = "0x7e5f4552091a69125d5dfcb7b8c2659029395bdf"
const DEST: Address = "0x5e9ee1089755c3435139848e47e6635505d5a13a"

interface Section {
  readonly title: string
  readonly json: string | undefined
  readonly fields: ReadonlyMap<string, string>
  readonly lines: ReadonlyArray<string>
}

/** Splits the vector file into `### title` sections: the JSON block (verbatim text) and `key: value` lines. */
const parseVectors = (text: string): ReadonlyArray<Section> =>
  text
    .split(/^### /m)
    .slice(1)
    .map((chunk) => {
      const [title = "", ...rest] = chunk.split("\n")
      const body = rest.join("\n")
      const jsonMatch = /^\{\n[\s\S]*?\n\}$/m.exec(body)
      const after = jsonMatch ? body.slice(jsonMatch.index + jsonMatch[0].length) : body
      const lines = after.split("\n").filter((l) => l.trim() !== "")
      const fields = new Map<string, string>()
      for (const line of lines) {
        const m = /^([A-Za-z0-9]+):\s?(.*)$/.exec(line)
        if (m?.[1] !== undefined && m[2] !== undefined) fields.set(m[1], m[2].trim())
      }
      return { title: title.trim(), json: jsonMatch?.[0], fields, lines }
    })

const sections = parseVectors(readFileSync(new URL("../fixtures/venues/venue-vectors.txt", import.meta.url), "utf8"))
const section = (prefix: string): Section => {
  const s = sections.find((x) => x.title.startsWith(prefix))
  if (s === undefined) throw new Error(`no vector section ${prefix}`)
  return s
}
const field = (s: Section, key: string): string => {
  const v = s.fields.get(key)
  if (v === undefined) throw new Error(`vector ${s.title} has no ${key}`)
  return v
}

/** Checks one typed-data vector completely; returns the number of values compared. */
const checkTypedDataVector = (s: Section, td: TypedDataObject) =>
  Effect.gen(function* () {
    expect(JSON.stringify(td, null, 2)).toBe(s.json)
    const fields = td.types[td.primaryType]
    if (fields === undefined) throw new Error("primary type missing")
    expect(encodeType(td.primaryType, fields)).toBe(field(s, "encodeType"))
    expect(domainSeparator(td)).toBe(field(s, "domainSeparator"))
    expect(messageStructHash(td)).toBe(field(s, "structHash"))
    expect(typedDataDigest(td)).toBe(field(s, "digest"))
    const signature = yield* Effect.promise(() =>
      user.signTypedData(td as unknown as Parameters<typeof user.signTypedData>[0]),
    )
    expect(signature).toBe(field(s, "sig65"))
    expect(yield* recoverTypedDataSigner(td, signature)).toBe(USER)
    if (s.fields.has("signature")) {
      const expected = JSON.parse(field(s, "signature")) as { r: Hex; s: Hex; v: number }
      const parts = parseSignature(signature)
      expect({ r: parts.r, s: parts.s, v: Number(parts.v) }).toEqual(expected)
    }
  })

const amount125 = Either.getOrThrow(toWholeTokens(12_500_000n, 6))

describe("venue vectors (venue-vectors.txt)", () => {
  it("the amount every vector signs is the canonical string of 12.5 USDC", () => {
    expect(amount125).toBe("12.5")
  })

  it.effect("HL usdSend mainnet 0xa4b1", () =>
    checkTypedDataVector(
      section("HL usdSend"),
      usdSendTypedData({
        signatureChainId: 42161,
        hyperliquidChain: "Mainnet",
        destination: DEST,
        amount: amount125,
        time: 1700000000000,
      }),
    ),
  )

  it.effect("HL withdraw3 mainnet 0xa4b1", () =>
    checkTypedDataVector(
      section("HL withdraw3"),
      withdraw3TypedData({
        signatureChainId: 42161,
        hyperliquidChain: "Mainnet",
        destination: DEST,
        amount: amount125,
        time: 1700000000000,
      }),
    ),
  )

  it.effect("HL approveAgent mainnet 0xa4b1", () =>
    checkTypedDataVector(
      section("HL approveAgent"),
      approveAgentTypedData({
        signatureChainId: 42161,
        hyperliquidChain: "Mainnet",
        agentAddress: AGENT,
        agentName: "settler valid_until 1715552000000",
        nonce: 1700000000000,
      }),
    ),
  )

  it.effect("HL sendAsset mainnet 0xa4b1 spot->perp", () =>
    checkTypedDataVector(
      section("HL sendAsset"),
      sendAssetTypedData({
        signatureChainId: 42161,
        hyperliquidChain: "Mainnet",
        destination: DEST,
        sourceDex: "spot",
        destinationDex: "",
        token: "USDC:0x6d1e7cde53ba9467b783cb7c530ce054",
        amount: amount125,
        fromSubAccount: "",
        nonce: 1700000000000,
      }),
    ),
  )

  const approval = (signatureChainId: number) => ({
    user: USER,
    nonce: 1700000000000000,
    agentName: "settler",
    agentAddress: AGENT,
    expired: 1700000000000 + 365 * 86_400_000,
    signatureChainId,
    canSpotTrade: false,
    canPerpTrade: false,
    canWithdraw: false,
    ipWhitelist: "",
  })

  it.effect("Aster registerAndApproveAgent, signatureChainId=42161", () =>
    Effect.gen(function* () {
      const fields = approval(42161)
      expect(fields.expired).toBe(1731536000000)
      expect(agentApprovalMessage(fields)).toBe(
        "user=0x14791697260e4c9a71f18484c9f997b308e59325&nonce=1700000000000000&agentName=settler&agentAddress=0x7e5f4552091a69125d5dfcb7b8c2659029395bdf&expired=1731536000000&signatureChainId=42161&canSpotTrade=false&canPerpTrade=false&canWithdraw=false&ipWhitelist=",
      )
      yield* checkTypedDataVector(section("Aster registerAndApproveAgent"), agentApprovalTypedData(fields))
    }),
  )

  it.effect("Aster same msg, signatureChainId=56: the message keeps 42161, only the domain changes", () =>
    Effect.gen(function* () {
      // The vector signs the 42161 message under a 56 domain: what a wallet forced onto BSC would produce.
      const td = agentApprovalTypedData(approval(42161))
      yield* checkTypedDataVector(section("Aster same msg"), { ...td, domain: { ...td.domain, chainId: 56 } })
    }),
  )

  it.effect("Aster EVM withdraw (Action) chainId 42161", () =>
    checkTypedDataVector(
      section("Aster EVM withdraw"),
      withdrawActionTypedData({
        chainId: 42161,
        destination: USER,
        destinationChain: "Arbitrum",
        token: "USDT",
        amount: amount125,
        fee: Either.getOrThrow(toWholeTokens(500_000n, 6)),
        nonce: 1700000000000000,
        asterChain: "Mainnet",
      }),
    ),
  )

  it("CoreWriter sendAsset spot→perp, 10 USDC as Core wei (1e8)", () => {
    const s = section("CoreWriter sendAsset")
    const wei = usdcPerpToSpotWei(10_000_000n)
    expect(wei).toBe(1_000_000_000n)
    expect(
      encodeSendAsset({
        destination: USER,
        subAccount: "0x0000000000000000000000000000000000000000",
        sourceDex: SPOT_DEX_ID,
        destinationDex: PERP_DEX_ID,
        token: USDC_TOKEN_INDEX,
        wei,
      }),
    ).toBe(s.lines[0])
  })

  it("CoreWriter usdClassTransfer 10 USDC as perp ntl (1e6)", () => {
    expect(encodeUsdClassTransfer({ ntl: 10_000_000n, toPerp: true })).toBe(
      section("CoreWriter usdClassTransfer").lines[0],
    )
  })

  it("CoreWriter spotSend to the USDC system address (Core → EVM)", () => {
    expect(USDC_SYSTEM_ADDRESS).toBe("0x2000000000000000000000000000000000000000")
    expect(encodeSpotSend({ destination: USDC_SYSTEM_ADDRESS, token: USDC_TOKEN_INDEX, wei: 1_000_000_000n })).toBe(
      section("CoreWriter spotSend").lines[0],
    )
  })

  it("selectors: sendRawAction, CoreDepositWallet, Lighter, AstherusVault", () => {
    expect(CORE_WRITER_ADDRESS).toBe("0x3333333333333333333333333333333333333333")
    const selectorIn = (prefix: string) => /selector (0x[0-9a-f]{8})/.exec(section(prefix).title)?.[1]
    expect(toFunctionSelector("sendRawAction(bytes)")).toBe(selectorIn("sendRawAction"))
    expect(toFunctionSelector("depositFor(address,uint256,uint32)")).toBe(selectorIn("CoreDepositWallet"))
    expect(toFunctionSelector("deposit(address,uint16,uint8,uint256)")).toBe(selectorIn("Lighter deposit"))
    expect(toFunctionSelector("deposit(address,uint256,uint256)")).toBe(selectorIn("Aster AstherusVault"))
  })

  it("CoreDepositWallet calldata: depositFor(user, 10 USDC, perps) and deposit(10 USDC, spot)", () => {
    const s = section("CoreDepositWallet")
    const calldata = (name: string) => {
      const line = s.lines.find((l) => l.startsWith(`calldata ${name}(`))
      return line?.slice(line.lastIndexOf(" ") + 1)
    }
    expect(
      encodeFunctionData({
        abi: coreDepositWalletAbi,
        functionName: "depositFor",
        args: [USER, 10_000_000n, PERP_DEX_ID],
      }),
    ).toBe(calldata("depositFor"))
    expect(
      encodeFunctionData({ abi: coreDepositWalletAbi, functionName: "deposit", args: [10_000_000n, SPOT_DEX_ID] }),
    ).toBe(calldata("deposit"))
  })

  it("covers every section of the file", () => {
    expect(sections.map((s) => s.title.split(" ").slice(0, 2).join(" "))).toEqual([
      "HL usdSend",
      "HL withdraw3",
      "HL approveAgent",
      "HL sendAsset",
      "Aster registerAndApproveAgent,",
      "Aster same",
      "CoreWriter sendAsset(dest=user,",
      "CoreWriter usdClassTransfer(ntl=10",
      "CoreWriter spotSend(dest=USDC",
      "sendRawAction selector",
      "CoreDepositWallet depositFor(address,uint256,uint32)",
      "Lighter deposit(address,uint16,uint8,uint256)",
      "Aster AstherusVault",
      "Aster EVM",
    ])
  })
})

describe("hyperliquid-python-sdk vectors (research/venues.md §3.5, testnet, signatureChainId 0x66eee)", () => {
  const sdk = { signatureChainId: 0x66eee, hyperliquidChain: "Testnet" as const, destination: DEST, amount: "1" }
  const cases = [
    {
      name: "usdSend (test_sign_usd_transfer_action)",
      td: usdSendTypedData({ ...sdk, time: 1687816341423 }),
      r: "0x637b37dd731507cdd24f46532ca8ba6eec616952c56218baeff04144e4a77073",
      s: "0x11a6a24900e6e314136d2592e2f8d502cd89b7c15b198e1bee043c9589f9fad7",
      v: 27,
    },
    {
      name: "withdraw3 (test_sign_withdraw_from_bridge_action)",
      td: withdraw3TypedData({ ...sdk, time: 1687816341423 }),
      r: "0x8363524c799e90ce9bc41022f7c39b4e9bdba786e5f9c72b20e43e1462c37cf9",
      s: "0x58b1411a775938b83e29182e8ef74975f9054c8e97ebf5ec2dc8d51bfc893881",
      v: 28,
    },
  ]
  for (const c of cases) {
    it.effect(c.name, () =>
      Effect.gen(function* () {
        const signature = yield* Effect.promise(() =>
          user.signTypedData(c.td as unknown as Parameters<typeof user.signTypedData>[0]),
        )
        const parts = parseSignature(signature)
        expect({ r: parts.r, s: parts.s, v: Number(parts.v) }).toEqual({ r: c.r, s: c.s, v: c.v })
      }),
    )
  }
})
