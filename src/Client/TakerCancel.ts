/**
 * The pay key's early cancel of a lock (CancelFill, in the MAKER escrow's domain; DESIGN §6). Only the pay key can
 * release a lock before makerExpiry, and its client signs only:
 * - before it authorised payment (no PayTake signed for the take: nobody can pay, so the lock only blocks the maker;
 *   TakerFlow then never signs one for the take), or
 * - after payBy passed at a FINALIZED block of the taker chain with no payment for the Fill: `pay` requires
 *   now ≤ payBy, and every later block is later than payBy, so no payment can appear any more.
 * Otherwise a payment may exist or still come, the maker may reveal, and a cancelled lock would leave the taker
 * paying for nothing.
 *
 * `signCancelFill` accepts only an allowed decision of `decideCancelFill`.
 *
 * Browser-safe: src/Domain and viem only.
 */
import type { Hex, LocalAccount } from "viem"
import { cancelFillTypedData, type FillV2 } from "../Domain/EscrowTypedDataV2.ts"
import { type ChainReader, finalSnapshot, readPayment } from "./EscrowReadsV2.ts"
import { assertCheckedTake, type CheckedTake } from "./TakerChecks.ts"

export type CancelAllowed = {
  readonly allowed: true
  readonly reason: "not_authorised" | "unpaid_after_pay_by"
  readonly fill: FillV2
  readonly digest: Hex
}

export type CancelRefused = {
  readonly allowed: false
  readonly reason: "chain" | "pay_by_not_final" | "payment_exists"
  readonly message: string
}

export type CancelDecision = CancelAllowed | CancelRefused

const issued = new WeakSet<CancelAllowed>()

const allow = (reason: CancelAllowed["reason"], fill: FillV2, digest: Hex): CancelAllowed => {
  const d: CancelAllowed = { allowed: true, reason, fill, digest }
  issued.add(d)
  return d
}

/**
 * May the pay key cancel fill `index` of `take`? `payTakeSigned`: whether this client ever signed a PayTake for the
 * take (its own durable record; when unsure, say true). `takerChain`: the client's own taker-chain endpoint.
 */
export const decideCancelFill = async (
  takerChain: ChainReader,
  take: CheckedTake,
  index: number,
  payTakeSigned: boolean,
): Promise<CancelDecision> => {
  assertCheckedTake(take)
  const checked = take.fills[index]
  if (checked === undefined) throw new RangeError(`no fill ${index} in the take`)
  const { fill, digest } = checked
  if (!payTakeSigned) return allow("not_authorised", fill, digest)
  const at = await finalSnapshot(takerChain)
  if (at.chainId !== take.intent.takerChainId) {
    return { allowed: false, reason: "chain", message: `the endpoint is chain ${at.chainId}` }
  }
  if (at.timestamp <= fill.payBy) {
    return {
      allowed: false,
      reason: "pay_by_not_final",
      message: `the finalized block's time ${at.timestamp} is not past payBy ${fill.payBy}`,
    }
  }
  const payment = await readPayment(takerChain, at, take.takerEscrow, digest)
  if (payment.state !== "None") {
    return { allowed: false, reason: "payment_exists", message: `the payment is ${payment.state}` }
  }
  return allow("unpaid_after_pay_by", fill, digest)
}

/** The pay key's CancelFill over the Fill digest, in the maker escrow's domain (what `cancelLock` verifies). */
export const signCancelFill = async (payKey: LocalAccount, decision: CancelAllowed): Promise<Hex> => {
  if (!issued.has(decision)) throw new TypeError("signCancelFill needs an allowed decision of decideCancelFill")
  return payKey.signTypedData(
    cancelFillTypedData(decision.fill.makerChainId, decision.fill.makerEscrow, decision.digest),
  )
}
