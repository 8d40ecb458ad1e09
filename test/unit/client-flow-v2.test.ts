/**
 * The settlement-v2 client building blocks against two real anvil chains running SettlementEscrowV2 (maker chain
 * 999, taker chain 42161; `finalized` lags `latest` by 2 blocks): the taker's checks, its finalized lock check and
 * pay key, the maker's reveal decision from its own finalized reads, the pay key's cancel policy, and an
 * operator-as-taker payment with no lock. Deploys the generated SettlementEscrowV2 artifact.
 */
import { type Address, getAddress, type Hex, keccak256, toHex } from "viem"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { finalSnapshot, readLock, readPayment } from "../../src/Client/EscrowReadsV2.ts"
import { decideReveal, type MakerConfig } from "../../src/Client/MakerReveal.ts"
import { decideCancelFill, signCancelFill } from "../../src/Client/TakerCancel.ts"
import type { CheckedTake } from "../../src/Client/TakerChecks.ts"
import { checkLocksFinal, signPayTake } from "../../src/Client/TakerLocks.ts"
import {
  type FillV2,
  fillDigest,
  fillV2TypedData,
  payTakeTypedData,
  type QuoteSetV2,
} from "../../src/Domain/EscrowTypedDataV2.ts"
import type { HashlockSet } from "../../src/Domain/Hashlocks.ts"
import { checkedV2Take, lockV2Take, signV2Take } from "../support/CheckedTakeV2.ts"
import { mine, tokenBalance, V2_TIMING, type V2Chain } from "../support/EscrowV2Chains.ts"
import { MAKER_CHAIN, openV2Order, startV2Chains, TAKER_CHAIN, V2_PARTIES } from "../support/EscrowV2Order.ts"

const { operator, owner, payer, recipient, quoteSigner, payee } = V2_PARTIES
const orderId = keccak256(toHex("flow order"))

