import {
  type Address,
  type Chain,
  createPublicClient,
  createTestClient,
  defineChain,
  encodeFunctionData,
  type Hex,
  http,
  type PublicClient,
  type TestClient,
  zeroHash,
} from "viem"
import { type PrivateKeyAccount, privateKeyToAccount } from "viem/accounts"
import { ANVIL_PRIVATE_KEYS, type AnvilInstance, type AnvilOptions, startAnvil } from "../../infra/devnet/Anvil.ts"
import { type ChainKind, type Deployment, deployChain } from "../../infra/devnet/Deploy.ts"
import { receiptOf } from "../../infra/devnet/Receipt.ts"
import { mockUSDCAbi, settlementEscrowAbi } from "../../src/Chain/artifacts/index.ts"
import {
  type CloseOffer,
  closeOfferTypedData,
  type FundOrder,
  fundOrderTypedData,
} from "../../src/Domain/EscrowTypedData.ts"

/**
 * A venue chain for chain-layer tests: anvil with the devnet contracts deployed (deployer = anvil
 * account #0), plus helpers that make escrow events quickly: every helper signs locally and sends
 * back to back with explicit nonces, so many transactions land in many blocks in little time.
 */
export interface TestChain {
  readonly anvil: AnvilInstance
  readonly deployment: Deployment
  readonly chain: Chain
  readonly pub: PublicClient
  readonly test: TestClient<"anvil">
  readonly escrow: Address
  readonly token: Address
  readonly legacy: Address
  /** The chain's SettlementEscrowV2 (absent only in a deployment made with `escrowV2: false`). */
  readonly escrowV2: Address | undefined
}

export const key = (i: number) => ANVIL_PRIVATE_KEYS[i] as Hex
export const account = (i: number) => privateKeyToAccount(key(i))

export const startTestChain = async (
  options: { readonly chainId?: number; readonly kind?: ChainKind } & AnvilOptions = {},
): Promise<TestChain> => {
  const chainId = options.chainId ?? 999
  const anvil = await startAnvil({ ...options, chainId })
  const deployment = await deployChain({
    rpcUrl: anvil.rpcUrl,
    kind: options.kind ?? "hyperliquid",
    deployerKey: key(0),
  })
  const chain = defineChain({
    id: chainId,
    name: `test-${chainId}`,
    nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 },
    rpcUrls: { default: { http: [anvil.rpcUrl] } },
  })
  const pub = createPublicClient({ chain, transport: http(anvil.rpcUrl), cacheTime: 0 }) as PublicClient
  const test = createTestClient({ mode: "anvil", chain, transport: http(anvil.rpcUrl) })
  return {
    anvil,
    deployment,
    chain,
    pub,
    test,
    escrow: deployment.contracts.escrow.address,
    token: deployment.contracts.token.address,
    legacy: deployment.contracts.legacyEscrow.address,
    escrowV2: deployment.contracts.escrowV2?.address,
  }
}

/**
 * Lag injection, to find tests that race the index or the relayer: TEST_WATCHER_LAG_MS=n makes every watcher built
 * here poll every n ms (and no sooner on a new block), TEST_RELAYER_LAG_MS=n every relayer. A test that passes only
 * while the index is current, or only while the relayer is ahead of it, fails far more often under them (README,
 * Tests).
 */
const lagged = (
  settings: Record<string, unknown> | undefined,
  lagMs: string | undefined,
  keys: ReadonlyArray<string>,
) => (lagMs === undefined ? settings : { ...settings, ...Object.fromEntries(keys.map((k) => [k, Number(lagMs)])) })

const watcherAndRelayer = (extra: {
  readonly watcher?: Record<string, unknown>
  readonly relayer?: Record<string, unknown>
}) => {
  const watcher = lagged(extra.watcher, process.env.TEST_WATCHER_LAG_MS, ["poll_ms", "head_poll_ms"])
  const relayer = lagged(extra.relayer, process.env.TEST_RELAYER_LAG_MS, ["poll_ms"])
  return { ...(watcher ? { watcher } : {}), ...(relayer ? { relayer } : {}) }
}

/** The config entry of a venue on this chain (raw JSON shape, before decoding). */
export const venueEntry = (
  c: TestChain,
  id: string,
  extra: {
    readonly watcher?: Record<string, unknown>
    readonly relayer?: Record<string, unknown>
    /** Configure the chain's SettlementEscrowV2 (`escrow_v2`), so the watcher indexes it too. */
    readonly escrowV2?: boolean
  } = {},
) => ({
  id,
  name: `${id} (test)`,
  kind: c.deployment.kind,
  chain_id: c.deployment.chainId,
  rpc_urls: [c.anvil.rpcUrl],
  token: c.token,
  symbol: "USDC",
  decimals: 6,
  escrow: c.escrow,
  deployment_block: Number(c.deployment.contracts.token.block),
  legacy_escrow: c.legacy,
  ...watcherAndRelayer(extra),
  ...(extra.escrowV2 && c.escrowV2 !== undefined
    ? { escrow_v2: { address: c.escrowV2, deployment_block: Number(c.deployment.contracts.escrowV2!.block) } }
    : {}),
})

