import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import path from "node:path"
import {
  type Abi,
  type Account,
  type Address,
  BaseError,
  type Chain,
  ContractFunctionRevertedError,
  createPublicClient,
  createTestClient,
  createWalletClient,
  defineChain,
  type Hex,
  hashTypedData,
  http,
  keccak256,
  type PublicClient,
  parseEventLogs,
  toHex,
  verifyTypedData,
} from "viem"
import { privateKeyToAccount } from "viem/accounts"
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from "vitest"
import { ANVIL_PRIVATE_KEYS, type AnvilInstance, startAnvil } from "../../infra/devnet/Anvil.ts"
import { type Deployment, deployChain } from "../../infra/devnet/Deploy.ts"
import {
  legacyEscrowAbi,
  mockAsterVaultAbi,
  mockCoreDepositWalletAbi,
  mockUSDCAbi,
  settlementEscrowAbi,
} from "../../src/Chain/artifacts/index.ts"
import {
  type CloseOffer,
  closeOfferTypedData,
  type Fill,
  type FundOrder,
  fillTypedData,
  fundOrderTypedData,
  hashlockOf,
  PERPS_DEX,
  type QuoteSet,
  quoteSetAbiArg,
  quoteSetTypedData,
  SPOT_DEX,
} from "../../src/Domain/EscrowTypedData.ts"
import { isLowS, SECP256K1_N } from "../../src/Domain/Signature.ts"

// Two devnet chains as in `npm start`: a Hyperliquid-like maker chain (999) and an Aster-like taker chain (42161).
const MAKER_CHAIN = 999
const TAKER_CHAIN = 42161

const key = (i: number) => ANVIL_PRIVATE_KEYS[i] as Hex
const operator = privateKeyToAccount(key(0)) // deployer = escrow operator on both chains
const owner = privateKeyToAccount(key(3)) // maker: owns orders on the maker chain
const payer = privateKeyToAccount(key(4)) // taker: pays on the taker chain
const quoteSigner = privateKeyToAccount(key(5)) // maker's quote identity
const payee = privateKeyToAccount(key(6)).address // maker's quote recipient on the taker chain
const recipient = privateKeyToAccount(key(7)).address // taker's recipient on the maker chain
const relayer = privateKeyToAccount(key(8))

const USDC = (n: number) => BigInt(n) * 10n ** 6n

interface Side {
  readonly anvil: AnvilInstance
  readonly deployment: Deployment
  readonly chain: Chain
  readonly pub: PublicClient
  readonly escrow: Address
  readonly token: Address
  readonly venue: Address
}

const startSide = async (chainId: number, kind: "hyperliquid" | "aster"): Promise<Side> => {
  const anvil = await startAnvil({ chainId })
  const deployment = await deployChain({
    rpcUrl: anvil.rpcUrl,
    kind,
    deployerKey: key(0),
    legacyOffers: kind === "hyperliquid",
  })
  const chain = defineChain({
    id: chainId,
    name: kind,
    nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 },
    rpcUrls: { default: { http: [anvil.rpcUrl] } },
  })
  const pub = createPublicClient({ chain, transport: http(anvil.rpcUrl) }) as PublicClient
  return {
    anvil,
    deployment,
    chain,
    pub,
    escrow: deployment.contracts.escrow.address,
    token: deployment.contracts.token.address,
    venue: deployment.contracts.venue.address,
  }
}

/** Sends a contract call from `account` and waits for a successful receipt; returns its logs. */
const send = async (
  side: Side,
  account: Account,
  abi: Abi,
  address: Address,
  functionName: string,
  args: unknown[],
) => {
  const wallet = createWalletClient({ account, chain: side.chain, transport: http(side.anvil.rpcUrl) })
  const hash = await wallet.writeContract({ abi, address, functionName, args } as never)
  const receipt = await side.pub.waitForTransactionReceipt({ hash, pollingInterval: 50 })
  expect(receipt.status).toBe("success")
  return receipt.logs
}

