/**
 * `npm run maker -- setup` against a lying service (infra/maker/SignChecks.ts): every sign item the service proposes
 * is signed only if it is exactly what the maker chose. Honest proposals (built as the service builds them) pass and
 * come back as the typed data to sign; a Permit to the operator, a QuoteSet dressed as a registration, an agent with
 * withdrawal rights, a FundOrder for another signer or amount, or a venue transfer to someone else stop setup.
 */
import { type Address, getAddress, type Hex, hashTypedData } from "viem"
import { describe, expect, it } from "vitest"
import { pinChainIds } from "../../infra/maker/ChainPins.ts"
import {
  checkLink,
  checkSiwe,
  type OrderExpectation,
  orderItemsToSign,
  registrationToSign,
} from "../../infra/maker/SignChecks.ts"
import {
  agentApprovalMessage,
  agentApprovalTypedData,
  withdrawActionTypedData,
} from "../../src/Domain/AsterTypedData.ts"
import { fundOrderTypedData } from "../../src/Domain/EscrowTypedData.ts"
import { fundOrderV2TypedData, quoteSetV2TypedData } from "../../src/Domain/EscrowTypedDataV2.ts"
import { buildLinkMessage } from "../../src/Domain/LinkMessage.ts"
import { permitTypedData } from "../../src/Domain/Permit.ts"
import { quoteIdentityRegistrationTypedData } from "../../src/Domain/QuoteIdentityRegistration.ts"
import { buildSiweMessage } from "../../src/Domain/Siwe.ts"
import { toWireTypedData } from "../../src/Domain/WireTypedData.ts"
import { sendAssetTypedData, USDC_SYSTEM_ADDRESS } from "../../src/Venues/HyperliquidTypedData.ts"

const addr = (n: number) => getAddress(`0x${n.toString(16).padStart(40, "0")}`)
const OWNER = addr(0xa1)
const SIGNER = addr(0xc1)
const OPERATOR = addr(0xb1)
const ESCROW = addr(0xe1)
const TOKEN = addr(0x70)
const OTHER = addr(0xdead)
const ORDER = `0x${"11".repeat(32)}` as Hex
const AMOUNT = 100_000_000n
const NOW_MS = 1_800_000_000_000

const expectation: OrderExpectation = {
  orderId: ORDER,
  owner: OWNER,
  signer: SIGNER,
  amount: AMOUNT,
  escrow: ESCROW,
  version: 2,
  token: TOKEN,
  decimals: 6,
}
const tokenDomain = { name: "USD Coin", version: "1", chainId: 999, verifyingContract: TOKEN }
const fund = (over: Partial<Parameters<typeof fundOrderV2TypedData>[2]> = {}, escrow: Address = ESCROW) =>
  toWireTypedData(
    fundOrderV2TypedData(999, escrow, {
      orderId: ORDER,
      owner: OWNER,
      operator: OPERATOR,
      quoteSigner: SIGNER,
      amount: AMOUNT,
      deadline: 1_900_000_000n,
      ...over,
    }),
  )
const permit = (over: { spender?: Address; value?: bigint; owner?: Address } = {}, domain = tokenDomain) =>
  toWireTypedData(
    permitTypedData(domain, {
      owner: over.owner ?? OWNER,
      spender: over.spender ?? ESCROW,
      value: over.value ?? AMOUNT,
      nonce: 0n,
      deadline: 1_900_000_000n,
    }),
  )
const item = (kind: string, typed_data: unknown) => ({ kind, typed_data })
/** Hyperliquid's perp → spot SendAsset of 5 USDC to `destination` (the USDC system address: the sender's own wallet). */
const sendAsset = (destination: Address) =>
  sendAssetTypedData({
    signatureChainId: 42161,
    hyperliquidChain: "Mainnet",
    destination,
    sourceDex: "",
    destinationDex: "spot",
    token: "USDC:0x6d1e7cde53ba9467b783cb7c530ce054",
    amount: "5",
    fromSubAccount: "",
    nonce: 1,
  })
