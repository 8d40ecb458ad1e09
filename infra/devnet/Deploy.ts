// Deploys one venue chain's contracts on a devnet (anvil) chain and funds the well-known test accounts.
//
//   hyperliquid: MockUSDC, MockCoreDepositWallet, HyperliquidMarginRouter, SettlementEscrow, LegacyEscrow,
//                SettlementEscrowV2
//   aster:       MockUSDC, MockAsterVault (router granted the deposit role), AsterMarginRouter, SettlementEscrow,
//                LegacyEscrow, SettlementEscrowV2
//
// SettlementEscrowV2 (settlement v2, beside v1 which only drains) takes the same token and router and the time bounds
// of src/Domain/SettlementTimingV2.ts (DEVNET_TIMING_V2, the inequalities of DESIGN §6).
//
// Transactions are sent back to back with explicit nonces and fixed gas limits, then awaited together, so a chain
// with interval mining (--block-time) deploys in one or two blocks instead of one block per transaction.
import {
  type Address,
  type Chain,
  createPublicClient,
  createWalletClient,
  defineChain,
  encodeDeployData,
  encodeFunctionData,
  getContractAddress,
  type Hash,
  type Hex,
  http,
  type PublicClient,
} from "viem"
import { type PrivateKeyAccount, privateKeyToAccount } from "viem/accounts"
import {
  asterMarginRouterAbi,
  asterMarginRouterBytecode,
  hyperliquidMarginRouterAbi,
  hyperliquidMarginRouterBytecode,
  legacyEscrowAbi,
  legacyEscrowBytecode,
  mockAsterVaultAbi,
  mockAsterVaultBytecode,
  mockCoreDepositWalletAbi,
  mockCoreDepositWalletBytecode,
  mockUSDCAbi,
  mockUSDCBytecode,
  settlementEscrowAbi,
  settlementEscrowBytecode,
  settlementEscrowV2Abi,
  settlementEscrowV2Bytecode,
} from "../../src/Chain/artifacts/index.ts"
import { constructorTimings, DEVNET_TIMING_V2, type TimingV2 } from "../../src/Domain/SettlementTimingV2.ts"
import { ANVIL_PRIVATE_KEYS } from "./Anvil.ts"
import { receiptOf } from "./Receipt.ts"

export type ChainKind = "hyperliquid" | "aster"

export interface DeployOptions {
  readonly rpcUrl: string
  readonly kind: ChainKind
  /** Deploys everything, owns the venue mock, and is the escrow operator of the devnet. */
  readonly deployerKey: Hex
  /** SettlementEscrow REVEAL_WINDOW in seconds (default 600). */
  readonly revealWindowSeconds?: number
  /** SettlementEscrow MAX_LOCK_DURATION in seconds (default 86 400). */
  readonly maxLockDurationSeconds?: number
  /** Broker id for the Aster router (default 0). */
  readonly asterBroker?: bigint
  /** MockUSDC minted to each funded account (default 1 000 000 USDC = 10^12 base units). */
  readonly mintPerAccount?: bigint
  /** Accounts to fund (default: the ten anvil accounts). */
  readonly fundedAccounts?: ReadonlyArray<Address>
  /** Create a few historical LegacyEscrow offers (default true; uses anvil accounts #1 and #2). */
  readonly legacyOffers?: boolean
  /** SettlementEscrowV2's time bounds (default DEVNET_TIMING_V2); false: no v2 escrow. */
  readonly escrowV2?: TimingV2 | false
}

/** The SettlementEscrowV2 immutables, seconds (the `settlement` config values it must match). */
export interface EscrowV2Timing {
  readonly maxLockSeconds: number
  readonly payByMaxSeconds: number
  readonly claimWindowSeconds: number
  readonly maxQuoteLifeSeconds: number
  readonly takerTimeoutMinSeconds: number
}

export interface DeployedContract {
  readonly address: Address
  /** Deployment block number (decimal string). */
  readonly block: string
}