/** Simulates a call and returns the custom error name it reverts with (never sends). */
const revertName = async (
  side: Side,
  account: Account,
  functionName: string,
  args: unknown[],
): Promise<string | undefined> => {
  try {
    await side.pub.simulateContract({
      account,
      abi: settlementEscrowAbi,
      address: side.escrow,
      functionName,
      args,
    } as never)
    return undefined
  } catch (e) {
    const reverted = e instanceof BaseError ? e.walk((x) => x instanceof ContractFunctionRevertedError) : undefined
    return reverted instanceof ContractFunctionRevertedError ? reverted.data?.errorName : `unexpected: ${String(e)}`
  }
}

const readEscrow = <T>(side: Side, functionName: string, args: unknown[] = []) =>
  side.pub.readContract({ abi: settlementEscrowAbi, address: side.escrow, functionName, args } as never) as Promise<T>

const usdcBalance = (side: Side, who: Address) =>
  side.pub.readContract({ abi: mockUSDCAbi, address: side.token, functionName: "balanceOf", args: [who] })

const now = async (side: Side) => (await side.pub.getBlock()).timestamp

const advance = async (side: Side, seconds: number) => {
  const test = createTestClient({ mode: "anvil", chain: side.chain, transport: http(side.anvil.rpcUrl) })
  await test.increaseTime({ seconds })
  await test.mine({ blocks: 1 })
}

/** An EIP-2612 permit for `spender`, signed by `holder` in the token's domain (read via ERC-5267 fields). */
const permit = async (side: Side, holder: typeof owner, spender: Address, value: bigint) => {
  const [, name, version] = await side.pub.readContract({
    abi: mockUSDCAbi,
    address: side.token,
    functionName: "eip712Domain",
  })
  const nonce = await side.pub.readContract({
    abi: mockUSDCAbi,
    address: side.token,
    functionName: "nonces",
    args: [holder.address],
  })
  const deadline = (await now(side)) + 3600n
  const signature = await holder.signTypedData({
    domain: { name, version, chainId: side.chain.id, verifyingContract: side.token },
    types: {
      Permit: [
        { name: "owner", type: "address" },
        { name: "spender", type: "address" },
        { name: "value", type: "uint256" },
        { name: "nonce", type: "uint256" },
        { name: "deadline", type: "uint256" },
      ],
    },
    primaryType: "Permit",
    message: { owner: holder.address, spender, value, nonce, deadline },
  })
  const r = signature.slice(0, 66) as Hex
  const s = `0x${signature.slice(66, 130)}` as Hex
  const v = Number.parseInt(signature.slice(130), 16)
  return { value, deadline, v, r, s }
}

const highSTwin = (sig: Hex): Hex => {
  const s = BigInt(`0x${sig.slice(66, 130)}`)
  const v = Number.parseInt(sig.slice(130), 16)
  return `${sig.slice(0, 66)}${(SECP256K1_N - s).toString(16).padStart(64, "0")}${(v === 27 ? 28 : 27).toString(16)}` as Hex
}

