// The simulators' view of their devnet chain (anvil): read deposits recorded by the margin mock, and pay
// withdrawals from a venue hot wallet by transferring the mock USDC (minting to the hot wallet first when it runs
// short: MockUSDC minting is open on devnet).
import {
  type Address,
  createPublicClient,
  createWalletClient,
  defineChain,
  type Hash,
  type Hex,
  http,
  type PublicClient,
} from "viem"
import { privateKeyToAccount } from "viem/accounts"
import { mockUSDCAbi } from "../../../src/Chain/artifacts/index.ts"
import { receiptOf } from "../Receipt.ts"

export interface SimChainOptions {
  readonly rpcUrl: string
  readonly chainId: number
  readonly token: Address
  readonly hotWalletKey: Hex
  readonly onError?: (message: string) => void
}

export interface SimChain {
  readonly client: PublicClient
  /** The devnet token (MockUSDC). */
  readonly token: Address
  readonly decimals: number
  readonly hotWallet: Address
  /** Queues a payout; resolves with the mined transaction hash (rejects if it fails). */
  readonly pay: (to: Address, amount: bigint) => Promise<Hash>
  /** Resolves once every payout queued so far has been mined or has failed. */
  readonly idle: () => Promise<void>
}

export const connectSimChain = async (o: SimChainOptions): Promise<SimChain> => {
  const chain = defineChain({
    id: o.chainId,
    name: `devnet-${o.chainId}`,
    nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 },
    rpcUrls: { default: { http: [o.rpcUrl] } },
  })
  const client = createPublicClient({ chain, transport: http(o.rpcUrl), pollingInterval: 50 }) as PublicClient
  const account = privateKeyToAccount(o.hotWalletKey)
  const wallet = createWalletClient({ chain, account, transport: http(o.rpcUrl) })
  const decimals = await client.readContract({ address: o.token, abi: mockUSDCAbi, functionName: "decimals" })

  const mined = async (hash: Hash): Promise<Hash> => {
    const receipt = await receiptOf(client, hash)
    if (receipt.status !== "success") throw new Error(`transaction ${hash} reverted`)
    return hash
  }

  // One payout at a time: the hot wallet's nonces stay in order and a mint always precedes its transfer.
  let queue: Promise<unknown> = Promise.resolve()
  const pay = (to: Address, amount: bigint): Promise<Hash> => {
    const run = async (): Promise<Hash> => {
      const balance = await client.readContract({
        address: o.token,
        abi: mockUSDCAbi,
        functionName: "balanceOf",
        args: [account.address],
      })
      if (balance < amount) {
        await mined(
          await wallet.writeContract({
            address: o.token,
            abi: mockUSDCAbi,
            functionName: "mint",
            args: [account.address, amount - balance],
          }),
        )
      }
      return mined(
        await wallet.writeContract({
          address: o.token,
          abi: mockUSDCAbi,
          functionName: "transfer",
          args: [to, amount],
        }),
      )
    }
    const result = queue.then(run, run)
    queue = result.catch((e: unknown) => o.onError?.(`payout of ${amount} to ${to} failed: ${String(e)}`))
    return result
  }

  return { client, token: o.token, decimals, hotWallet: account.address, pay, idle: () => queue.then(() => undefined) }
}

/**
 * Polls a block range callback from `fromBlock` onwards, one range at a time. `sync()` runs a round now (tests call
 * it instead of waiting for the interval).
 */
export const startBlockPoller = (
  client: PublicClient,
  fromBlock: bigint,
  intervalMs: number,
  onRange: (from: bigint, to: bigint) => Promise<void>,
  onError: (message: string) => void,
) => {
  let next = fromBlock
  let running: Promise<void> = Promise.resolve()
  const round = async () => {
    const latest = await client.getBlockNumber({ cacheTime: 0 })
    if (latest < next) return
    await onRange(next, latest)
    next = latest + 1n
  }
  const sync = (): Promise<void> => {
    running = running.then(round).catch((e: unknown) => onError(`deposit poll failed: ${String(e)}`))
    return running
  }
  const timer = setInterval(() => void sync(), intervalMs)
  timer.unref()
  return { sync, stop: () => clearInterval(timer) }
}