describe("settlement v2 clients on two anvil chains", () => {
  let M: V2Chain
  let T: V2Chain
  let makerConfig: MakerConfig
  let quoteSet: QuoteSetV2
  let quoteSig: Hex
  let hashlocks: HashlockSet

  /** A take proposed by an honest API over this maker's set, checked by the taker client and signed by the payer. */
  const signedTake = async (p: {
    payKey: Address
    amountIn: bigint
    slots: ReadonlyArray<number>
    payer?: typeof payer
  }) => {
    const who = p.payer ?? payer
    const take = await checkedV2Take(M, T, { quoteSet, hashlocks }, { ...p, payer: who, fillIds: "fill" })
    return { take, ...(await signV2Take(who, take)) }
  }

  const lockAll = (take: CheckedTake, fillSigs: ReadonlyArray<Hex>) =>
    lockV2Take(M, { quoteSet, quoteSig, hashlocks }, take, fillSigs)

  beforeAll(async () => {
    ;[M, T] = await startV2Chains()
    makerConfig = {
      makerChainId: MAKER_CHAIN,
      makerEscrow: M.escrow,
      takerChains: { [TAKER_CHAIN]: { escrow: T.escrow, payee } },
      revealCutoffSeconds: 120n,
    }
    ;({ quoteSet, quoteSig, hashlocks } = await openV2Order(M, T, orderId))
  })

  afterAll(async () => {
    await Promise.all([M?.anvil.stop(), T?.anvil.stop()])
  })

  it("a take settles: locks final → pay key → payment final → the maker reveals → both claims", async () => {
    const payKey = privateKeyToAccount(generatePrivateKey())
    const { take, fillSigs, permit } = await signedTake({
      payKey: payKey.address,
      amountIn: 1_000_000n,
      slots: [0, 1],
    })
    await lockAll(take, fillSigs)

    // Locked at latest, not yet at finalized: the client sees nothing to pay for.
    const latest = await M.pub.getBlock()
    const atLatest = await readLock(
      M.pub,
      { chainId: MAKER_CHAIN, blockNumber: latest.number, timestamp: latest.timestamp },
      M.escrow,
      take.fills[0]!.digest,
    )
    expect(atLatest.state).toBe("Locked")
    const early = await checkLocksFinal(M.pub, take)
    expect(early.ok).toBe(false)
    expect(!early.ok && early.problems.map((p) => p.code)).toEqual(["missing", "missing"])

    await mine(M)
    const final = await checkLocksFinal(M.pub, take)
    expect(final.ok ? [] : final.problems).toEqual([])
    if (!final.ok) return
    const auth = await signPayTake(payKey, final.locks)

    // An allowance or permit with the Fill signatures alone never pays; nor a PayTake over other digests.
    const fills = take.fills.map((f) => f.fill)
    const reversed = await payKey.signTypedData(
      payTakeTypedData(TAKER_CHAIN, T.escrow, [...final.locks.digests].reverse()),
    )
    expect(await T.revertOf(operator, "payTake", [fills, fillSigs, reversed, permit])).toBe("InvalidSignature")
    expect(await T.revertOf(operator, "payTake", [fills, fillSigs, fillSigs[0], permit])).toBe("InvalidSignature")
    await T.send(operator, "payTake", [fills, fillSigs, auth.signature, permit])

    // The maker reads the payment and its own lock at finalized on its own endpoints.
    const revealFor = async (i: number) => {
      const digest = take.fills[i]!.digest
      const [atT, atM] = await Promise.all([finalSnapshot(T.pub), finalSnapshot(M.pub)])
      const [payment, lock] = await Promise.all([
        readPayment(T.pub, atT, T.escrow, digest),
        readLock(M.pub, atM, M.escrow, digest),
      ])
      return decideReveal({ config: makerConfig, quoteSet, hashlocks, payment, lock, now: await T.latestTime() })
    }
    const notYet = await revealFor(0)
    expect(!notYet.reveal && notYet.reasons.map((r) => r.code)).toContain("payment_state")
    await mine(T)
    const payeeBefore = await tokenBalance(T, payee)
    const recipientBefore = await tokenBalance(M, recipient.address)
    for (const i of [0, 1]) {
      const d = await revealFor(i)
      expect(d.reveal ? [] : d.reasons).toEqual([])
      if (!d.reveal) return
      expect(d.hashlockIndex).toBe(i)
      await T.send(quoteSigner, "claimPayment", [d.digest, d.secret])
      // The secret is public now: anyone (here the operator) completes the claim on the maker chain.
      await M.send(operator, "claim", [d.digest, d.secret])
    }
    expect((await tokenBalance(T, payee)) - payeeBefore).toBe(1_000_000n)
    expect((await tokenBalance(M, recipient.address)) - recipientBefore).toBe(1_000_000n)
  })

  it("the pay key cancels before authorising; after authorising only once payBy passed at finalized unpaid", async () => {
    const payKey = privateKeyToAccount(generatePrivateKey())
    const a = await signedTake({ payKey: payKey.address, amountIn: 100_000n, slots: [2] })
    const b = await signedTake({ payKey: payKey.address, amountIn: 100_000n, slots: [3] })
    await lockAll(a.take, a.fillSigs)
    await lockAll(b.take, b.fillSigs)

    // a: never authorised → cancel at once.
    const now = await decideCancelFill(T.pub, a.take, 0, false)
    expect(now).toMatchObject({ allowed: true, reason: "not_authorised" })
    if (!now.allowed) return
    await M.send(operator, "cancelLock", [now.digest, await signCancelFill(payKey, now)])
    await mine(M)
    expect((await readLock(M.pub, await finalSnapshot(M.pub), M.escrow, now.digest)).state).toBe("Cancelled")

    // b: authorised (its client signed PayTake) but nobody paid: refused until payBy is past at finalized.
    expect(await decideCancelFill(T.pub, b.take, 0, true)).toMatchObject({ allowed: false, reason: "pay_by_not_final" })
    await T.test.increaseTime({ seconds: 300 })
    await mine(T, 1)
    expect(await decideCancelFill(T.pub, b.take, 0, true)).toMatchObject({ allowed: false, reason: "pay_by_not_final" })
    await mine(T, 2)
    const late = await decideCancelFill(T.pub, b.take, 0, true)
    expect(late).toMatchObject({ allowed: true, reason: "unpaid_after_pay_by" })
    if (!late.allowed) return
    await M.send(operator, "cancelLock", [late.digest, await signCancelFill(payKey, late)])
    await mine(M)
    expect((await readLock(M.pub, await finalSnapshot(M.pub), M.escrow, late.digest)).state).toBe("Cancelled")
  })

  it("an operator-as-taker payment with no lock: final on the taker chain, and the maker reveals nothing", async () => {
    // The operator makes a payer and a pay key of its own and pays a Fill under the maker's (public) hashlock 4,
    // never locked on the maker chain.
    const fakePayer = privateKeyToAccount(generatePrivateKey())
    const fakePayKey = privateKeyToAccount(generatePrivateKey())
    await T.send(operator, "mint", [fakePayer.address, 1_000_000n], T.token)
    await T.test.setBalance({ address: fakePayer.address, value: 10n ** 18n })
    await T.send(fakePayer, "approve", [T.escrow, 1_000_000n], T.token)
    const now = await T.latestTime()
    const fill: FillV2 = {
      fillId: keccak256(toHex("operator fill")),
      owner: owner.address,
      orderId,
      sequence: quoteSet.sequence,
      makerChainId: BigInt(MAKER_CHAIN),
      makerEscrow: M.escrow,
      takerChainId: BigInt(TAKER_CHAIN),
      takerEscrow: T.escrow,
      payer: fakePayer.address,
      payee,
      amountIn: 1_000_000n,
      recipient: getAddress(fakePayer.address),
      amountOut: 1_000_000n,
      dex: 0,
      toMargin: false,
      hashlock: hashlocks.hashlocks[4]!,
      hashlockIndex: 4,
      payKey: fakePayKey.address,
      payBy: now + 200n,
      makerExpiry: now + 200n + V2_TIMING.takerTimeoutMin + V2_TIMING.claimWindow,
      takerExpiry: now + 200n + V2_TIMING.takerTimeoutMin,
    }
    const digest = fillDigest(fill)
    const payKeySig = await fakePayKey.signTypedData(payTakeTypedData(TAKER_CHAIN, T.escrow, [digest]))
    const noPermit = { value: 0n, deadline: 0n, v: 0, r: `0x${"00".repeat(32)}`, s: `0x${"00".repeat(32)}` }
    await T.send(operator, "payTake", [
      [fill],
      [await fakePayer.signTypedData(fillV2TypedData(fill))],
      payKeySig,
      noPermit,
    ])
    await mine(T)
    const [atT, atM] = await Promise.all([finalSnapshot(T.pub), finalSnapshot(M.pub)])
    const payment = await readPayment(T.pub, atT, T.escrow, digest)
    expect(payment.state).toBe("Held")
    const lock = await readLock(M.pub, atM, M.escrow, digest)
    const d = decideReveal({ config: makerConfig, quoteSet, hashlocks, payment, lock, now: await T.latestTime() })
    expect(d.reveal).toBe(false)
    expect(!d.reveal && d.reasons.map((r) => r.code)).toContain("lock_state")
  })
})
