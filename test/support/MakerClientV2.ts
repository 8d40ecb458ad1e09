/**
 * The maker client's v2 tests' stack: two anvil chains (hyperliquid 999, aster 42161) whose venues configure their
 * SettlementEscrowV2, the HTTP service on them, and `npm run maker` as a child process. Plus what those tests do on
 * chain without the service: fund an order, and hold a payment for the maker (a lock under its set, then payTake).
 */
import { spawn } from "node:child_process"
import { Effect, Layer } from "effect"
import { type Address, createWalletClient, getAddress, type Hex, http, keccak256, toHex } from "viem"
import { generatePrivateKey, type PrivateKeyAccount, privateKeyToAccount } from "viem/accounts"
import { mockUSDCAbi, settlementEscrowV2Abi } from "../../src/Chain/artifacts/index.ts"
import {
  type FillV2,
  fillDigest,
  fillV2TypedData,
  fundOrderV2TypedData,
  payTakeTypedData,
  type QuoteSetV2,
  quoteSetV2AbiArg,
  quoteSetV2TypedData,
} from "../../src/Domain/EscrowTypedDataV2.ts"
import { deriveHashlockSet, secretKeyOf } from "../../src/Domain/Hashlocks.ts"
import { startTestChain, type TestChain, venueEntry } from "./ChainDevnet.ts"
import { TestDatabaseLive } from "./Database.ts"
import { Chains } from "./DevnetStack.ts"
import { NO_PERMIT } from "./EscrowV2Chains.ts"
import { testAppConfig } from "./TestConfig.ts"
import { TestHttpLive } from "./TestServer.ts"

const chain = (chainId: number, kind: "hyperliquid" | "aster") =>
  Effect.acquireRelease(
    Effect.promise(() => startTestChain({ chainId, kind })),
    (c) => Effect.promise(() => c.anvil.stop()),
  )

/** As devnetStack, with each venue's SettlementEscrowV2 configured (`escrow_v2`). */
export const MakerV2Live = Layer.unwrapScoped(
  Effect.gen(function* () {
    const [hl, aster] = yield* Effect.all([chain(999, "hyperliquid"), chain(42161, "aster")], { concurrency: 2 })
    const config = testAppConfig({
      venues: [venueEntry(hl, "hyperliquid", { escrowV2: true }), venueEntry(aster, "aster", { escrowV2: true })].map(
        ({ legacy_escrow: _l, ...v }) => v,
      ),
      auth: { rpc_urls: [hl.anvil.rpcUrl] },
    })
    return TestHttpLive.pipe(
      Layer.provideMerge(TestDatabaseLive),
      Layer.provideMerge(config),
      Layer.merge(Layer.succeed(Chains, { hl, aster })),
    )
  }),
)

/** Runs `npm run maker` (its script) as a child process. */
export const runMaker = (args: Array<string>, env: Record<string, string>) => {
  const child = spawn(process.execPath, ["--import", "tsx", "infra/maker/Maker.ts", ...args], {
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  })
  let output = ""
  child.stdout.on("data", (d: Buffer) => (output += d.toString()))
  child.stderr.on("data", (d: Buffer) => (output += d.toString()))
  const exited = new Promise<number>((resolve) => child.on("exit", (code) => resolve(code ?? -1)))
  return { child, exited, output: () => output }
}

/** A transaction on `c` from `from` (the token's ABI for the token, else the v2 escrow's), awaited; a revert fails. */
export const sendOn = (
  c: TestChain,
  from: PrivateKeyAccount,
  address: Address,
  functionName: string,
  args: unknown[],
) =>
  Effect.promise(async () => {
    const wallet = createWalletClient({ account: from, chain: c.chain, transport: http(c.anvil.rpcUrl) })
    const abi = address === c.token ? mockUSDCAbi : settlementEscrowV2Abi
    const hash = await wallet.writeContract({ address, abi, functionName, args } as never)
    const receipt = await c.pub.waitForTransactionReceipt({ hash, pollingInterval: 20 })
    if (receipt.status !== "success") throw new Error(`${functionName} reverted`)
  })

