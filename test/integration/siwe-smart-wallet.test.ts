/**
 * SIWE with smart-contract wallets on a real anvil: an ERC-1271 wallet deployed through a CREATE2 factory,
 * and a counterfactual (not yet deployed) one whose signature carries the ERC-6492 wrapper. The SIWE
 * message names the wallet address; the wallet's owner EOA signs it.
 */
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { Effect, Either } from "effect"
import {
  createPublicClient,
  createWalletClient,
  encodeFunctionData,
  type Hex,
  http,
  type PublicClient,
  serializeErc6492Signature,
} from "viem"
import { privateKeyToAccount } from "viem/accounts"
import { foundry } from "viem/chains"
import { buildSiweMessage, verifySiwe } from "../../src/Domain/Siwe.ts"
import { checkSignatureShape, verifySiweSignature } from "../../src/Domain/SiweSignature.ts"
import { verdictCode } from "../../src/Domain/SiweVerdicts.ts"
import { freePort } from "../../src/FreePort.ts"
import {
  ANVIL_DEPLOYER_KEY,
  type CompiledContract,
  compileSmartWallet,
  type SiweAnvil,
  startSiweAnvil,
} from "../support/SiweAnvil.ts"

const owner = privateKeyToAccount("0x2a871d0798f97d79848a013d4936a73bf4cc922c825d33c1cf7073dff6d409c6")
const stranger = privateKeyToAccount("0x7c852118294e51e653712a81e05800f419141751be58f605c371e15141b007a6")
const deployer = privateKeyToAccount(ANVIL_DEPLOYER_KEY)

let anvil: SiweAnvil | undefined
let client: PublicClient
let factory: CompiledContract
let factoryAddress: Hex
let deployedWallet: Hex
let counterfactualWallet: Hex
const DEPLOYED_SALT: Hex = `0x${"01".padStart(64, "0")}`
const COUNTERFACTUAL_SALT: Hex = `0x${"02".padStart(64, "0")}`

const NOW = Date.UTC(2032, 0, 1, 12, 0, 0)
const siweFor = (address: Hex, nonce = "SmartWalletNonce1") => {
  const message = buildSiweMessage({
    domain: "app.settle.example",
    uri: "https://app.settle.example",
    chainId: foundry.id,
    address,
    nonce,
    issuedAtMs: NOW,
    expirationTimeMs: NOW + 600_000,
    statement: "Sign in to the settlement service.",
  })
  const expect = {
    domain: "app.settle.example",
    uri: "https://app.settle.example",
    chainId: foundry.id,
    address,
    nonce,
    nowMs: NOW + 1_000,
  }
  return { message, expect }
}

beforeAll(async () => {
  const [started, compiled] = await Promise.all([startSiweAnvil(foundry.id), Promise.resolve(compileSmartWallet())])
  anvil = started
  factory = compiled.factory
  const transport = http(anvil.url, { retryCount: 0 })
  client = createPublicClient({ chain: foundry, transport }) as PublicClient
  const wallet = createWalletClient({ account: deployer, chain: foundry, transport })

  const deployHash = await wallet.deployContract({ abi: factory.abi, bytecode: factory.bytecode })
  const deployReceipt = await client.waitForTransactionReceipt({ hash: deployHash, pollingInterval: 50 })
  if (deployReceipt.contractAddress == null) throw new Error("factory not deployed")
  factoryAddress = deployReceipt.contractAddress

  const walletAddress = (salt: Hex) =>
    client.readContract({
      address: factoryAddress,
      abi: factory.abi,
      functionName: "walletAddress",
      args: [owner.address, salt],
    }) as Promise<Hex>
  deployedWallet = await walletAddress(DEPLOYED_SALT)
  counterfactualWallet = await walletAddress(COUNTERFACTUAL_SALT)

  const hash = await wallet.writeContract({
    address: factoryAddress,
    abi: factory.abi,
    functionName: "deploy",
    args: [owner.address, DEPLOYED_SALT],
  })
  await client.waitForTransactionReceipt({ hash, pollingInterval: 50 })
}, 30_000)

afterAll(async () => {
  await anvil?.stop()
})

