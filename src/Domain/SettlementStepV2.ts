/**
 * The settlement-v2 decision (DESIGN §10, §6 "Fills"), pure, in the style of v1's (src/Domain/SettlementStep.ts):
 * one nonfinal v2 fill's row, its take's facts, the relayer outcomes of its keys, the finalized v2 escrow index of
 * both chains and both chains' latest block time in; the next action out. Recomputed every sweep from durable
 * facts, so a crash anywhere loses nothing (an action taken shows up as a key column, an outcome or an index row).
 *
 * What differs from v1: the maker holds the secret. The service never has one before it is public, so it never
 * reveals: after the payment is final it waits for the MAKER's own claimPayment, then relays claim(digest, secret)
 * on the maker chain as soon as that reveal is mined (its secret opens the hashlock whatever becomes of its block). The payment is ONE payTake for the whole take, relayed only when every
 * lock of the take is final and the take's pay key has authorised it, and never after payBy; its relayer key is
 * the take's (`settle:take:<take id>:payTake`), stored in each fill's pay key column, and its calldata is the same
 * whichever fill submits it (the relayer deduplicates by key). cancelLock needs the pay key's CancelFill signature.
 *
 * Abort paths: a lock that reverts → failed (nothing moved). No payment by payBy → cancelLock when the pay key gave
 * a cancel, else refund after makerExpiry. A payment the maker does not claim by takerExpiry → refundPayment, and
 * the lock refunds after makerExpiry. Times are chain seconds (block timestamps); the contracts compare with them.
 */
import {
  type Action,
  attemptOf,
  type CallOutcome,
  callKey,
  type FillState,
  type LockFact,
  MAX_ATTEMPTS,
  type OutcomeStatus,
  type PaymentFact,
  type SettlementCall,
} from "./SettlementStep.ts"

export type { Action, FillState, SettlementCall } from "./SettlementStep.ts"

export interface FillFactsV2 {
  readonly fillId: string
  readonly takeId: string
  readonly state: FillState
  readonly keys: Readonly<Partial<Record<SettlementCall, string | null>>>
  /** Outcome per stored key (by key string). A stored key absent here is "missing" (never handed to the relayer). */
  readonly outcomes: ReadonlyMap<string, CallOutcome>
  /** escrow_v2_locks on the maker venue (finalized), or null. */
  readonly lock: LockFact | null
  /** escrow_v2_payments on the taker venue (finalized), or null. */
  readonly payment: PaymentFact | null
  /**
   * A public secret of this digest: from the index (escrow_v2_secrets, or a lock/payment row), else from the maker's
   * reveal mined on the taker chain and not final yet (escrow_v2_seen_secrets); or null.
   */
  readonly secret: string | null
  /**
   * The maker's claimPayment is mined on the taker chain above the height its index has taken in (final events
   * only): the payment is claimed at the latest block though the index still shows it held. A reveal at or below
   * that height that the index does not show was re-organised away: then false, and the step relays claimPayment
   * with the secret itself (anyone may), as for any public secret.
   */
  readonly revealMined: boolean
  /** Chain seconds. payBy: last second payTake may be included; the same for every fill of the take. */
  readonly payBy: bigint
  readonly makerExpiry: bigint
  readonly takerExpiry: bigint
  /** Latest block timestamps, chain seconds. */
  readonly makerNow: bigint
  readonly takerNow: bigint
  /** Every fill of the take has reached locked (each lock final) and none ended: the take may be paid. */
  readonly takeLocksFinal: boolean
  /** takes.pay_authorization is stored (the pay key's PayTake over the take's digests). */
  readonly payAuthorized: boolean
  /** fills.cancel_signature is stored (the pay key's CancelFill of this digest). */
  readonly cancelSigned: boolean
  /**
   * Some fill of the take has a cancelLock relayed (its cancel key is stored): the take is never paid, because the
   * one payTake would pay for that fill too while its lock is released.
   */
  readonly takeCancelling: boolean
}

/** `settle:take:<take id>:payTake[:n]`: one payment per take, whichever fill submits it. */
export const payTakeKey = (takeId: string, attempt = 1): string =>
  attempt <= 1 ? `settle:take:${takeId}:payTake` : `settle:take:${takeId}:payTake:${attempt}`

/** The relayer key of a call of this fill (attempt n). */
export const callKeyV2 = (f: Pick<FillFactsV2, "fillId" | "takeId">, call: SettlementCall, attempt = 1): string =>
  call === "pay" ? payTakeKey(f.takeId, attempt) : callKey(f.fillId, call, attempt)

const FAILED: ReadonlyArray<OutcomeStatus> = ["reverted", "replaced"]

const wait = (why: string): Action => ({ _tag: "Wait", why })

const failureReason = (o: CallOutcome | undefined, call: SettlementCall) =>
  o?.reason ?? (o?.status === "replaced" ? `the ${call} transaction was replaced` : `the ${call} transaction failed`)