export interface LegacyOfferRecord {
  readonly id: string
  readonly owner: Address
  readonly amount: string
  readonly refundAt: number
  readonly reclaimed: boolean
}

/** JSON-serialisable: addresses, decimal strings for blocks and amounts, numbers for ids and seconds. */
export interface Deployment {
  readonly kind: ChainKind
  readonly chainId: number
  readonly rpcUrl: string
  readonly deployer: Address
  readonly operator: Address
  readonly revealWindowSeconds: number
  readonly maxLockDurationSeconds: number
  readonly contracts: {
    readonly token: DeployedContract
    /** MockCoreDepositWallet (hyperliquid) or MockAsterVault (aster). */
    readonly venue: DeployedContract
    readonly router: DeployedContract
    readonly escrow: DeployedContract
    readonly legacyEscrow: DeployedContract
    /** SettlementEscrowV2 (absent in a record made before v2, or without its artifact). */
    readonly escrowV2?: DeployedContract
  }
  /** SettlementEscrowV2's immutables, when it is deployed. */
  readonly escrowV2Timing?: EscrowV2Timing
  readonly token: { readonly symbol: "USDC"; readonly decimals: 6 }
  readonly fundedAccounts: ReadonlyArray<Address>
  readonly mintedPerAccount: string
  readonly legacyOffers: ReadonlyArray<LegacyOfferRecord>
}

interface TxRequest {
  readonly to?: Address
  readonly data: Hex
  readonly gas: bigint
}

const DEPLOY_GAS = 6_000_000n
const CALL_GAS = 300_000n

/** Sends `requests` from `account` with consecutive nonces, then waits for every receipt (all must succeed). */
const sendAll = async (
  publicClient: PublicClient,
  chain: Chain,
  rpcUrl: string,
  account: PrivateKeyAccount,
  requests: ReadonlyArray<TxRequest>,
): Promise<Array<{ readonly block: bigint; readonly contractAddress: Address | null | undefined }>> => {
  const wallet = createWalletClient({ account, chain, transport: http(rpcUrl) })
  const fees = await publicClient.estimateFeesPerGas()
  let nonce = await publicClient.getTransactionCount({ address: account.address, blockTag: "pending" })
  const hashes: Array<Hash> = []
  for (const r of requests) {
    hashes.push(
      await wallet.sendTransaction({
        ...(r.to === undefined ? {} : { to: r.to }),
        data: r.data,
        gas: r.gas,
        nonce: nonce++,
        maxFeePerGas: fees.maxFeePerGas * 2n,
        maxPriorityFeePerGas: fees.maxPriorityFeePerGas,
      }),
    )
  }
  const receipts = await Promise.all(hashes.map((hash) => receiptOf(publicClient, hash)))
  return receipts.map((rc, i) => {
    if (rc.status !== "success") throw new Error(`devnet deploy: transaction ${i} (${rc.transactionHash}) reverted`)
    return { block: rc.blockNumber, contractAddress: rc.contractAddress }
  })
}

