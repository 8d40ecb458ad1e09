/**
 * The taker client's own claim of a stalled lock (src/Client/TakerClaim.ts) on two real anvil chains running
 * SettlementEscrowV2 (maker chain 999, taker chain 42161; `finalized` lags `latest` by 2 blocks). The test plays the
 * service (lock, payTake relay, and its claim when it is "running") and the maker (its own claimPayment); the
 * client's claims are sent by its own gas-paying wallet, counted through its ClaimSender.
 */
import { createWalletClient, type Hex, http, keccak256, toHex } from "viem"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { finalSnapshot, readLock } from "../../src/Client/EscrowReadsV2.ts"
import type { CheckedTake } from "../../src/Client/TakerChecks.ts"
import {
  type ClaimOptions,
  type ClaimSender,
  claimIfStalled,
  DEFAULT_CLAIM_GRACE_SECONDS,
  walletClaimSender,
} from "../../src/Client/TakerClaim.ts"
import { checkLocksFinal, signPayTake } from "../../src/Client/TakerLocks.ts"
import type { QuoteSetV2 } from "../../src/Domain/EscrowTypedDataV2.ts"
import type { HashlockSet } from "../../src/Domain/Hashlocks.ts"
import { checkedV2Take, lockV2Take, signV2Take } from "../support/CheckedTakeV2.ts"
import { mine, tokenBalance, type V2Chain } from "../support/EscrowV2Chains.ts"
import { openV2Order, startV2Chains, V2_PARTIES, v2Account } from "../support/EscrowV2Order.ts"

const { operator, payer, recipient, quoteSigner } = V2_PARTIES
/** The taker client's gas-paying account on the maker chain. */
const claimer = v2Account(7)
const orderId = keccak256(toHex("taker claim order"))