const nonceOf = (c: TestChain, who: Address) => c.pub.getTransactionCount({ address: who, blockTag: "pending" })

/** Sends raw calls from `from` with consecutive nonces; resolves when all are mined (success required). */
export const sendCalls = async (
  c: TestChain,
  from: PrivateKeyAccount,
  calls: ReadonlyArray<{ readonly to: Address; readonly data: Hex; readonly gas?: bigint }>,
): Promise<Array<Hex>> => {
  let nonce = await nonceOf(c, from.address)
  const block = await c.pub.getBlock()
  const maxFeePerGas = (block.baseFeePerGas ?? 1_000_000_000n) * 3n + 1_000_000_000n
  const hashes: Array<Hex> = []
  for (const call of calls) {
    const raw = await from.signTransaction({
      chainId: c.chain.id,
      type: "eip1559",
      to: call.to,
      data: call.data,
      gas: call.gas ?? 500_000n,
      nonce: nonce++,
      maxFeePerGas,
      maxPriorityFeePerGas: 1_000_000_000n,
    })
    hashes.push(await c.pub.request({ method: "eth_sendRawTransaction", params: [raw] }))
  }
  const receipts = await Promise.all(hashes.map((hash) => receiptOf(c.pub, hash, { everyMs: 25 })))
  for (const r of receipts) if (r.status !== "success") throw new Error(`call ${r.transactionHash} reverted`)
  return hashes
}

export const orderIdOf = (label: string, i: number): Hex =>
  `0x${Buffer.from(`${label}:${i}`).toString("hex").padEnd(64, "0").slice(0, 64)}` as Hex

const NO_PERMIT = { value: 0n, deadline: 0n, v: 0, r: zeroHash, s: zeroHash } as const

/**
 * `count` FundOrder fundings of `amount` by `owner` (who approves the escrow first), relayed by
 * `relayer`: one OrderFunded event per transaction, one transaction per block under automine.
 */
export const fundOrders = async (
  c: TestChain,
  options: {
    readonly owner: PrivateKeyAccount
    readonly relayer: PrivateKeyAccount
    readonly label: string
    readonly count: number
    readonly amount: bigint
    readonly operator?: Address
    readonly first?: number
  },
): Promise<Array<FundOrder>> => {
  await sendCalls(c, options.owner, [
    {
      to: c.token,
      data: encodeFunctionData({ abi: mockUSDCAbi, functionName: "approve", args: [c.escrow, 2n ** 255n] }),
    },
  ])
  const now = (await c.pub.getBlock()).timestamp
  const orders: Array<FundOrder> = []
  const calls: Array<{ to: Address; data: Hex }> = []
  for (let i = 0; i < options.count; i++) {
    const order: FundOrder = {
      orderId: orderIdOf(options.label, (options.first ?? 0) + i),
      owner: options.owner.address,
      operator: options.operator ?? account(0).address,
      quoteSigner: account(5).address,
      amount: options.amount,
      deadline: now + 86_400n,
    }
    const signature = await options.owner.signTypedData(fundOrderTypedData(c.chain.id, c.escrow, order))
    orders.push(order)
    calls.push({
      to: c.escrow,
      data: encodeFunctionData({ abi: settlementEscrowAbi, functionName: "fund", args: [order, signature, NO_PERMIT] }),
    })
  }
  await sendCalls(c, options.relayer, calls)
  return orders
}

/** Closes orders by the owner's CloseOffer (to the wallet), relayed by `relayer`. */
export const closeOrders = async (
  c: TestChain,
  options: {
    readonly owner: PrivateKeyAccount
    readonly relayer: PrivateKeyAccount
    readonly orderIds: ReadonlyArray<Hex>
    readonly nonceBase: bigint
  },
) => {
  const now = (await c.pub.getBlock()).timestamp
  const calls: Array<{ to: Address; data: Hex }> = []
  for (const [i, orderId] of options.orderIds.entries()) {
    const offer: CloseOffer = {
      orderId,
      owner: options.owner.address,
      dex: 0,
      toMargin: false,
      nonce: options.nonceBase + BigInt(i),
      deadline: now + 3600n,
    }
    const signature = await options.owner.signTypedData(closeOfferTypedData(c.chain.id, c.escrow, offer))
    calls.push({
      to: c.escrow,
      data: encodeFunctionData({ abi: settlementEscrowAbi, functionName: "closeWithSig", args: [offer, signature] }),
    })
  }
  return sendCalls(c, options.relayer, calls)
}

/** Mines `n` empty blocks. */
export const mine = (c: TestChain, n: number) => c.test.mine({ blocks: n })