/** Deploys the chain's contracts and returns where they are. */
export const deployChain = async (options: DeployOptions): Promise<Deployment> => {
  const revealWindow = options.revealWindowSeconds ?? 600
  const maxLock = options.maxLockDurationSeconds ?? 86_400
  const mintPerAccount = options.mintPerAccount ?? 1_000_000n * 10n ** 6n
  const fundedAccounts = options.fundedAccounts ?? ANVIL_PRIVATE_KEYS.map((k) => privateKeyToAccount(k as Hex).address)

  const bootstrap = createPublicClient({ transport: http(options.rpcUrl) })
  const chainId = await bootstrap.getChainId()
  const chain = defineChain({
    id: chainId,
    name: `devnet-${options.kind}-${chainId}`,
    nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 },
    rpcUrls: { default: { http: [options.rpcUrl] } },
  })
  const publicClient = createPublicClient({ chain, transport: http(options.rpcUrl) }) as PublicClient
  const deployer = privateKeyToAccount(options.deployerKey)
  const startNonce = await publicClient.getTransactionCount({ address: deployer.address, blockTag: "pending" })
  const at = (offset: number) => getContractAddress({ from: deployer.address, nonce: BigInt(startNonce + offset) })

  // Nonce plan (addresses are known before anything is mined).
  const token = at(0)
  const venue = at(1)
  const router = at(2)
  const escrow = at(3)
  const legacy = at(4)
  const v2Timing = options.escrowV2 === false ? undefined : (options.escrowV2 ?? DEVNET_TIMING_V2)
  const escrowV2 = v2Timing === undefined ? undefined : at(5)

  const deploy = (data: Hex, gas: bigint = DEPLOY_GAS): TxRequest => ({ data, gas })
  const call = (to: Address, data: Hex): TxRequest => ({ to, data, gas: CALL_GAS })

  const venueDeploy =
    options.kind === "hyperliquid"
      ? encodeDeployData({
          abi: mockCoreDepositWalletAbi,
          bytecode: mockCoreDepositWalletBytecode,
          args: [token, deployer.address],
        })
      : encodeDeployData({ abi: mockAsterVaultAbi, bytecode: mockAsterVaultBytecode, args: [token, deployer.address] })
  const routerDeploy =
    options.kind === "hyperliquid"
      ? encodeDeployData({
          abi: hyperliquidMarginRouterAbi,
          bytecode: hyperliquidMarginRouterBytecode,
          args: [token, venue],
        })
      : encodeDeployData({
          abi: asterMarginRouterAbi,
          bytecode: asterMarginRouterBytecode,
          args: [token, venue, options.asterBroker ?? 0n],
        })

  const requests: Array<TxRequest> = [
    deploy(encodeDeployData({ abi: mockUSDCAbi, bytecode: mockUSDCBytecode })),
    deploy(venueDeploy),
    deploy(routerDeploy),
    deploy(
      encodeDeployData({
        abi: settlementEscrowAbi,
        bytecode: settlementEscrowBytecode,
        args: [token, router, BigInt(revealWindow), BigInt(maxLock)],
      }),
    ),
    deploy(encodeDeployData({ abi: legacyEscrowAbi, bytecode: legacyEscrowBytecode, args: [token] })),
  ]
  if (v2Timing !== undefined) {
    requests.push(
      deploy(
        encodeDeployData({
          abi: settlementEscrowV2Abi,
          bytecode: settlementEscrowV2Bytecode,
          args: [token, router, ...constructorTimings(v2Timing)],
        }),
        // ~22 KB of runtime code: more than the other contracts' fixed limit.
        12_000_000n,
      ),
    )
  }
  if (options.kind === "aster") {
    // The real vault gates depositFor behind DEPOSIT_ROLE; the devnet grants it so margin payouts work.
    requests.push(
      call(venue, encodeFunctionData({ abi: mockAsterVaultAbi, functionName: "setDepositor", args: [router, true] })),
    )
  }
  for (const account of fundedAccounts) {
    requests.push(
      call(token, encodeFunctionData({ abi: mockUSDCAbi, functionName: "mint", args: [account, mintPerAccount] })),
    )
  }
  const results = await sendAll(publicClient, chain, options.rpcUrl, deployer, requests)
  const deployed = (i: number, expected: Address): DeployedContract => {
    const r = results[i]
    if (r === undefined || r.contractAddress?.toLowerCase() !== expected.toLowerCase()) {
      throw new Error(`devnet deploy: contract ${i} is not at the planned address ${expected}`)
    }
    return { address: expected, block: r.block.toString() }
  }

  const legacyOffers =
    options.legacyOffers === false ? [] : await createLegacyOffers(publicClient, chain, options.rpcUrl, token, legacy)

  return {
    kind: options.kind,
    chainId,
    rpcUrl: options.rpcUrl,
    deployer: deployer.address,
    operator: deployer.address,
    revealWindowSeconds: revealWindow,
    maxLockDurationSeconds: maxLock,
    contracts: {
      token: deployed(0, token),
      venue: deployed(1, venue),
      router: deployed(2, router),
      escrow: deployed(3, escrow),
      legacyEscrow: deployed(4, legacy),
      ...(escrowV2 === undefined ? {} : { escrowV2: deployed(5, escrowV2) }),
    },
    ...(escrowV2 === undefined || v2Timing === undefined
      ? {}
      : {
          escrowV2Timing: {
            maxLockSeconds: v2Timing.maxLock,
            payByMaxSeconds: v2Timing.payByMax,
            claimWindowSeconds: v2Timing.claimWindow,
            maxQuoteLifeSeconds: v2Timing.maxQuoteLife,
            takerTimeoutMinSeconds: v2Timing.takerTimeoutMin,
          },
        }),
    token: { symbol: "USDC", decimals: 6 },
    fundedAccounts: [...fundedAccounts],
    mintedPerAccount: mintPerAccount.toString(),
    legacyOffers,
  }
}