const honest = () => [item("fund_order", fund()), item("permit", permit())]
const refused = (f: () => unknown) => expect(f).toThrow(/refusing to sign .*nothing signed/)

describe("maker setup signs only what the maker chose", () => {
  it("an honest order's items come back as the same messages (same hashes), to be signed", () => {
    const out = orderItemsToSign(honest(), expectation)
    expect(Object.keys(out).sort()).toEqual(["fund_order", "permit"])
    expect(hashTypedData(out.fund_order)).toBe(hashTypedData(fund() as never))
    expect(hashTypedData(out.permit)).toBe(hashTypedData(permit() as never))
    // A v1 order: the v1 escrow's domain.
    const v1 = toWireTypedData(
      fundOrderTypedData(999, ESCROW, {
        orderId: ORDER,
        owner: OWNER,
        operator: OPERATOR,
        quoteSigner: SIGNER,
        amount: AMOUNT,
        deadline: 1n,
      }),
    )
    expect(() =>
      orderItemsToSign([item("fund_order", v1), item("permit", permit())], { ...expectation, version: 1 }),
    ).not.toThrow()
  })

  const lies: ReadonlyArray<[string, ReadonlyArray<{ kind: string; typed_data: unknown }>]> = [
    ["a permit to the operator", [item("fund_order", fund()), item("permit", permit({ spender: OPERATOR }))]],
    ["a permit of everything", [item("fund_order", fund()), item("permit", permit({ value: 2n ** 256n - 1n }))]],
    [
      "a permit of another token",
      [item("fund_order", fund()), item("permit", permit({}, { ...tokenDomain, verifyingContract: OTHER }))],
    ],
    [
      "a FundOrder naming another quote signer",
      [item("fund_order", fund({ quoteSigner: OTHER })), item("permit", permit())],
    ],
    ["a FundOrder of more", [item("fund_order", fund({ amount: AMOUNT + 1n })), item("permit", permit())]],
    [
      "a FundOrder for another order",
      [item("fund_order", fund({ orderId: `0x${"22".repeat(32)}` })), item("permit", permit())],
    ],
    ["a FundOrder on another escrow", [item("fund_order", fund({}, OTHER)), item("permit", permit())]],
    [
      "a Permit dressed as the fund_order",
      [item("fund_order", permit({ spender: OPERATOR })), item("permit", permit())],
    ],
    ["an extra item", [...honest(), item("close_offer", fund())]],
    ["no permit", [item("fund_order", fund())]],
    ["an item twice", [...honest(), item("permit", permit())]],
    ["a venue transfer to another account (Hyperliquid)", [...honest(), item("venue_transfer", sendAsset(OTHER))]],
    [
      "a venue withdrawal to another address (Aster)",
      [
        ...honest(),
        item(
          "venue_transfer",
          withdrawActionTypedData({
            chainId: 56,
            destination: OTHER,
            destinationChain: "BSC",
            token: "USDT",
            amount: "5",
            fee: "0.5",
            nonce: 1,
            asterChain: "Mainnet",
          }),
        ),
      ],
    ],
  ]
  it.each(lies)("%s: refused, nothing signed", (_, items) => refused(() => orderItemsToSign(items, expectation)))

  it("v2: the FundOrder and the permit are for the chain the maker's own endpoint reports", () => {
    const pinned = { ...expectation, chainId: 999 }
    expect(() => orderItemsToSign(honest(), pinned)).not.toThrow()
    // The same escrow and token addresses on another chain (where the service deployed look-alikes).
    const elsewhere = { ...expectation, chainId: 42161 }
    refused(() => orderItemsToSign(honest(), elsewhere))
    refused(() =>
      orderItemsToSign(
        [item("fund_order", fund()), item("permit", permit({}, { ...tokenDomain, chainId: 42161 }))],
        elsewhere,
      ),
    )
  })

  it("the chain ids: each venue's as its endpoint reports it, or setup and run stop", async () => {
    const venues = [
      { id: "hyperliquid", chain_id: 999 },
      { id: "aster", chain_id: 42161 },
    ]
    const rpc = { hyperliquid: "http://127.0.0.1:1/hl", aster: "http://127.0.0.1:1/aster" }
    const endpoints: Record<string, number> = { [rpc.hyperliquid]: 999, [rpc.aster]: 42161 }
    const asked: Array<string> = []
    const chainIdOf = async (url: string) => {
      asked.push(url)
      return endpoints[url]!
    }
    await expect(pinChainIds(venues, rpc, ["hyperliquid", "aster", "aster"], chainIdOf)).resolves.toBe(venues)
    expect(asked).toEqual([rpc.hyperliquid, rpc.aster])
    const lying = [venues[0]!, { id: "aster", chain_id: 1 }]
    await expect(pinChainIds(lying, rpc, ["hyperliquid", "aster"], chainIdOf)).rejects.toThrow(
      "venue aster: the service says chain 1, your endpoint says chain 42161; nothing signed",
    )
    await expect(pinChainIds(venues, { hyperliquid: rpc.hyperliquid }, ["aster"], chainIdOf)).rejects.toThrow(
      "--rpc aster=URL",
    )
    await expect(pinChainIds(venues, rpc, ["bsc"], chainIdOf)).rejects.toThrow("no venue bsc")
  })

  it("a venue transfer to the owner's own wallet of at most the amount is signed as proposed", () => {
    const toSystem = sendAsset(USDC_SYSTEM_ADDRESS)
    expect(orderItemsToSign([item("venue_transfer", toSystem), ...honest()], expectation).venue_transfer).toBe(toSystem)
    const tooMuch = { ...toSystem, message: { ...toSystem.message, amount: "101" } }
    refused(() => orderItemsToSign([item("venue_transfer", tooMuch), ...honest()], expectation))
  })

  it("an Aster venue transfer: the order's amount arrives and the signed fee on top is at most --max-venue-fee", () => {
    const withdrawal = (amount: string, fee: string) =>
      withdrawActionTypedData({
        chainId: 56,
        destination: OWNER,
        destinationChain: "BSC",
        token: "USDT",
        amount,
        fee,
        nonce: 1,
        asterChain: "Mainnet",
      })
    const sign = (td: unknown, maxVenueFee?: bigint) =>
      orderItemsToSign([item("venue_transfer", td), ...honest()], { ...expectation, maxVenueFee: maxVenueFee ?? 0n })
    // 100 must arrive: 100.5 signed with a 0.5 fee, allowed up to 1 (base units 1,000,000).
    const exact = withdrawal("100.5", "0.5")
    expect(sign(exact, 1_000_000n).venue_transfer).toBe(exact)
    expect(sign(withdrawal("40", "0.5"), 1_000_000n).venue_transfer).toBeDefined()
    refused(() => sign(exact)) // no fee allowed by default
    refused(() => sign(withdrawal("101.5", "1.5"), 1_000_000n)) // a fee over the cap
    refused(() => sign(withdrawal("100.6", "0.5"), 1_000_000n)) // 100.1 would arrive: more than the order
    refused(() => sign(withdrawal("0.5", "0.5"), 1_000_000n)) // nothing would arrive
  })

  it("the registration: exactly this signer for this master; a QuoteSet in its place is refused", () => {
    const honestRegistration = quoteIdentityRegistrationTypedData({
      chainId: 999,
      verifyingContract: ESCROW,
      master: OWNER,
      signer: SIGNER,
    })
    expect(hashTypedData(registrationToSign(toWireTypedData(honestRegistration), OWNER, SIGNER))).toBe(
      hashTypedData(honestRegistration),
    )
    refused(() =>
      registrationToSign(
        toWireTypedData(
          quoteIdentityRegistrationTypedData({
            chainId: 999,
            verifyingContract: ESCROW,
            master: OTHER,
            signer: SIGNER,
          }),
        ),
        OWNER,
        SIGNER,
      ),
    )
    const quoteSet = toWireTypedData(
      quoteSetV2TypedData(999, ESCROW, {
        owner: OWNER,
        orderId: ORDER,
        sequence: 1n,
        generation: 1n,
        quoteSize: AMOUNT,
        issuedAt: 1n,
        validUntil: 2n ** 63n,
        hashlockRoot: `0x${"33".repeat(32)}`,
        hashlockCount: 1,
        quotes: [],
      } as never),
    )
    refused(() => registrationToSign(quoteSet, OWNER, SIGNER))
  })

  it("the link: an agent approval granting nothing, for the owner; anything else is refused", () => {
    const fields = {
      user: OWNER,
      nonce: 1_800_000_000_000_000,
      agentName: "settlement",
      agentAddress: OPERATOR,
      expired: 1_900_000_000_000,
      signatureChainId: 42161,
      canSpotTrade: false,
      canPerpTrade: false,
      canWithdraw: false,
      ipWhitelist: "",
    }
    const approval = agentApprovalTypedData(fields)
    const on = { owner: OWNER, venue: "aster", master: OWNER, nowMs: NOW_MS }
    expect(() => checkLink({ message: agentApprovalMessage(fields), typed_data: approval }, on)).not.toThrow()
    const withdrawing = agentApprovalTypedData({ ...fields, canWithdraw: true })
    refused(() =>
      checkLink({ message: agentApprovalMessage({ ...fields, canWithdraw: true }), typed_data: withdrawing }, on),
    )
    refused(() => checkLink({ message: agentApprovalMessage(fields), typed_data: permit({ spender: OPERATOR }) }, on))
    refused(() => checkLink({ message: "some other text", typed_data: approval }, on))
  })

  it("the link message: exactly the service's, for this owner, venue and master, not expired", () => {
    const message = (over: Partial<Parameters<typeof buildLinkMessage>[0]> = {}) =>
      buildLinkMessage({
        domain: "app.example",
        venue: "hyperliquid",
        address: OWNER,
        master: OWNER,
        nonce: "n0nce",
        issuedAtMs: NOW_MS,
        expirationTimeMs: NOW_MS + 300_000,
        ...over,
      })
    const on = { owner: OWNER, venue: "hyperliquid", master: OWNER, nowMs: NOW_MS }
    expect(() => checkLink({ message: message() }, on)).not.toThrow()
    refused(() => checkLink({ message: message({ address: OTHER }) }, on))
    refused(() => checkLink({ message: message({ master: OTHER }) }, on))
    refused(() => checkLink({ message: message({ venue: "aster" }) }, on))
    refused(() => checkLink({ message: message({ expirationTimeMs: NOW_MS - 1 }) }, on))
    // The old check passed any text naming the owner.
    refused(() => checkLink({ message: `link ${OWNER.toLowerCase()} to the service` }, on))
  })

  it("sign-in: an EIP-4361 message for the owner's address, not expired", () => {
    const siwe = (over: Partial<Parameters<typeof buildSiweMessage>[0]> = {}) =>
      buildSiweMessage({
        domain: "app.example",
        uri: "https://app.example",
        chainId: 1,
        address: OWNER,
        nonce: "abcdefgh12",
        issuedAtMs: NOW_MS,
        expirationTimeMs: NOW_MS + 300_000,
        ...over,
      })
    expect(() => checkSiwe(siwe(), OWNER, NOW_MS)).not.toThrow()
    refused(() => checkSiwe(siwe({ address: OTHER }), OWNER, NOW_MS))
    refused(() => checkSiwe(siwe({ issuedAtMs: NOW_MS - 600_000, expirationTimeMs: NOW_MS - 1 }), OWNER, NOW_MS))
    refused(() => checkSiwe("Permit me", OWNER, NOW_MS))
    // The old check passed a message whose first two lines looked right, whatever followed.
    refused(() =>
      checkSiwe(`app.example wants you to sign in with your Ethereum account:\n${OWNER}\n\nanything`, OWNER, NOW_MS),
    )
  })
})
