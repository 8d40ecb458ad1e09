/**
 * A venue devnet for integration tests: one anvil chain per venue (Hyperliquid-like 999, Aster-like 42161) with
 * the real contracts deployed (infra/devnet/Deploy.ts), a simulator per venue, and helpers to deposit through the
 * margin mocks, sign typed data and read token balances.
 */
import { FetchHttpClient, type HttpClient } from "@effect/platform"
import { Effect } from "effect"
import { type Address, createPublicClient, createWalletClient, defineChain, type Hex, http } from "viem"
import { privateKeyToAccount } from "viem/accounts"
import { ANVIL_PRIVATE_KEYS, type AnvilInstance, startAnvil } from "../../infra/devnet/Anvil.ts"
import { type Deployment, deployChain } from "../../infra/devnet/Deploy.ts"
import {
  startVenueSimulator,
  type VenueSimulator,
  type VenueSimulatorOptions,
} from "../../infra/devnet/venues/VenueSimulator.ts"
import { mockAsterVaultAbi, mockCoreDepositWalletAbi, mockUSDCAbi } from "../../src/Chain/artifacts/index.ts"
import type { TypedDataObject } from "../../src/Domain/TypedData.ts"
import type { VenueAdapter } from "../../src/Venues/VenueAdapter.ts"

export interface VenueChain {
  readonly anvil: AnvilInstance
  readonly deployment: Deployment
  readonly token: Address
  readonly marginMock: Address
}

export const HOT_WALLET_KEY = ANVIL_PRIVATE_KEYS[9] as Hex

export const startVenueChain = async (kind: "hyperliquid" | "aster", chainId: number): Promise<VenueChain> => {
  const anvil = await startAnvil({ chainId })
  const deployment = await deployChain({
    rpcUrl: anvil.rpcUrl,
    kind,
    deployerKey: ANVIL_PRIVATE_KEYS[0] as Hex,
    legacyOffers: false,
  })
  return {
    anvil,
    deployment,
    token: deployment.contracts.token.address,
    marginMock: deployment.contracts.venue.address,
  }
}

export const startSimulatorOn = (
  chain: VenueChain,
  kind: "hyperliquid" | "aster",
  extra: Partial<VenueSimulatorOptions> = {},
): Promise<VenueSimulator> =>
  startVenueSimulator({
    kind,
    port: 0,
    chainRpcUrl: chain.anvil.rpcUrl,
    chainId: chain.anvil.chainId,
    token: chain.token,
    marginMock: chain.marginMock,
    hotWalletKey: HOT_WALLET_KEY,
    signatureChainId: 42161,
    pollIntervalMs: 100,
    ...extra,
  })

const chainOf = (chain: VenueChain) =>
  defineChain({
    id: chain.anvil.chainId,
    name: "devnet",
    nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 },
    rpcUrls: { default: { http: [chain.anvil.rpcUrl] } },
  })

export const tokenBalance = (chain: VenueChain, owner: Address): Promise<bigint> =>
  createPublicClient({ chain: chainOf(chain), transport: http(chain.anvil.rpcUrl) }).readContract({
    address: chain.token,
    abi: mockUSDCAbi,
    functionName: "balanceOf",
    args: [owner],
  })

/** Deposits `amount` for the key's owner through the chain's margin mock (approve, then deposit). */
export const depositThroughMarginMock = async (
  chain: VenueChain,
  kind: "hyperliquid" | "aster",
  key: Hex,
  amount: bigint,
  dex = 0,
): Promise<void> => {
  const account = privateKeyToAccount(key)
  const transport = http(chain.anvil.rpcUrl)
  const publicClient = createPublicClient({ chain: chainOf(chain), transport })
  const wallet = createWalletClient({ chain: chainOf(chain), account, transport })
  const mined = async (hash: Hex) => {
    const receipt = await publicClient.waitForTransactionReceipt({ hash, pollingInterval: 50 })
    if (receipt.status !== "success") throw new Error(`deposit step ${hash} reverted`)
  }
  await mined(
    await wallet.writeContract({
      address: chain.token,
      abi: mockUSDCAbi,
      functionName: "approve",
      args: [chain.marginMock, amount],
    }),
  )
  await mined(
    kind === "hyperliquid"
      ? await wallet.writeContract({
          address: chain.marginMock,
          abi: mockCoreDepositWalletAbi,
          functionName: "depositFor",
          args: [account.address, amount, dex],
        })
      : await wallet.writeContract({
          address: chain.marginMock,
          abi: mockAsterVaultAbi,
          functionName: "deposit",
          args: [chain.token, amount, 0n],
        }),
  )
}

/** eth_signTypedData_v4 as a wallet would do it, from the JSON object the adapter returns. */
export const signTyped = (key: Hex, td: TypedDataObject): Promise<Hex> => {
  const account = privateKeyToAccount(key)
  return account.signTypedData(td as unknown as Parameters<typeof account.signTypedData>[0])
}

/** Builds an adapter with the real fetch-based HttpClient. */
export const buildAdapter = (make: Effect.Effect<VenueAdapter, never, HttpClient.HttpClient>) =>
  Effect.runPromise(make.pipe(Effect.provide(FetchHttpClient.layer)))

export const run = <A, E>(effect: Effect.Effect<A, E>): Promise<A> => Effect.runPromise(effect)