/** As v1's: submit once, resubmit a stored key the relayer lacks, retry after a failure while `retry` holds. */
const drive = (
  f: FillFactsV2,
  call: SettlementCall,
  options: { readonly state?: FillState; readonly error?: string; readonly retry?: boolean } = {},
): Action => {
  const submit = (attempt: number): Action => ({
    _tag: "Submit",
    call,
    key: callKeyV2(f, call, attempt),
    state: options.state ?? null,
    error: options.error ?? null,
  })
  const key = f.keys[call] ?? null
  if (key === null) return submit(1)
  const outcome = f.outcomes.get(key)
  if (outcome === undefined || outcome.status === "missing") return { _tag: "Resubmit", call, key }
  if (FAILED.includes(outcome.status)) {
    const attempt = attemptOf(key)
    if ((options.retry ?? true) && attempt < MAX_ATTEMPTS) return submit(attempt + 1)
    return wait(`${call} ${outcome.status}: ${failureReason(outcome, call)}`)
  }
  return wait(`${call} ${outcome.status}`)
}

const outcomeOf = (f: FillFactsV2, call: SettlementCall) => {
  const key = f.keys[call] ?? null
  return key === null ? null : (f.outcomes.get(key) ?? { status: "missing" as const, reason: null })
}

/** True while our payTake may still take effect (sent, and not known to have failed). */
const payInFlight = (f: FillFactsV2) => {
  const o = outcomeOf(f, "pay")
  return o !== null && !FAILED.includes(o.status)
}

const finalByRelayer = (f: FillFactsV2, call: SettlementCall) => outcomeOf(f, call)?.status === "final"

/**
 * As v1's effectiveFacts: our own lock / payTake / claim / claimPayment reported final by the relayer proves its
 * effect as the index row would; only moves a row forward along the happy path.
 */
export const effectiveFactsV2 = (f: FillFactsV2): FillFactsV2 => {
  let lock = f.lock
  if (finalByRelayer(f, "claim") && (lock === null || lock.state === "locked")) {
    lock = { state: "claimed", secret: lock?.secret ?? null }
  } else if (lock === null && finalByRelayer(f, "lock")) {
    lock = { state: "locked", secret: null }
  }
  let payment = f.payment
  if (finalByRelayer(f, "claimPayment") && (payment === null || payment.state === "held")) {
    payment = { state: "claimed", secret: payment?.secret ?? null }
  } else if (payment === null && finalByRelayer(f, "pay")) {
    payment = { state: "held", secret: null }
  }
  return lock === f.lock && payment === f.payment ? f : { ...f, lock, payment }
}

/** The public secret, wherever the index shows it. */
const publicSecret = (f: FillFactsV2) => f.secret ?? f.lock?.secret ?? f.payment?.secret ?? null

/**
 * The error a cancelLock carries when the pay key cancelled before payBy without authorising: the client released
 * the lock itself, so it is not a lock "left unpaid past payBy" (src/Settlement/RepoV2.ts counts those).
 */
export const CANCELLED_BY_PAY_KEY = "cancelled by the pay key"

/** A fill's error when its lock was claimed (delivered) and no payment was ever made. */
export const DELIVERED_UNPAID = "delivered without a payment: the lock was claimed before any payment"

/** No payment will come (payBy passed, or the pay call failed for good): cancel with the pay key's signature, or wait. */
const abortUnpaid = (f: FillFactsV2, error: string): Action =>
  f.cancelSigned ? drive(f, "cancelLock", { error }) : wait(`${error}; the lock refunds after makerExpiry`)