describe("SIWE with smart-contract wallets (anvil)", () => {
  it.live("fixture: one wallet deployed, the other only predicted", () =>
    Effect.gen(function* () {
      const deployedCode = yield* Effect.promise(() => client.getCode({ address: deployedWallet }))
      const counterfactualCode = yield* Effect.promise(() => client.getCode({ address: counterfactualWallet }))
      expect(deployedCode?.length ?? 0).toBeGreaterThan(2)
      expect(counterfactualCode ?? "0x").toBe("0x")
    }),
  )

  it.live("a deployed ERC-1271 wallet's signature verifies through the chain", () =>
    Effect.gen(function* () {
      const { message, expect: expectations } = siweFor(deployedWallet)
      const signature = yield* Effect.promise(() => owner.signMessage({ message }))
      // without a chain the owner's signature is not the wallet's: fails closed
      const offline = yield* Effect.flip(verifySiwe({ message, signature, expect: expectations }))
      expect(offline._tag !== "SiweChainUnavailable" && verdictCode(offline)).toBe("SIGNATURE_INVALID")
      const parsed = yield* verifySiwe({ message, signature, expect: expectations, client })
      expect(parsed.address.toLowerCase()).toBe(deployedWallet.toLowerCase())
    }),
  )

  it.live("a counterfactual wallet's ERC-6492 wrapped signature verifies without deploying it", () =>
    Effect.gen(function* () {
      const { message, expect: expectations } = siweFor(counterfactualWallet)
      const inner = yield* Effect.promise(() => owner.signMessage({ message }))
      const signature = serializeErc6492Signature({
        address: factoryAddress,
        data: encodeFunctionData({
          abi: factory.abi,
          functionName: "deploy",
          args: [owner.address, COUNTERFACTUAL_SALT],
        }),
        signature: inner,
      })
      expect(Either.getOrThrow(checkSignatureShape(signature))).toBe("contract")
      yield* verifySiwe({ message, signature, expect: expectations, client })
      // the bare inner signature is not enough for an undeployed wallet
      const bare = yield* Effect.flip(verifySiwe({ message, signature: inner, expect: expectations, client }))
      expect(bare._tag !== "SiweChainUnavailable" && verdictCode(bare)).toBe("SIGNATURE_INVALID")
      // verification is an eth_call: still nothing deployed
      expect((yield* Effect.promise(() => client.getCode({ address: counterfactualWallet }))) ?? "0x").toBe("0x")
    }),
  )

  it.live("a stranger's signature fails with SIGNATURE_INVALID, deployed or counterfactual", () =>
    Effect.gen(function* () {
      const deployed = siweFor(deployedWallet)
      const forged = yield* Effect.promise(() => stranger.signMessage({ message: deployed.message }))
      const e1 = yield* Effect.flip(
        verifySiwe({ message: deployed.message, signature: forged, expect: deployed.expect, client }),
      )
      expect(e1._tag !== "SiweChainUnavailable" && verdictCode(e1)).toBe("SIGNATURE_INVALID")

      const counterfactual = siweFor(counterfactualWallet)
      const forgedInner = yield* Effect.promise(() => stranger.signMessage({ message: counterfactual.message }))
      const wrapped = serializeErc6492Signature({
        address: factoryAddress,
        data: encodeFunctionData({
          abi: factory.abi,
          functionName: "deploy",
          args: [owner.address, COUNTERFACTUAL_SALT],
        }),
        signature: forgedInner,
      })
      const e2 = yield* Effect.flip(
        verifySiwe({ message: counterfactual.message, signature: wrapped, expect: counterfactual.expect, client }),
      )
      expect(e2._tag !== "SiweChainUnavailable" && verdictCode(e2)).toBe("SIGNATURE_INVALID")
      // the owner's signature over another message fails too
      const other = yield* Effect.promise(() =>
        owner.signMessage({ message: siweFor(deployedWallet, "OtherNonce123").message }),
      )
      const e3 = yield* Effect.flip(
        verifySiwe({ message: deployed.message, signature: other, expect: deployed.expect, client }),
      )
      expect(e3._tag !== "SiweChainUnavailable" && verdictCode(e3)).toBe("SIGNATURE_INVALID")
    }),
  )

  it.live("an unreachable RPC is SiweChainUnavailable, never valid and never SIGNATURE_INVALID", () =>
    Effect.gen(function* () {
      const closedPort = yield* freePort
      const dead = createPublicClient({
        chain: foundry,
        transport: http(`http://127.0.0.1:${closedPort}`, { retryCount: 0, timeout: 2_000 }),
      }) as PublicClient
      const deployed = siweFor(deployedWallet)
      const plain = yield* Effect.promise(() => owner.signMessage({ message: deployed.message }))
      const e1 = yield* Effect.flip(
        verifySiwe({ message: deployed.message, signature: plain, expect: deployed.expect, client: dead }),
      )
      expect(e1._tag).toBe("SiweChainUnavailable")

      const counterfactual = siweFor(counterfactualWallet)
      const inner = yield* Effect.promise(() => owner.signMessage({ message: counterfactual.message }))
      const wrapped = serializeErc6492Signature({
        address: factoryAddress,
        data: encodeFunctionData({
          abi: factory.abi,
          functionName: "deploy",
          args: [owner.address, COUNTERFACTUAL_SALT],
        }),
        signature: inner,
      })
      const e2 = yield* Effect.flip(
        verifySiweSignature({
          message: counterfactual.message,
          signature: wrapped,
          address: counterfactualWallet,
          client: dead,
        }),
      )
      expect(e2._tag).toBe("SiweChainUnavailable")
      expect(e2.message).not.toContain(inner.slice(2, 40))
    }),
  )

  it.live("an EOA still verifies locally when the RPC is down", () =>
    Effect.gen(function* () {
      const dead = createPublicClient({
        chain: foundry,
        transport: http("http://127.0.0.1:9", { retryCount: 0, timeout: 2_000 }),
      }) as PublicClient
      const { message, expect: expectations } = siweFor(owner.address)
      const signature = yield* Effect.promise(() => owner.signMessage({ message }))
      yield* verifySiwe({ message, signature, expect: expectations, client: dead })
    }),
  )
})
