import {
  type Abi,
  type Address,
  BaseError,
  type Chain,
  ContractFunctionRevertedError,
  createPublicClient,
  createTestClient,
  createWalletClient,
  defineChain,
  type Hex,
  http,
  type PublicClient,
  type TestClient,
  zeroAddress,
  zeroHash,
} from "viem"
import { type PrivateKeyAccount, privateKeyToAccount } from "viem/accounts"
import { ANVIL_PRIVATE_KEYS, type AnvilInstance, startAnvil } from "../../infra/devnet/Anvil.ts"
import {
  settlementEscrowV2Abi as abi,
  settlementEscrowV2Bytecode as bytecode,
  mockUSDCAbi,
  mockUSDCBytecode,
} from "../../src/Chain/artifacts/index.ts"
import { type FundOrder, fundOrderV2TypedData } from "../../src/Domain/EscrowTypedDataV2.ts"

/**
 * An anvil chain with MockUSDC and a SettlementEscrowV2 (no router) for settlement-v2 tests. Automine: one block per
 * transaction; with `slotsInAnEpoch: 1` the `finalized` tag lags `latest` by 2 blocks, so a fresh transaction is
 * visible at `latest` and not yet at `finalized` until two more blocks are mined.
 */
export interface V2Chain {
  readonly anvil: AnvilInstance
  readonly chain: Chain
  readonly pub: PublicClient
  readonly test: TestClient<"anvil">
  readonly abi: Abi
  readonly escrow: Address
  readonly token: Address
  /** Sends a call to the escrow (or `to`) and waits for its receipt; throws on a revert. */
  readonly send: (
    from: PrivateKeyAccount,
    functionName: string,
    args: ReadonlyArray<unknown>,
    to?: Address,
  ) => Promise<void>
  /** The escrow's custom error name a call would revert with, or undefined when it would succeed. */
  readonly revertOf: (
    from: PrivateKeyAccount,
    functionName: string,
    args: ReadonlyArray<unknown>,
  ) => Promise<string | undefined>
  readonly latestTime: () => Promise<bigint>
}

/** Immutables small enough for tests: payByMax + takerTimeoutMin + claimWindow ≤ maxLock. */
export const V2_TIMING = {
  maxLock: 3600n,
  payByMax: 300n,
  claimWindow: 600n,
  maxQuoteLife: 600n,
  takerTimeoutMin: 600n,
} as const

export const NO_PERMIT = { value: 0n, deadline: 0n, v: 0, r: zeroHash, s: zeroHash } as const

export const startV2Chain = async (chainId: number, options: { readonly slotsInAnEpoch?: number } = {}) => {
  const anvil = await startAnvil({ chainId, ...options })
  const chain = defineChain({
    id: chainId,
    name: `v2-${chainId}`,
    nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 },
    rpcUrls: { default: { http: [anvil.rpcUrl] } },
  })
  const pub = createPublicClient({ chain, transport: http(anvil.rpcUrl), cacheTime: 0 }) as PublicClient
  const test = createTestClient({ chain, mode: "anvil", transport: http(anvil.rpcUrl) })
  const wallet = (account: PrivateKeyAccount) => createWalletClient({ account, chain, transport: http(anvil.rpcUrl) })
  // Automine answers eth_sendRawTransaction once the block is mined: read the receipt at once (no block polling).
  const wait = async (hash: Hex) => {
    const rc = await pub
      .getTransactionReceipt({ hash })
      .catch(() => pub.waitForTransactionReceipt({ hash, pollingInterval: 20, timeout: 10_000 }))
    if (rc.status !== "success") throw new Error(`transaction ${hash} reverted`)
    return rc
  }
  const deployer = privateKeyToAccount(ANVIL_PRIVATE_KEYS[0])
  const token = (await wait(await wallet(deployer).deployContract({ abi: mockUSDCAbi, bytecode: mockUSDCBytecode })))
    .contractAddress as Address
  const t = V2_TIMING
  const escrow = (
    await wait(
      await wallet(deployer).deployContract({
        abi,
        bytecode,
        args: [token, zeroAddress, t.maxLock, t.payByMax, t.claimWindow, t.maxQuoteLife, t.takerTimeoutMin],
      }),
    )
  ).contractAddress as Address
  const abiOf = (to: Address) => (to === token ? (mockUSDCAbi as Abi) : abi)
  const v2: V2Chain = {
    anvil,
    chain,
    pub,
    test,
    abi,
    escrow,
    token,
    send: async (from, functionName, args, to = escrow) => {
      await wait(await wallet(from).writeContract({ address: to, abi: abiOf(to), functionName, args } as never))
    },
    revertOf: async (from, functionName, args) => {
      try {
        await pub.simulateContract({ account: from, address: escrow, abi, functionName, args } as never)
        return undefined
      } catch (e) {
        const reverted = e instanceof BaseError ? e.walk((x) => x instanceof ContractFunctionRevertedError) : null
        if (reverted instanceof ContractFunctionRevertedError) return reverted.data?.errorName ?? reverted.reason
        throw e
      }
    },
    latestTime: async () => (await pub.getBlock()).timestamp,
  }
  return v2
}

/** Mints `amount` to the owner and funds order `orderId` with it (owner's FundOrder, allowance; relayed by `relayer`). */
export const fundV2Order = async (
  c: V2Chain,
  p: {
    readonly owner: PrivateKeyAccount
    readonly relayer: PrivateKeyAccount
    readonly orderId: Hex
    readonly operator: Address
    readonly quoteSigner: Address
    readonly amount: bigint
  },
): Promise<FundOrder> => {
  await c.send(p.relayer, "mint", [p.owner.address, p.amount], c.token)
  await c.send(p.owner, "approve", [c.escrow, p.amount], c.token)
  const order: FundOrder = {
    orderId: p.orderId,
    owner: p.owner.address,
    operator: p.operator,
    quoteSigner: p.quoteSigner,
    amount: p.amount,
    deadline: (await c.latestTime()) + 3600n,
  }
  const signature = await p.owner.signTypedData(fundOrderV2TypedData(c.chain.id, c.escrow, order))
  await c.send(p.relayer, "fund", [order, signature, NO_PERMIT])
  return order
}

/** Mines `blocks` blocks on `c`; the default 2 makes what is at `latest` now visible at `finalized`. */
export const mine = (c: V2Chain, blocks = 2) => c.test.mine({ blocks })

/** `who`'s MockUSDC balance on `c`, at `latest`. */
export const tokenBalance = (c: V2Chain, who: Address) =>
  c.pub.readContract({ address: c.token, abi: mockUSDCAbi, functionName: "balanceOf", args: [who] })