/**
 * History for the legacy scan, made by anvil accounts #1 and #2 (each mints its own MockUSDC): one offer
 * reclaimable now, one reclaimable in 30 days, one already reclaimed.
 */
const createLegacyOffers = async (
  publicClient: PublicClient,
  chain: Chain,
  rpcUrl: string,
  token: Address,
  legacy: Address,
): Promise<Array<LegacyOfferRecord>> => {
  const now = Number((await publicClient.getBlock()).timestamp)
  const day = 86_400
  const [alice, bob] = [ANVIL_PRIVATE_KEYS[1], ANVIL_PRIVATE_KEYS[2]].map((k) => privateKeyToAccount(k as Hex))
  if (alice === undefined || bob === undefined) throw new Error("unreachable")
  const offerCount = await publicClient.readContract({
    address: legacy,
    abi: legacyEscrowAbi,
    functionName: "offerCount",
  })
  const firstId = offerCount + 1n
  const usdc = (n: number) => BigInt(n) * 10n ** 6n
  const fundAndOffer = (
    owner: Address,
    offers: ReadonlyArray<{ amount: bigint; refundAt: number }>,
  ): Array<TxRequest> => {
    const total = offers.reduce((s, o) => s + o.amount, 0n)
    return [
      {
        to: token,
        data: encodeFunctionData({ abi: mockUSDCAbi, functionName: "mint", args: [owner, total] }),
        gas: CALL_GAS,
      },
      {
        to: token,
        data: encodeFunctionData({ abi: mockUSDCAbi, functionName: "approve", args: [legacy, total] }),
        gas: CALL_GAS,
      },
      ...offers.map((o) => ({
        to: legacy,
        data: encodeFunctionData({
          abi: legacyEscrowAbi,
          functionName: "createOffer",
          args: [o.amount, BigInt(o.refundAt)],
        }),
        gas: CALL_GAS,
      })),
    ]
  }
  const past = (days: number) => Math.max(0, now - days * day)
  const aliceOffers = [
    { amount: usdc(25), refundAt: past(1) },
    { amount: usdc(10), refundAt: now + 30 * day },
  ]
  const bobOffers = [{ amount: usdc(40), refundAt: past(2) }]
  // Sequential per sender (nonces), the two senders one after the other to keep ids predictable.
  await sendAll(publicClient, chain, rpcUrl, alice, fundAndOffer(alice.address, aliceOffers))
  await sendAll(publicClient, chain, rpcUrl, bob, [
    ...fundAndOffer(bob.address, bobOffers),
    {
      to: legacy,
      data: encodeFunctionData({ abi: legacyEscrowAbi, functionName: "reclaim", args: [firstId + 2n] }),
      gas: CALL_GAS,
    },
  ])
  return [
    ...aliceOffers.map((o, i) => ({
      id: (firstId + BigInt(i)).toString(),
      owner: alice.address,
      amount: o.amount.toString(),
      refundAt: o.refundAt,
      reclaimed: false,
    })),
    {
      id: (firstId + 2n).toString(),
      owner: bob.address,
      amount: usdc(40).toString(),
      refundAt: past(2),
      reclaimed: true,
    },
  ]
}