describe("the taker client claims a stalled v2 lock itself", () => {
  let M: V2Chain
  let T: V2Chain
  let quoteSet: QuoteSetV2
  let quoteSig: Hex
  let hashlocks: HashlockSet
  let sender: ClaimSender
  /** Claims the client sent, by digest. */
  const sent: Array<Hex> = []

  const lockState = async (digest: Hex) => (await readLock(M.pub, await finalSnapshot(M.pub), M.escrow, digest)).state
  const run = (take: CheckedTake, options: Partial<ClaimOptions> = {}) =>
    claimIfStalled(M.pub, T.pub, take, sender, { now: () => 0n, ...options })

  /** A take over hashlock `slots`, checked and signed, locked (final) and paid (final) by its pay key. */
  const paidTake = async (slots: ReadonlyArray<number>, amountIn: bigint) => {
    const payKey = privateKeyToAccount(generatePrivateKey())
    const take = await checkedV2Take(
      M,
      T,
      { quoteSet, hashlocks },
      { payer, payKey: payKey.address, amountIn, slots, fillIds: "claim fill" },
    )
    const { fillSigs, permit: permitArg } = await signV2Take(payer, take)
    await lockV2Take(M, { quoteSet, quoteSig, hashlocks }, take, fillSigs)
    await mine(M)
    const final = await checkLocksFinal(M.pub, take)
    if (!final.ok) throw new Error(JSON.stringify(final.problems))
    const auth = await signPayTake(payKey, final.locks)
    await T.send(operator, "payTake", [take.fills.map((f) => f.fill), fillSigs, auth.signature, permitArg])
    await mine(T)
    return take
  }

  /** The maker's own reveal (claimPayment) of fill `i`, made final on the taker chain; its block's time. */
  const reveal = async (take: CheckedTake, i: number, final = true) => {
    const f = take.fills[i]!
    await T.send(quoteSigner, "claimPayment", [f.digest, hashlocks.secrets[f.fill.hashlockIndex]!])
    const revealedAt = await T.latestTime()
    if (final) await mine(T)
    return revealedAt
  }

  beforeAll(async () => {
    ;[M, T] = await startV2Chains()
    ;({ quoteSet, quoteSig, hashlocks } = await openV2Order(M, T, orderId))
    const wallet = walletClaimSender(
      createWalletClient({ account: claimer, chain: M.chain, transport: http(M.anvil.rpcUrl) }),
    )
    sender = {
      sendClaim: (escrow, digest, secret) => {
        sent.push(digest)
        return wallet.sendClaim(escrow, digest, secret)
      },
    }
  })

  afterAll(async () => {
    await Promise.all([M?.anvil.stop(), T?.anvil.stop()])
  })

  it("the service stopped after the maker's reveal: after the grace the client's claim pays the recipient", async () => {
    const take = await paidTake([0, 1], 1_000_000n)
    const digests = take.fills.map((f) => f.digest)
    const before = await tokenBalance(M, recipient.address)

    // Revealed at latest only, not final on the client's taker endpoint: the secret opens the hashlock, so it counts
    // (waiting for the taker chain's finality could outlast the claim window). Within the grace the service may still
    // claim. Fill 1 is not revealed at all.
    const revealedAt = await reveal(take, 0, false)
    const early = await run(take, { now: () => revealedAt })
    expect(early.map((o) => [o.reason, o.retryAt])).toEqual([
      ["grace", revealedAt + DEFAULT_CLAIM_GRACE_SECONDS],
      ["not_revealed", undefined],
    ])
    expect(sent).toEqual([])
    await mine(T)

    // The grace is over, the lock still Locked: the client claims fill 0 itself.
    const late = await run(take, { now: () => revealedAt + DEFAULT_CLAIM_GRACE_SECONDS })
    expect(late.map((o) => o.reason)).toEqual(["claimed", "not_revealed"])
    expect(late[0]!.txHash).toMatch(/^0x[0-9a-f]{64}$/)
    expect(sent).toEqual([digests[0]])
    await mine(M)
    expect(await lockState(digests[0]!)).toBe("Claimed")
    expect((await tokenBalance(M, recipient.address)) - before).toBe(take.fills[0]!.fill.amountOut)

    // Fill 1 revealed later; a configured grace of 0 claims it at once. Fill 0 is not sent again.
    const revealedAt1 = await reveal(take, 1)
    const rest = await run(take, { now: () => revealedAt1, graceSeconds: 0n })
    expect(rest.map((o) => o.reason)).toEqual(["already_claimed", "claimed"])
    expect(sent).toEqual(digests)
    await mine(M)
    expect(await lockState(digests[1]!)).toBe("Claimed")
    expect((await tokenBalance(M, recipient.address)) - before).toBe(1_000_000n)
    sent.length = 0
  })

  it("the service claimed first: the client sends nothing", async () => {
    const take = await paidTake([2], 400_000n)
    const f = take.fills[0]!
    const revealedAt = await reveal(take, 0)
    await M.send(operator, "claim", [f.digest, hashlocks.secrets[f.fill.hashlockIndex]!])
    const before = await tokenBalance(M, recipient.address)
    const out = await run(take, { now: () => revealedAt + DEFAULT_CLAIM_GRACE_SECONDS })
    expect(out.map((o) => o.reason)).toEqual(["already_claimed"])
    expect(sent).toEqual([])
    expect(await tokenBalance(M, recipient.address)).toBe(before)
  })

  it("the service claims between the client's read and its send: the revert is success", async () => {
    const take = await paidTake([3], 300_000n)
    const f = take.fills[0]!
    const revealedAt = await reveal(take, 0)
    const racing: ClaimSender = {
      sendClaim: async (escrow, digest, secret) => {
        await M.send(operator, "claim", [f.digest, hashlocks.secrets[f.fill.hashlockIndex]!])
        return sender.sendClaim(escrow, digest, secret)
      },
    }
    const out = await claimIfStalled(M.pub, T.pub, take, racing, { now: () => revealedAt, graceSeconds: 0n })
    expect(out.map((o) => o.reason)).toEqual(["already_claimed"])
    expect(sent).toEqual([f.digest])
    await mine(M)
    expect(await lockState(f.digest)).toBe("Claimed")
    sent.length = 0
  })

  it("no secret yet (paid, not revealed): nothing is sent, whatever the time before makerExpiry", async () => {
    const take = await paidTake([4], 200_000n)
    const out = await run(take, { now: () => take.fills[0]!.fill.makerExpiry - 60n, graceSeconds: 0n })
    expect(out.map((o) => o.reason)).toEqual(["not_revealed"])
    expect(sent).toEqual([])
    expect(await lockState(take.fills[0]!.digest)).toBe("Locked")
  })

  it("a reveal too late for the whole grace: the grace ends in time for the client's own claim", async () => {
    const take = await paidTake([6], 150_000n)
    const f = take.fills[0]!
    await reveal(take, 0)
    // A grace longer than what is left before makerExpiry (as a maker revealing at takerExpiry − 1 makes it): it
    // ends at makerExpiry − 2 × the minimum time left, when a claim can still be mined.
    const options = { graceSeconds: 10n ** 9n, minTimeLeftSeconds: 30n }
    const latestStart = f.fill.makerExpiry - 60n
    const before = await run(take, { ...options, now: () => latestStart - 1n })
    expect(before.map((o) => [o.reason, o.retryAt])).toEqual([["grace", latestStart]])
    expect(sent).toEqual([])
    const out = await run(take, { ...options, now: () => latestStart })
    expect(out.map((o) => o.reason)).toEqual(["claimed"])
    expect(sent).toEqual([f.digest])
    await mine(M)
    expect(await lockState(f.digest)).toBe("Claimed")
    sent.length = 0
  })

  it("past makerExpiry (or too close to it): nothing is sent, though the secret is public", async () => {
    const take = await paidTake([5], 100_000n)
    const f = take.fills[0]!
    await reveal(take, 0)
    // Less than the minimum time left by the caller's clock.
    const close = await run(take, { now: () => f.fill.makerExpiry - 10n, graceSeconds: 0n })
    expect(close.map((o) => o.reason)).toEqual(["expired"])
    // The maker chain itself past makerExpiry (the caller's clock behind it): its time counts.
    const left = f.fill.makerExpiry - (await M.latestTime())
    await M.test.increaseTime({ seconds: Number(left) + 10 })
    await mine(M)
    const late = await run(take, { now: () => 0n, graceSeconds: 0n })
    expect(late.map((o) => o.reason)).toEqual(["expired"])
    expect(sent).toEqual([])
    expect(await lockState(f.digest)).toBe("Locked")
  })
})
