/**
 * The maker client's reveal decision (settlement v2, DESIGN §10.2). Revealing secret_i (by broadcasting its own
 * `claimPayment`) lets anyone claim the maker's lock, so the maker reveals only for a payment that pays IT, at ITS
 * signed price, under one of ITS hashlocks, matched by ITS OWN lock with the same Fill digest on ITS escrow and
 * order, with at least the reveal cutoff left to get `claimPayment` included before takerExpiry. Each read must come
 * from the maker's own endpoints at a finalized block (src/Client/EscrowReadsV2.ts) and from reviewed escrows.
 *
 * The attacks each rule stops (the operator makes keys of its own and can act as a taker):
 * - a payment with no lock, or a lock of another Fill → `lock_state` / `lock_fill` (reveal = give funds for nothing);
 * - a lock on another owner's order with the same order id → `lock_order` (orders are keyed by owner and id);
 * - a fake escrow reporting a held payment → `payment_escrow` (only the reviewed escrow the maker quoted counts);
 * - too little time left → `time` (the payment refunds to the taker while the secret is public).
 *
 * Pure: no I/O, no clock.
 */
import { type Address, getAddress, type Hex } from "viem"
import { orderKey, type QuoteSetV2 } from "../Domain/EscrowTypedDataV2.ts"
import type { HashlockSet } from "../Domain/Hashlocks.ts"
import type { LockView, PaymentView } from "./EscrowReadsV2.ts"

export interface MakerConfig {
  readonly makerChainId: number
  /** The maker's own (reviewed) v2 escrow, where its order lives. */
  readonly makerEscrow: Address
  /** Per taker chain: the reviewed v2 escrow and this maker's payee there. */
  readonly takerChains: Readonly<Record<number, { readonly escrow: Address; readonly payee: Address }>>
  /** C ≥ R_maker + D_t + F_t + 2δ_t (DESIGN §6 "Timing"). */
  readonly revealCutoffSeconds: bigint
}

export interface RevealInput {
  readonly config: MakerConfig
  /** The quote set this maker signed (its owner, order id and sequence name the order and the secrets). */
  readonly quoteSet: QuoteSetV2
  /** deriveHashlockSet(key, {makerChainId, makerEscrow, owner, orderId, sequence}, hashlockCount) of that set. */
  readonly hashlocks: HashlockSet
  /** Read at a finalized block of the taker chain, by the Fill digest. */
  readonly payment: PaymentView
  /** Read at a finalized block of the maker chain, by the same digest. */
  readonly lock: LockView
  /**
   * The decision time (Unix seconds): the later of the local clock and the taker chain's newest block time. Not
   * the finalized block's time alone, which lags by the finality delay and would overstate the time left.
   */
  readonly now: bigint
}

export type RevealRefusalCode =
  | "quote_set" // the hashlocks given are not the set's (root or count differ)
  | "payment_state" // no payment held for the digest
  | "payment_escrow" // read on an escrow (or chain) that is not the reviewed one this maker quoted
  | "payee" // the payment pays someone else
  | "price" // below every matching quote's signed price
  | "hashlock" // not one of this set's hashlocks
  | "lock_state" // no live lock with the digest
  | "lock_escrow" // the lock was read on another escrow or chain than the maker's own
  | "lock_fill" // the lock and the payment are not of the same Fill digest or hashlock
  | "lock_order" // the lock is on another order (owner + id) or sequence
  | "time" // less than the reveal cutoff left before takerExpiry

export interface RevealRefusal {
  readonly code: RevealRefusalCode
  readonly message: string
}

export type RevealDecision =
  | {
      readonly reveal: true
      readonly secret: Hex
      readonly hashlockIndex: number
      readonly digest: Hex
      readonly takerChainId: number
      readonly takerEscrow: Address
    }
  | { readonly reveal: false; readonly reasons: ReadonlyArray<RevealRefusal> }

const same = (a: Address, b: Address) => getAddress(a) === getAddress(b)

