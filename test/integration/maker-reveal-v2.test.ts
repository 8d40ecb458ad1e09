/**
 * The maker client's reveal loop (src/Client/MakerRevealLoop.ts) against two real anvil chains running
 * SettlementEscrowV2 (maker chain 999, taker chain 42161; `finalized` lags `latest` by 2 blocks). Locks and payments
 * are made with the escrows' own calls, as the service and a taker would. The loop reveals, by its own
 * claimPayment from the payee's key, a payment matched by its lock; it reveals nothing for an operator-as-taker
 * payment with no lock, a lock on another owner's order with the same id, a payment on a fake escrow, or too little
 * time left; a loop restarted with no state still reveals; a reveal lost to a reorg is sent again. No log line carries
 * a secret.
 */
import { type Address, createWalletClient, type Hex, http, keccak256, toHex, zeroAddress } from "viem"
import { generatePrivateKey, type PrivateKeyAccount, privateKeyToAccount } from "viem/accounts"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { settlementEscrowV2Abi, settlementEscrowV2Bytecode } from "../../src/Chain/artifacts/index.ts"
import { finalSnapshot, readPayment } from "../../src/Client/EscrowReadsV2.ts"
import {
  makeRevealLoop,
  type RevealLoopConfig,
  type RevealLoopDeps,
  type RevealOutcome,
} from "../../src/Client/MakerRevealLoop.ts"
import {
  type FillV2,
  fillDigest,
  fillV2TypedData,
  payTakeTypedData,
  type QuoteSetV2,
  quoteSetV2AbiArg,
  quoteSetV2TypedData,
} from "../../src/Domain/EscrowTypedDataV2.ts"
import { type HashlockSet, hashlockTree, secretKeyOf } from "../../src/Domain/Hashlocks.ts"
import { fundV2Order, mine, NO_PERMIT, V2_TIMING, type V2Chain } from "../support/EscrowV2Chains.ts"
import {
  MAKER_CHAIN,
  openV2Order,
  startV2Chains,
  TAKER_CHAIN,
  V2_PARTIES,
  v2Account,
} from "../support/EscrowV2Order.ts"

const { operator, owner, payer, recipient, quoteSignerKey, payee } = V2_PARTIES
/** The maker's payee on the taker chain: it sends the reveals and pays their gas. */
const payeeAccount = v2Account(6)
const attacker = v2Account(7)
const orderId = keccak256(toHex("reveal loop order"))