/** The owner funds `orderId` with `amount` on the maker chain's (999) v2 escrow, naming the operator and quote signer. */
export const fundOrderOnChain = (
  hl: TestChain,
  parties: { readonly operator: PrivateKeyAccount; readonly owner: PrivateKeyAccount; readonly quoteSigner: Address },
  orderId: Hex,
  amount: bigint,
) =>
  Effect.gen(function* () {
    const { operator, owner, quoteSigner } = parties
    const M = getAddress(hl.escrowV2!)
    yield* sendOn(hl, operator, hl.token, "mint", [owner.address, amount])
    yield* sendOn(hl, owner, hl.token, "approve", [M, amount])
    const fundOrder = {
      orderId,
      owner: owner.address,
      operator: operator.address,
      quoteSigner,
      amount,
      deadline: (yield* Effect.promise(() => hl.pub.getBlock())).timestamp + 3600n,
    }
    const fundSig = yield* Effect.promise(() => owner.signTypedData(fundOrderV2TypedData(999, M, fundOrder)))
    yield* sendOn(hl, operator, M, "fund", [fundOrder, fundSig, NO_PERMIT])
  })

/**
 * A payment held for the maker, without the service: a lock of 0.5 USDC under the maker's set (sequence 1, four
 * hashlocks its signer key derives, the Fill under hashlock 2) on the maker chain (999), then the payer's payTake on
 * the taker chain (42161) to `payee`. Returns the fill's digest and the set's hashlocks (with their secrets).
 */
export const holdPaymentForMaker = (
  chains: { readonly hl: TestChain; readonly aster: TestChain },
  parties: {
    readonly operator: PrivateKeyAccount
    readonly payer: PrivateKeyAccount
    readonly owner: Address
    readonly signerKey: Hex
    readonly payee: Address
  },
  orderId: Hex,
  label: string,
) =>
  Effect.gen(function* () {
    const { hl, aster } = chains
    const { operator, payer, owner, signerKey, payee } = parties
    const M = getAddress(hl.escrowV2!)
    const T = getAddress(aster.escrowV2!)
    const now = (yield* Effect.promise(() => hl.pub.getBlock())).timestamp
    const hashlocks = deriveHashlockSet(
      secretKeyOf(signerKey),
      { chainId: 999n, makerEscrow: M, owner, orderId, sequence: 1n },
      4,
    )
    const quoteSet: QuoteSetV2 = {
      owner,
      orderId,
      sequence: 1n,
      generation: 1n,
      quoteSize: 1_000_000n,
      issuedAt: now,
      validUntil: now + 300n,
      hashlockRoot: hashlocks.root,
      hashlockCount: 4,
      quotes: [
        {
          chainId: 42161n,
          token: getAddress(aster.token),
          escrow: T,
          recipient: payee,
          supply: 1n,
          receive: 1n,
          minFill: 1n,
        },
      ],
    }
    const quoteSigner = privateKeyToAccount(signerKey)
    const quoteSig = yield* Effect.promise(() => quoteSigner.signTypedData(quoteSetV2TypedData(999, M, quoteSet)))
    const payKey = privateKeyToAccount(generatePrivateKey())
    const payBy = now + 100n
    const fill: FillV2 = {
      fillId: keccak256(toHex(label)),
      owner,
      orderId,
      sequence: 1n,
      makerChainId: 999n,
      makerEscrow: M,
      takerChainId: 42161n,
      takerEscrow: T,
      payer: payer.address,
      payee,
      amountIn: 500_000n,
      recipient: payer.address,
      amountOut: 500_000n,
      dex: 0,
      toMargin: false,
      hashlock: hashlocks.hashlocks[2]!,
      hashlockIndex: 2,
      payKey: payKey.address,
      payBy,
      takerExpiry: payBy + 900n,
      makerExpiry: payBy + 1500n,
    }
    const digest = fillDigest(fill)
    const fillSig = yield* Effect.promise(() => payer.signTypedData(fillV2TypedData(fill)))
    yield* sendOn(hl, operator, M, "lock", [
      fill,
      fillSig,
      quoteSetV2AbiArg(quoteSet),
      0n,
      quoteSig,
      hashlocks.proof(2),
    ])
    yield* sendOn(aster, operator, aster.token, "mint", [payer.address, 500_000n])
    yield* sendOn(aster, payer, aster.token, "approve", [T, 500_000n])
    const auth = yield* Effect.promise(() => payKey.signTypedData(payTakeTypedData(42161, T, [digest])))
    yield* sendOn(aster, operator, T, "payTake", [[fill], [fillSig], auth, NO_PERMIT])
    return { digest, hashlocks }
  })