describe("SettlementEscrow on two anvil chains", () => {
  let maker: Side
  let taker: Side

  beforeAll(async () => {
    ;[maker, taker] = await Promise.all([startSide(MAKER_CHAIN, "hyperliquid"), startSide(TAKER_CHAIN, "aster")])
  })

  afterAll(async () => {
    await Promise.all([maker?.anvil.stop(), taker?.anvil.stop()])
  })

  const fundOrder = async (orderId: Hex, amount: bigint): Promise<FundOrder> => {
    const message: FundOrder = {
      orderId,
      owner: owner.address,
      operator: operator.address,
      quoteSigner: quoteSigner.address,
      amount,
      deadline: (await now(maker)) + 3600n,
    }
    const typed = fundOrderTypedData(MAKER_CHAIN, maker.escrow, message)
    expect(hashTypedData(typed)).toBe(await readEscrow(maker, "hashFundOrder", [message]))
    const signature = await owner.signTypedData(typed)
    const p = await permit(maker, owner, maker.escrow, amount)
    await send(maker, relayer, settlementEscrowAbi, maker.escrow, "fund", [message, signature, p])
    return message
  }

  const close = async (offer: Omit<CloseOffer, "owner" | "deadline">) => {
    const message: CloseOffer = { ...offer, owner: owner.address, deadline: (await now(maker)) + 3600n }
    const typed = closeOfferTypedData(MAKER_CHAIN, maker.escrow, message)
    expect(hashTypedData(typed)).toBe(await readEscrow(maker, "hashCloseOffer", [message]))
    const signature = await owner.signTypedData(typed)
    expect(isLowS(signature)).toBe(true)
    return send(maker, relayer, settlementEscrowAbi, maker.escrow, "closeWithSig", [message, signature])
  }

  const cdwDeposits = (who: Address, dex: number) =>
    maker.pub.readContract({
      abi: mockCoreDepositWalletAbi,
      address: maker.venue,
      functionName: "deposits",
      args: [who, dex],
    })

  it("deploys both chains and records the legacy history", async () => {
    expect(maker.deployment.chainId).toBe(MAKER_CHAIN)
    expect(taker.deployment.chainId).toBe(TAKER_CHAIN)
    expect(JSON.parse(JSON.stringify(maker.deployment))).toEqual(maker.deployment)
    expect(await usdcBalance(maker, owner.address)).toBe(USDC(1_000_000))
    expect(maker.deployment.legacyOffers.map((o) => o.reclaimed)).toEqual([false, false, true])
    const legacy = maker.deployment.contracts.legacyEscrow.address
    const first = maker.deployment.legacyOffers[0]
    expect(first).toBeDefined()
    const offer = await maker.pub.readContract({
      abi: legacyEscrowAbi,
      address: legacy,
      functionName: "getOffer",
      args: [BigInt(first?.id ?? 0)],
    })
    expect(offer.amount).toBe(USDC(25))
    expect(
      await maker.pub.readContract({
        abi: legacyEscrowAbi,
        address: legacy,
        functionName: "isReclaimable",
        args: [1n],
      }),
    ).toBe(true)
    const router = taker.deployment.contracts.router.address
    expect(
      await taker.pub.readContract({
        abi: mockAsterVaultAbi,
        address: taker.venue,
        functionName: "depositors",
        args: [router],
      }),
    ).toBe(true)
  })

  it("funds an order with FundOrder + permit, and refuses relayer-chosen terms", async () => {
    const orderId = keccak256(toHex("order-1"))
    const message: FundOrder = {
      orderId,
      owner: owner.address,
      operator: operator.address,
      quoteSigner: quoteSigner.address,
      amount: USDC(100),
      deadline: (await now(maker)) + 3600n,
    }
    const signature = await owner.signTypedData(fundOrderTypedData(MAKER_CHAIN, maker.escrow, message))
    const p = await permit(maker, owner, maker.escrow, message.amount)
    expect(await revertName(maker, relayer, "fund", [{ ...message, operator: relayer.address }, signature, p])).toBe(
      "InvalidSignature",
    )
    expect(await revertName(maker, relayer, "fund", [{ ...message, quoteSigner: relayer.address }, signature, p])).toBe(
      "InvalidSignature",
    )
    expect(await revertName(maker, relayer, "fund", [{ ...message, amount: USDC(1000) }, signature, p])).toBe(
      "InvalidSignature",
    )
    expect(await revertName(maker, relayer, "fund", [message, highSTwin(signature), p])).toBe("InvalidSignature")

    await send(maker, relayer, settlementEscrowAbi, maker.escrow, "fund", [message, signature, p])
    const order = await readEscrow<{ owner: Address; operator: Address; quoteSigner: Address; available: bigint }>(
      maker,
      "getOrder",
      [orderId],
    )
    expect(order.owner).toBe(owner.address)
    expect(order.operator).toBe(operator.address)
    expect(order.quoteSigner).toBe(quoteSigner.address)
    expect(order.available).toBe(USDC(100))
    expect(await revertName(maker, relayer, "fund", [message, signature, p])).toBe("FundOrderAlreadyUsed")
  })

  it("closes by signature to perps margin: the CoreDepositWallet mock records the owner's deposit", async () => {
    const orderId = keccak256(toHex("order-1"))
    const logs = await close({ orderId, dex: PERPS_DEX, toMargin: true, nonce: 0xc0ffeen })
    expect(await cdwDeposits(owner.address, PERPS_DEX)).toBe(USDC(100))
    const [closed] = parseEventLogs({ abi: settlementEscrowAbi, logs, eventName: "OrderClosed" })
    expect(closed?.args).toMatchObject({
      orderId,
      owner: owner.address,
      amount: USDC(100),
      toMargin: true,
      refused: false,
    })
    expect(await readEscrow<boolean>(maker, "nonceUsed", [owner.address, 0xc0ffeen])).toBe(true)
  })

  it("when the venue refuses, the amount lands in the owner's zero-id balance; then closes to the wallet", async () => {
    const orderId = keccak256(toHex("order-2"))
    await fundOrder(orderId, USDC(40))
    await send(maker, operator, mockCoreDepositWalletAbi, maker.venue, "setRefusing", [true])
    const logs = await close({ orderId, dex: SPOT_DEX, toMargin: true, nonce: 2n })
    const [closed] = parseEventLogs({ abi: settlementEscrowAbi, logs, eventName: "OrderClosed" })
    expect(closed?.args.refused).toBe(true)
    expect(await readEscrow<bigint>(maker, "balanceOf", [owner.address])).toBe(USDC(40))
    expect(await cdwDeposits(owner.address, SPOT_DEX)).toBe(0n)
    await send(maker, operator, mockCoreDepositWalletAbi, maker.venue, "setRefusing", [false])

    const before = await usdcBalance(maker, owner.address)
    await close({ orderId: `0x${"00".repeat(32)}`, dex: 0, toMargin: false, nonce: 3n })
    expect(await usdcBalance(maker, owner.address)).toBe(before + USDC(40))
    expect(await readEscrow<bigint>(maker, "balanceOf", [owner.address])).toBe(0n)
  })

  it("rejects a high-s close signature on chain although viem verifies it", async () => {
    const orderId = keccak256(toHex("order-3"))
    await fundOrder(orderId, USDC(5))
    const message: CloseOffer = {
      orderId,
      owner: owner.address,
      dex: 0,
      toMargin: false,
      nonce: 4n,
      deadline: (await now(maker)) + 3600n,
    }
    const typed = closeOfferTypedData(MAKER_CHAIN, maker.escrow, message)
    const twin = highSTwin(await owner.signTypedData(typed))
    expect(await verifyTypedData({ ...typed, address: owner.address, signature: twin })).toBe(true)
    expect(isLowS(twin)).toBe(false)
    expect(await revertName(maker, relayer, "closeWithSig", [message, twin])).toBe("InvalidSignature")
    await close({ orderId, dex: 0, toMargin: false, nonce: 4n })
  })

  // ---------------------------------------------------------------- fills across the two chains

  let fillSeq = 0
  const prepareFill = async (orderId: Hex, amountOut: bigint, secret: Hex) => {
    const t = await now(maker)
    const quoteSet: QuoteSet = {
      orderId,
      sequence: 1n,
      generation: 1n,
      quoteSize: USDC(1_000),
      validUntil: t + 60n,
      quotes: [
        {
          chainId: BigInt(TAKER_CHAIN),
          token: taker.token,
          recipient: payee,
          supply: 100n,
          receive: 101n,
          minFill: USDC(1),
        },
      ],
    }
    const fill: Fill = {
      fillId: keccak256(toHex(`fill-${++fillSeq}`)),
      orderId,
      sequence: 1n,
      makerChainId: BigInt(MAKER_CHAIN),
      makerEscrow: maker.escrow,
      takerChainId: BigInt(TAKER_CHAIN),
      takerEscrow: taker.escrow,
      payer: payer.address,
      payee,
      amountIn: (amountOut * 101n + 99n) / 100n,
      recipient,
      amountOut,
      dex: PERPS_DEX,
      toMargin: true,
      hashlock: hashlockOf(secret),
      makerExpiry: t + 1800n,
      takerExpiry: t + 1800n + 600n,
    }
    const quoteTyped = quoteSetTypedData(MAKER_CHAIN, maker.escrow, quoteSet)
    const fillTyped = fillTypedData(fill)
    expect(hashTypedData(quoteTyped)).toBe(await readEscrow(maker, "hashQuoteSet", [quoteSetAbiArg(quoteSet)]))
    // Both escrows compute the same Fill digest: the maker's recomputes the taker domain from the struct.
    expect(hashTypedData(fillTyped)).toBe(await readEscrow(maker, "hashFill", [fill]))
    expect(hashTypedData(fillTyped)).toBe(await readEscrow(taker, "hashFill", [fill]))
    return {
      quoteSet,
      fill,
      quoteSig: await quoteSigner.signTypedData(quoteTyped),
      fillSig: await payer.signTypedData(fillTyped),
    }
  }

  const lockAndPay = async (orderId: Hex, amountOut: bigint, secret: Hex) => {
    const f = await prepareFill(orderId, amountOut, secret)
    const lockLogs = await send(maker, operator, settlementEscrowAbi, maker.escrow, "lock", [
      f.fill,
      f.fillSig,
      quoteSetAbiArg(f.quoteSet),
      0n,
      f.quoteSig,
    ])
    const [locked] = parseEventLogs({ abi: settlementEscrowAbi, logs: lockLogs, eventName: "Locked" })
    expect(locked?.args.fill).toEqual(f.fill)
    const p = await permit(taker, payer, taker.escrow, f.fill.amountIn)
    await send(taker, relayer, settlementEscrowAbi, taker.escrow, "pay", [f.fill, f.fillSig, p])
    return f
  }

  it("settles a fill: lock (maker chain), pay (taker chain), claim, claimPayment", async () => {
    const orderId = keccak256(toHex("order-fill"))
    await fundOrder(orderId, USDC(500))
    const secret = keccak256(toHex("the secret"))
    const f = await prepareFill(orderId, USDC(200), secret)

    // Only the order's operator locks, and only what the maker and the taker signed.
    const lockArgs = [f.fill, f.fillSig, quoteSetAbiArg(f.quoteSet), 0n, f.quoteSig]
    expect(await revertName(maker, relayer, "lock", lockArgs)).toBe("NotOperator")
    expect(
      await revertName(maker, operator, "lock", [{ ...f.fill, recipient: operator.address }, ...lockArgs.slice(1)]),
    ).toBe("InvalidSignature")
    await send(maker, operator, settlementEscrowAbi, maker.escrow, "lock", lockArgs)
    const order = await readEscrow<{ available: bigint; locked: bigint }>(maker, "getOrder", [orderId])
    expect(order).toMatchObject({ available: USDC(300), locked: USDC(200) })

    const payerBefore = await usdcBalance(taker, payer.address)
    const p = await permit(taker, payer, taker.escrow, f.fill.amountIn)
    await send(taker, relayer, settlementEscrowAbi, taker.escrow, "pay", [f.fill, f.fillSig, p])
    expect(await usdcBalance(taker, payer.address)).toBe(payerBefore - f.fill.amountIn)

    // The secret becomes public on the maker chain; anyone can then pay the payee on the taker chain.
    const claimLogs = await send(maker, relayer, settlementEscrowAbi, maker.escrow, "claim", [f.fill.fillId, secret])
    const [claimed] = parseEventLogs({ abi: settlementEscrowAbi, logs: claimLogs, eventName: "Claimed" })
    expect(claimed?.args).toMatchObject({ recipient, amountOut: USDC(200), refused: false, secret })
    expect(await cdwDeposits(recipient, PERPS_DEX)).toBe(USDC(200))

    const payeeBefore = await usdcBalance(taker, payee)
    await send(taker, relayer, settlementEscrowAbi, taker.escrow, "claimPayment", [f.fill.fillId, claimed?.args.secret])
    expect(await usdcBalance(taker, payee)).toBe(payeeBefore + f.fill.amountIn)
    for (const side of [maker, taker]) {
      expect(await usdcBalance(side, side.escrow)).toBe(await readEscrow<bigint>(side, "totalLiabilities"))
    }
  })

  it("refunds both sides after their expiries, without the operator", async () => {
    const orderId = keccak256(toHex("order-refund"))
    await fundOrder(orderId, USDC(50))
    const f = await lockAndPay(orderId, USDC(20), keccak256(toHex("never revealed")))
    expect(await revertName(maker, relayer, "refund", [f.fill.fillId])).toBe("NotExpired")
    expect(await revertName(taker, relayer, "refundPayment", [f.fill.fillId])).toBe("NotExpired")

    await advance(maker, 1801)
    await send(maker, relayer, settlementEscrowAbi, maker.escrow, "refund", [f.fill.fillId])
    expect(await readEscrow<{ available: bigint; locked: bigint }>(maker, "getOrder", [orderId])).toMatchObject({
      available: USDC(50),
      locked: 0n,
    })

    const payerBefore = await usdcBalance(taker, payer.address)
    await advance(taker, 1801)
    expect(await revertName(taker, relayer, "refundPayment", [f.fill.fillId])).toBe("NotExpired")
    await advance(taker, 600)
    await send(taker, relayer, settlementEscrowAbi, taker.escrow, "refundPayment", [f.fill.fillId])
    expect(await usdcBalance(taker, payer.address)).toBe(payerBefore + f.fill.amountIn)
  })

  it("cancels a lock whose payment failed (operator), then the maker's funds are available again", async () => {
    const orderId = keccak256(toHex("order-refund"))
    const f = await prepareFill(orderId, USDC(10), keccak256(toHex("cancelled")))
    await send(maker, operator, settlementEscrowAbi, maker.escrow, "lock", [
      f.fill,
      f.fillSig,
      quoteSetAbiArg(f.quoteSet),
      0n,
      f.quoteSig,
    ])
    expect(await revertName(maker, relayer, "cancelLock", [f.fill.fillId])).toBe("NotOperator")
    await send(maker, operator, settlementEscrowAbi, maker.escrow, "cancelLock", [f.fill.fillId])
    expect(await readEscrow<{ available: bigint }>(maker, "getOrder", [orderId])).toMatchObject({ available: USDC(50) })
  })
})