describe("the maker's reveal loop on two anvil chains", () => {
  let M: V2Chain
  let T: V2Chain
  let quoteSet: QuoteSetV2
  let quoteSig: Hex
  let hashlocks: HashlockSet
  let config: RevealLoopConfig
  const lines: Array<string> = []

  /** A fresh loop: nothing but its config, the maker's key and its endpoints (as after a restart). */
  const freshLoop = () => {
    const wallet = createWalletClient({ account: payeeAccount, chain: T.chain, transport: http(T.anvil.rpcUrl) })
    const deps: RevealLoopDeps = {
      maker: M.pub,
      takers: {
        [TAKER_CHAIN]: {
          reader: T.pub,
          claimPayment: (digest, secret) =>
            wallet.writeContract({
              address: T.escrow,
              abi: settlementEscrowV2Abi,
              functionName: "claimPayment",
              args: [digest, secret],
            }),
          included: async (hash) => {
            const receipt = await T.pub.waitForTransactionReceipt({ hash, pollingInterval: 20 })
            if (receipt.status !== "success") throw new Error("claimPayment reverted")
          },
        },
      },
      key: secretKeyOf(quoteSignerKey),
      nowSeconds: () => BigInt(Math.floor(Date.now() / 1000)),
      log: (line) => lines.push(line),
    }
    return makeRevealLoop(config, deps)
  }

  const fillOf = async (p: {
    slot: string
    hashlock: Hex
    index: number
    owner?: Address
    takerEscrow?: Address
    payer?: PrivateKeyAccount
    payKey: Address
  }): Promise<FillV2> => {
    const now = await T.latestTime()
    const payBy = now + 200n
    return {
      fillId: keccak256(toHex(p.slot)),
      owner: p.owner ?? owner.address,
      orderId,
      sequence: quoteSet.sequence,
      makerChainId: BigInt(MAKER_CHAIN),
      makerEscrow: M.escrow,
      takerChainId: BigInt(TAKER_CHAIN),
      takerEscrow: p.takerEscrow ?? T.escrow,
      payer: (p.payer ?? payer).address,
      payee,
      amountIn: 100_000n,
      recipient: recipient.address,
      amountOut: 100_000n,
      dex: 0,
      toMargin: false,
      hashlock: p.hashlock,
      hashlockIndex: p.index,
      payKey: p.payKey,
      payBy,
      takerExpiry: payBy + V2_TIMING.takerTimeoutMin,
      makerExpiry: payBy + V2_TIMING.takerTimeoutMin + V2_TIMING.claimWindow,
    }
  }

  /** The pay key's payTake of one Fill (relayed by the operator) on `escrow` of the taker chain. */
  const pay = async (fill: FillV2, payKey: PrivateKeyAccount, by: PrivateKeyAccount = payer) => {
    const escrow = fill.takerEscrow
    const auth = await payKey.signTypedData(payTakeTypedData(TAKER_CHAIN, escrow, [fillDigest(fill)]))
    await T.send(by, "approve", [escrow, 2n ** 255n], T.token)
    const fillSig = await by.signTypedData(fillV2TypedData(fill))
    await T.send(operator, "payTake", [[fill], [fillSig], auth, NO_PERMIT], escrow)
  }

  /** The operator's lock of `fill` on the maker chain under the maker's set. */
  const lock = async (fill: FillV2) => {
    const fillSig = await payer.signTypedData(fillV2TypedData(fill))
    await M.send(operator, "lock", [
      fill,
      fillSig,
      quoteSetV2AbiArg(quoteSet),
      0n,
      quoteSig,
      hashlocks.proof(fill.hashlockIndex),
    ])
  }

  /** What a pass decided about `digest` (other tests' payments stay on the chains and are scanned again). */
  const about = async (tick: Promise<ReadonlyArray<RevealOutcome>>, digest: Hex) =>
    (await tick).filter((o) => o.digest === digest)

  const paymentState = async (escrow: Address, digest: Hex) =>
    (await readPayment(T.pub, await finalSnapshot(T.pub), escrow, digest)).state

  beforeAll(async () => {
    ;[M, T] = await startV2Chains()
    ;({ quoteSet, quoteSig, hashlocks } = await openV2Order(M, T, orderId))
    config = {
      makerChainId: MAKER_CHAIN,
      makerEscrow: M.escrow,
      takerChains: { [TAKER_CHAIN]: { escrow: T.escrow, payee } },
      revealCutoffSeconds: 120n,
      orders: [{ owner: owner.address, orderId }],
    }
  })

  afterAll(async () => {
    await Promise.all([M?.anvil.stop(), T?.anvil.stop()])
    // Whatever happened, no log line carried a secret of the set.
    for (const secret of hashlocks?.secrets ?? []) expect(lines.join("\n")).not.toContain(secret.slice(2))
  })

  it("reveals a payment matched by its lock, by its own claimPayment, once both are final", async () => {
    const loop = freshLoop()
    const payKey = privateKeyToAccount(generatePrivateKey())
    const fill = await fillOf({ slot: "honest 0", hashlock: hashlocks.hashlocks[0]!, index: 0, payKey: payKey.address })
    const digest = fillDigest(fill)
    await lock(fill)
    await mine(M)
    await pay(fill, payKey)
    // Paid at latest only: the loop reads finalized blocks and sees nothing yet.
    expect(await loop.tick()).toEqual([])
    await mine(T)
    const outcomes = await loop.tick()
    expect(outcomes).toMatchObject([{ digest, kind: "revealed", hashlockIndex: 0 }])
    await mine(T)
    expect(await paymentState(T.escrow, digest)).toBe("Claimed")
    expect(lines.some((l) => l.startsWith(`reveal: claimPayment ${digest}`))).toBe(true)
    // Claimed: the next pass leaves it alone.
    expect(await loop.tick()).toEqual([])
  })

  it("an operator-as-taker payment with no lock: nothing revealed", async () => {
    const loop = freshLoop()
    const fakePayer = privateKeyToAccount(generatePrivateKey())
    const fakePayKey = privateKeyToAccount(generatePrivateKey())
    await T.send(operator, "mint", [fakePayer.address, 1_000_000n], T.token)
    await T.test.setBalance({ address: fakePayer.address, value: 10n ** 18n })
    const fill = await fillOf({
      slot: "operator no lock",
      hashlock: hashlocks.hashlocks[4]!,
      index: 4,
      payer: fakePayer,
      payKey: fakePayKey.address,
    })
    const digest = fillDigest(fill)
    await pay(fill, fakePayKey, fakePayer)
    await mine(T)
    expect(await about(loop.tick(), digest)).toEqual([{ digest, kind: "refused", codes: ["lock_state"] }])
    await mine(T)
    expect(await paymentState(T.escrow, digest)).toBe("Held")
  })

  it("a lock on another owner's order with the same id, under the maker's hashlock: nothing revealed", async () => {
    const loop = freshLoop()
    // The attacker funds ITS order under the maker's order id, with its own quote signer, and signs a set whose
    // tree holds the maker's (public) hashlock 5; the lock verifies on chain, the payment pays the maker's payee.
    const attackerSignerKey = generatePrivateKey()
    const attackerSigner = privateKeyToAccount(attackerSignerKey)
    await fundV2Order(M, {
      owner: attacker,
      relayer: operator,
      orderId,
      operator: operator.address,
      quoteSigner: attackerSigner.address,
      amount: 1_000_000n,
    })
    const stolen = [hashlocks.hashlocks[5]!]
    const tree = hashlockTree(stolen)
    const now = await M.latestTime()
    const attackerSet: QuoteSetV2 = {
      ...quoteSet,
      owner: attacker.address,
      quoteSize: 1_000_000n,
      issuedAt: now,
      validUntil: now + V2_TIMING.maxQuoteLife,
      hashlockRoot: tree.root,
      hashlockCount: 1,
    }
    const attackerSig = await attackerSigner.signTypedData(quoteSetV2TypedData(MAKER_CHAIN, M.escrow, attackerSet))
    const payKey = privateKeyToAccount(generatePrivateKey())
    const fill = await fillOf({
      slot: "other owner",
      hashlock: stolen[0]!,
      index: 0,
      owner: attacker.address,
      payKey: payKey.address,
    })
    const digest = fillDigest(fill)
    const fillSig = await payer.signTypedData(fillV2TypedData(fill))
    await M.send(operator, "lock", [fill, fillSig, quoteSetV2AbiArg(attackerSet), 0n, attackerSig, tree.proof(0)])
    await mine(M)
    await pay(fill, payKey)
    await mine(T)
    expect(await about(loop.tick(), digest)).toEqual([{ digest, kind: "refused", codes: ["not_ours"] }])
    expect(loop.watching()).not.toContain(digest)
    await mine(T)
    expect(await paymentState(T.escrow, digest)).toBe("Held")
  })

  it("a payment on a fake escrow (not the reviewed one) is never even read: nothing revealed", async () => {
    const loop = freshLoop()
    const wallet = createWalletClient({ account: attacker, chain: T.chain, transport: http(T.anvil.rpcUrl) })
    const t = V2_TIMING
    const hash = await wallet.deployContract({
      abi: settlementEscrowV2Abi,
      bytecode: settlementEscrowV2Bytecode,
      args: [T.token, zeroAddress, t.maxLock, t.payByMax, t.claimWindow, t.maxQuoteLife, t.takerTimeoutMin],
    })
    const fake = (await T.pub.waitForTransactionReceipt({ hash, pollingInterval: 20 })).contractAddress!
    const payKey = privateKeyToAccount(generatePrivateKey())
    const fill = await fillOf({
      slot: "fake escrow",
      hashlock: hashlocks.hashlocks[6]!,
      index: 6,
      takerEscrow: fake,
      payKey: payKey.address,
    })
    const digest = fillDigest(fill)
    await pay(fill, payKey)
    await mine(T)
    expect(await paymentState(fake, digest)).toBe("Held")
    expect(await about(loop.tick(), digest)).toEqual([])
    expect(loop.watching()).not.toContain(digest)
  })

  it("a loop restarted with its state wiped still reveals", async () => {
    const before = freshLoop()
    const payKey = privateKeyToAccount(generatePrivateKey())
    const fill = await fillOf({
      slot: "restart 1",
      hashlock: hashlocks.hashlocks[1]!,
      index: 1,
      payKey: payKey.address,
    })
    const digest = fillDigest(fill)
    // Locked at latest only (not final on the maker chain) and paid (final): the first loop waits.
    await lock(fill)
    await pay(fill, payKey)
    await mine(T)
    expect(await about(before.tick(), digest)).toEqual([{ digest, kind: "refused", codes: ["lock_state"] }])
    expect(before.watching()).toContain(digest)
    // The maker client dies; a new one knows nothing but its config and key.
    await mine(M)
    const after = freshLoop()
    expect(await about(after.tick(), digest)).toMatchObject([{ digest, kind: "revealed", hashlockIndex: 1 }])
    await mine(T)
    expect(await paymentState(T.escrow, digest)).toBe("Claimed")
  })

  it("a reveal lost to a reorg is sent again once the finalized head passed it", async () => {
    const loop = freshLoop()
    const payKey = privateKeyToAccount(generatePrivateKey())
    const fill = await fillOf({ slot: "reorg 3", hashlock: hashlocks.hashlocks[3]!, index: 3, payKey: payKey.address })
    const digest = fillDigest(fill)
    await lock(fill)
    await mine(M)
    await pay(fill, payKey)
    await mine(T)
    const beforeReveal = await T.test.snapshot()
    expect(await about(loop.tick(), digest)).toMatchObject([{ digest, kind: "revealed", hashlockIndex: 3 }])
    // Not final yet: the next pass waits for it rather than sending again.
    expect(await about(loop.tick(), digest)).toEqual([])
    // The block with the claim is dropped (anvil's revert stands for a reorg) and the chain moves on without it.
    await T.test.revert({ id: beforeReveal })
    await mine(T, 3)
    expect(await paymentState(T.escrow, digest)).toBe("Held")
    expect(await about(loop.tick(), digest)).toMatchObject([{ digest, kind: "revealed", hashlockIndex: 3 }])
    await mine(T)
    expect(await paymentState(T.escrow, digest)).toBe("Claimed")
  })

  it("too little time left before takerExpiry: nothing revealed", async () => {
    const loop = freshLoop()
    const payKey = privateKeyToAccount(generatePrivateKey())
    const fill = await fillOf({ slot: "late 2", hashlock: hashlocks.hashlocks[2]!, index: 2, payKey: payKey.address })
    const digest = fillDigest(fill)
    await lock(fill)
    await mine(M)
    await pay(fill, payKey)
    // The taker chain's time moves to 100 s before takerExpiry (the cutoff is 120 s).
    const now = await T.latestTime()
    await T.test.increaseTime({ seconds: Number(fill.takerExpiry - now - 100n) })
    await mine(T)
    expect(await about(loop.tick(), digest)).toEqual([{ digest, kind: "refused", codes: ["time"] }])
    await mine(T)
    expect(await paymentState(T.escrow, digest)).toBe("Held")
  })
})