export const decideReveal = (input: RevealInput): RevealDecision => {
  const { config, quoteSet, hashlocks, payment, lock, now } = input
  const reasons: Array<RevealRefusal> = []
  const refuse = (code: RevealRefusalCode, message: string) => {
    reasons.push({ code, message })
  }

  if (hashlocks.root !== quoteSet.hashlockRoot.toLowerCase() || hashlocks.count !== quoteSet.hashlockCount) {
    refuse("quote_set", "the hashlocks are not the ones this quote set signs")
  }

  // The payment: on a reviewed taker escrow that this set quoted, held, to this maker's payee, at its price.
  const taker = config.takerChains[payment.chainId]
  if (taker === undefined || !same(payment.escrow, taker.escrow)) {
    refuse("payment_escrow", `the payment was read on ${payment.escrow} (chain ${payment.chainId}): not reviewed`)
  }
  const quotes = quoteSet.quotes.filter((q) => q.chainId === BigInt(payment.chainId) && same(q.escrow, payment.escrow))
  if (quotes.length === 0) refuse("payment_escrow", "this quote set names no quote on that escrow")
  if (payment.state !== "Held") refuse("payment_state", `the payment is ${payment.state}`)
  if (
    taker === undefined ||
    !same(payment.payee, taker.payee) ||
    !quotes.some((q) => same(q.recipient, payment.payee))
  ) {
    refuse("payee", `the payment pays ${payment.payee}`)
  }
  // amountIn / amountOut ≥ receive / supply of a quote this set signed (the escrow's own price rule).
  const priced = quotes.some((q) => payment.amountIn * q.supply >= lock.amountOut * q.receive)
  if (quotes.length > 0 && !priced)
    refuse("price", `${payment.amountIn} for ${lock.amountOut} is below the signed price`)

  // The hashlock: one of this set's (so the index, and the secret, are derivable).
  const index = hashlocks.indexOf(payment.hashlock)
  if (index === undefined) refuse("hashlock", `${payment.hashlock} is not one of this set's hashlocks`)

  // The lock: the maker's own, same Fill, live, on this set's order.
  if (lock.chainId !== config.makerChainId || !same(lock.escrow, config.makerEscrow)) {
    refuse("lock_escrow", `the lock was read on ${lock.escrow} (chain ${lock.chainId}), not on the maker's escrow`)
  }
  // Claimed: only `claim` with the secret claims a lock, so the secret is public already (an earlier reveal of ours
  // was seen, then dropped or too slow): the payment is owed, and claiming it again reveals nothing new.
  const delivered = lock.state === "Claimed"
  if (lock.state !== "Locked" && !delivered) refuse("lock_state", `the lock is ${lock.state}`)
  if (lock.digest.toLowerCase() !== payment.digest.toLowerCase()) refuse("lock_fill", "lock and payment digests differ")
  if (lock.hashlock.toLowerCase() !== payment.hashlock.toLowerCase())
    refuse("lock_fill", "lock and payment hashlocks differ")
  // Orders are keyed by orderKey(owner, orderId): the same id under another owner is another order.
  if (orderKey(lock.owner, lock.orderId) !== orderKey(quoteSet.owner, quoteSet.orderId)) {
    refuse("lock_order", `the lock is on order ${lock.orderId} of ${lock.owner}, not this quote set's`)
  }
  if (lock.sequence !== quoteSet.sequence) refuse("lock_order", `the lock is under sequence ${lock.sequence}`)

  // The cutoff keeps a secret from going public too late to be paid for; once it is public (delivered), the payment
  // is claimed while it can be at all.
  if (delivered ? payment.expiry <= now : payment.expiry < now + config.revealCutoffSeconds) {
    refuse("time", `${payment.expiry - now} s left before takerExpiry; the cutoff is ${config.revealCutoffSeconds} s`)
  }

  if (reasons.length > 0 || index === undefined) return { reveal: false, reasons }
  return {
    reveal: true,
    secret: hashlocks.secrets[index]!,
    hashlockIndex: index,
    digest: payment.digest,
    takerChainId: payment.chainId,
    takerEscrow: getAddress(payment.escrow),
  }
}