describe("devnet Anvil helper", () => {
  it("lags finalized by 2 × slotsInAnEpoch and persists state across a restart", async () => {
    const stateDir = mkdtempSync(path.join(tmpdir(), "anvil-state-"))
    onTestFinished(() => rmSync(stateDir, { recursive: true, force: true }))
    const stateFile = path.join(stateDir, "state.json")
    const first = await startAnvil({ chainId: 31337, slotsInAnEpoch: 2, stateFile })
    try {
      const chain = defineChain({
        id: 31337,
        name: "state",
        nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 },
        rpcUrls: { default: { http: [first.rpcUrl] } },
      })
      const test = createTestClient({ mode: "anvil", chain, transport: http(first.rpcUrl) })
      await test.mine({ blocks: 10 })
      const pub = createPublicClient({ chain, transport: http(first.rpcUrl) })
      const [latest, finalized] = await Promise.all([pub.getBlock(), pub.getBlock({ blockTag: "finalized" })])
      expect(latest.number - finalized.number).toBe(4n)
      await test.setBalance({ address: recipient, value: 12_345n })
    } finally {
      await first.stop()
    }
    const second = await startAnvil({ chainId: 31337, stateFile })
    try {
      const pub = createPublicClient({ transport: http(second.rpcUrl) })
      expect(await pub.getBalance({ address: recipient })).toBe(12_345n)
      expect(await pub.getBlockNumber()).toBeGreaterThanOrEqual(10n)
    } finally {
      await second.stop()
    }
  })
})