export const decideV2 = (facts: FillFactsV2): Action => {
  const f = effectiveFactsV2(facts)
  // The contract takes a lock only while now < payBy: past it, nothing was or will be sent.
  if (f.state === "signed") {
    if (f.makerNow >= f.payBy) return { _tag: "Finish", state: "failed", error: "payBy passed before the lock" }
    return drive(f, "lock", { state: "locking", retry: false })
  }

  if (f.state === "locking") {
    if (f.lock !== null) return { _tag: "Advance", state: "locked" }
    const key = f.keys.lock ?? null
    if (key === null) {
      if (f.makerNow >= f.payBy) return { _tag: "Finish", state: "failed", error: "payBy passed before the lock" }
      return drive(f, "lock", { retry: false })
    }
    const o = f.outcomes.get(key)
    if (o === undefined || o.status === "missing") {
      // The relayer never got it (a crash, or it refused the request): past payBy it could only revert.
      if (f.makerNow >= f.payBy) return { _tag: "Finish", state: "failed", error: "payBy passed before the lock" }
      return { _tag: "Resubmit", call: "lock", key }
    }
    if (FAILED.includes(o.status)) return { _tag: "Finish", state: "failed", error: failureReason(o, "lock") }
    return wait(`lock ${o.status}`)
  }

  const lock = f.lock
  if (lock === null) return wait("the lock is not indexed")
  const payment = f.payment
  const secret = publicSecret(f)

  // 1. Delivered on the maker chain. The payment is normally claimed already (the maker's reveal); if it is still
  // held, the secret is public: relay the maker's claimPayment too (anyone may).
  if (lock.state === "claimed") {
    if (payment?.state === "claimed") return { _tag: "Finish", state: "settled", error: null }
    if (f.state !== "claimed") return { _tag: "Advance", state: "claimed" }
    if (payment?.state === "refunded") {
      return { _tag: "Finish", state: "refunded", error: "the payment was refunded to the payer after delivery" }
    }
    if (payment === null) {
      // Delivered before any payment (the maker's secret went public early). A payment included before payBy is
      // final and indexed long before takerExpiry: past it, with no payTake of ours in flight, none will come.
      if (f.takerNow >= f.takerExpiry && !payInFlight(f)) {
        return { _tag: "Finish", state: "settled", error: DELIVERED_UNPAID, unpaid: true }
      }
      return wait("the payment is not indexed")
    }
    if (secret === null) return wait("the secret is not indexed")
    // The maker's own claimPayment is mined and not final: relaying one more would only revert.
    if (f.revealMined && f.takerNow < f.takerExpiry) return wait("the maker's reveal is mined; not final yet")
    return drive(f, "claimPayment", { retry: f.takerNow < f.takerExpiry })
  }

  // 2. The lock ended without delivery (cancelLock or refund): return a held payment after takerExpiry, then finish.
  if (lock.state === "cancelled" || lock.state === "refunded") {
    if (payment?.state === "held") {
      if (f.takerNow < f.takerExpiry) return wait("the payment refunds after takerExpiry")
      return drive(f, "refundPayment")
    }
    if (payment === null && payInFlight(f)) return wait("the payTake call may still land")
    if (payment?.state === "claimed") {
      return {
        _tag: "Finish",
        state: "refunded",
        error: "the lock ended unclaimed after the maker claimed the payment",
      }
    }
    const state = lock.state === "cancelled" && payment === null ? "cancelled" : "refunded"
    return { _tag: "Finish", state, error: null }
  }

  // 3. The lock is live.
  if (f.makerNow >= f.makerExpiry) return drive(f, "refund")

  // The maker revealed (its claimPayment is final, or the secret is otherwise public): deliver at once, even while
  // a cancel is in flight (a payment may have been made; the claim is never worse for the taker than the cancel).
  if (secret !== null || payment?.state === "claimed") {
    if (secret === null) return wait("the payment is claimed; its secret is not indexed yet")
    return drive(f, "claim", { state: "claiming", retry: f.makerNow < f.makerExpiry })
  }
  if (f.keys.cancelLock) return drive(f, "cancelLock")

  // The payment went back to the payer unclaimed: nothing more can be delivered; the lock ends by cancel or expiry.
  if (payment?.state === "refunded") return abortUnpaid(f, "the payment was refunded unclaimed")

  if (payment?.state === "held") {
    if (f.state === "locked" || f.state === "paying") return { _tag: "Advance", state: "paid" }
    // Paid and not revealed: the maker has until takerExpiry; after it the payer takes the payment back.
    if (f.takerNow >= f.takerExpiry) return drive(f, "refundPayment")
    return wait("waiting for the maker's reveal")
  }

  // No payment yet.
  if (f.state === "locked") {
    if (payInFlight(f)) return wait("the payTake call is in flight")
    // A cancel given before any authorisation is the client's choice to stop: release the maker's funds now.
    if (f.cancelSigned && !f.payAuthorized) return drive(f, "cancelLock", { error: CANCELLED_BY_PAY_KEY })
    if (f.takerNow >= f.payBy) return abortUnpaid(f, "no payment by payBy")
    if (!f.takeLocksFinal) return wait("other locks of the take are not final")
    if (f.takeCancelling) return abortUnpaid(f, "the pay key cancelled a fill of the take")
    if (!f.payAuthorized) return wait("waiting for the pay key's authorisation")
    return drive(f, "pay", { state: "paying", retry: false })
  }

  if (f.state === "paying") {
    const o = outcomeOf(f, "pay")
    if (o === null)
      return f.takerNow < f.payBy ? drive(f, "pay", { retry: false }) : abortUnpaid(f, "no payment by payBy")
    if (o.status === "missing") {
      // Crash between the commit and the submit: hand the stored key over, but never once payBy has passed.
      if (f.takerNow >= f.payBy) return abortUnpaid(f, "no payment by payBy")
      return { _tag: "Resubmit", call: "pay", key: f.keys.pay as string }
    }
    if (FAILED.includes(o.status)) {
      // Before payBy a failed payTake (a replacement, a transient revert) is tried again, a few times.
      if (f.takerNow < f.payBy && attemptOf(f.keys.pay as string) < MAX_ATTEMPTS) return drive(f, "pay")
      return abortUnpaid(f, failureReason(o, "pay"))
    }
    return wait(`pay ${o.status}`)
  }

  return wait(`state ${f.state}: the payment is not indexed`)
}
