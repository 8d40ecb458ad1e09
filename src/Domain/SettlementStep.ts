/**
 * The Settlement decision (DESIGN §10, §6 "Fills"), pure: given one nonfinal fill's row, the facts about it
 * (relayer outcomes of its keys, the finalized escrow index of both chains, both chains' latest block time),
 * the next action. The sweep recomputes it from durable facts every pass, so a crash anywhere loses nothing:
 * an action already taken shows up as a key column, a relayer outcome or an index row next time.
 *
 * Sources of truth: the escrow index (rows exist only for FINAL events) and the relayer's `final` outcome of
 * our own call (a successful receipt at or below the finalized head, by the same confirmation rule) both prove
 * a step final; whichever arrives first is used (effectiveFacts). Relayer outcomes also decide that a call did
 * NOT happen (reverted, replaced) or that a stored key was never handed to the relayer (crash between the commit
 * and the submit). Times are chain seconds (block timestamps), never the wall clock: the contracts compare
 * expiries with block.timestamp.
 *
 * Safety rules: pay only after the lock is final; reveal (claim) only after the payment is final and at least
 * reveal_cutoff remains; claimPayment as soon as the secret is revealed (our claim included, or the lock claimed)
 * — the maker needs only the secret, and the taker's claim can be re-sent by anyone until makerExpiry; settled
 * only once both the claim and the claimPayment are final.
 */

export type FillState =
  | "signed"
  | "locking"
  | "locked"
  | "paying"
  | "paid"
  | "claiming"
  | "claimed"
  | "settled"
  | "failed"
  | "cancelled"
  | "refunded"

/** The escrow calls of a fill, and the `fills` column holding each one's relayer idempotency key. */
export type SettlementCall = "lock" | "pay" | "claim" | "claimPayment" | "cancelLock" | "refund" | "refundPayment"

export const KEY_COLUMN: Readonly<Record<SettlementCall, string>> = {
  lock: "lock_key",
  pay: "pay_key",
  claim: "claim_key",
  claimPayment: "claim_payment_key",
  cancelLock: "cancel_key",
  refund: "refund_key",
  refundPayment: "refund_payment_key",
}

/** Every settlement call. */
export const SETTLEMENT_CALLS = Object.keys(KEY_COLUMN) as ReadonlyArray<SettlementCall>

/** Which chain a call goes to: the maker venue (the order's escrow) or the taker venue (the payment's). */
export const CALL_SIDE: Readonly<Record<SettlementCall, "maker" | "taker">> = {
  lock: "maker",
  claim: "maker",
  cancelLock: "maker",
  refund: "maker",
  pay: "taker",
  claimPayment: "taker",
  refundPayment: "taker",
}

/** A relayer outcome status, or "missing": the key is stored but the relayer has no request under it. */
export type OutcomeStatus = "missing" | "queued" | "pending" | "included" | "final" | "reverted" | "replaced"

export interface CallOutcome {
  readonly status: OutcomeStatus
  readonly reason: string | null
}

export interface LockFact {
  readonly state: "locked" | "claimed" | "refunded" | "cancelled"
  readonly secret: string | null
}

export interface PaymentFact {
  readonly state: "held" | "claimed" | "refunded"
  readonly secret: string | null
}

export interface FillFacts {
  readonly fillId: string
  readonly state: FillState
  readonly keys: Readonly<Partial<Record<SettlementCall, string | null>>>
  /** Outcome per stored key (by key string). A stored key absent here is "missing". */
  readonly outcomes: ReadonlyMap<string, CallOutcome>
  /** escrow_locks on the maker venue (finalized), or null. */
  readonly lock: LockFact | null
  /** escrow_payments on the taker venue (finalized), or null. */
  readonly payment: PaymentFact | null
  /** Unix seconds. */
  readonly makerExpiry: bigint
  readonly takerExpiry: bigint
  /** Latest block timestamps, Unix seconds. */
  readonly makerNow: bigint
  readonly takerNow: bigint
  /** settlement.reveal_cutoff_seconds: reveal only while at least this much remains before makerExpiry. */
  readonly revealCutoff: bigint
}

export type Action =
  | { readonly _tag: "Wait"; readonly why: string }
  /** Store `key` in the call's column (and move to `state` when given), commit, then submit the call. */
  | {
      readonly _tag: "Submit"
      readonly call: SettlementCall
      readonly key: string
      readonly state: FillState | null
      readonly error: string | null
    }
  /** The key is stored but the relayer never got it (crash between commit and submit): submit it again. */
  | { readonly _tag: "Resubmit"; readonly call: SettlementCall; readonly key: string }
  /** A nonfinal step reached: locked, paid or claimed. */
  | { readonly _tag: "Advance"; readonly state: "locked" | "paid" | "claimed" }
  /** A final state: settled, failed, cancelled or refunded. */
  | {
      readonly _tag: "Finish"
      readonly state: "settled" | "failed" | "cancelled" | "refunded"
      readonly error: string | null
      /** v2 only: settled by delivery without any payment (the order received nothing; no trade is published). */
      readonly unpaid?: true
    }

/** Attempts of one call (the first key plus retries after a revert or a replacement) before waiting for help. */
export const MAX_ATTEMPTS = 5

/** `settle:<fill id>:<call>` for the first attempt, `…:<call>:<n>` for the n-th. */
export const callKey = (fillId: string, call: SettlementCall, attempt = 1): string =>
  attempt <= 1 ? `settle:${fillId}:${call}` : `settle:${fillId}:${call}:${attempt}`

export const attemptOf = (key: string): number => {
  const m = /:(\d+)$/.exec(key)
  return m ? Number(m[1]) : 1
}

const FAILED: ReadonlyArray<OutcomeStatus> = ["reverted", "replaced"]

const wait = (why: string): Action => ({ _tag: "Wait", why })

const failureReason = (o: CallOutcome | undefined, call: SettlementCall) =>
  o?.reason ?? (o?.status === "replaced" ? `the ${call} transaction was replaced` : `the ${call} transaction failed`)

/**
 * Drives one call: submit it once, resubmit a stored key the relayer lacks, retry (a new key) after a revert or a
 * replacement while `retry` holds and attempts remain; otherwise wait for its outcome.
 */
const drive = (
  f: FillFacts,
  call: SettlementCall,
  options: { readonly state?: FillState; readonly error?: string; readonly retry?: boolean } = {},
): Action => {
  const key = f.keys[call] ?? null
  if (key === null) {
    return {
      _tag: "Submit",
      call,
      key: callKey(f.fillId, call),
      state: options.state ?? null,
      error: options.error ?? null,
    }
  }
  const outcome = f.outcomes.get(key)
  if (outcome === undefined || outcome.status === "missing") return { _tag: "Resubmit", call, key }
  if (FAILED.includes(outcome.status)) {
    const attempt = attemptOf(key)
    if ((options.retry ?? true) && attempt < MAX_ATTEMPTS) {
      return {
        _tag: "Submit",
        call,
        key: callKey(f.fillId, call, attempt + 1),
        state: options.state ?? null,
        error: options.error ?? null,
      }
    }
    return wait(`${call} ${outcome.status}: ${failureReason(outcome, call)}`)
  }
  return wait(`${call} ${outcome.status}`)
}

/** True while the pay call may still take effect (not sent, or sent and not known to have failed). */
const payInFlight = (f: FillFacts) => {
  const key = f.keys.pay ?? null
  if (key === null) return false
  const o = f.outcomes.get(key)
  return o === undefined || !FAILED.includes(o.status)
}

const max = (a: bigint, b: bigint) => (a > b ? a : b)

/** True when the relayer reports our call final and successful (its receipt at or below the finalized head). */
const finalByRelayer = (f: FillFacts, call: SettlementCall) => {
  const key = f.keys[call] ?? null
  return key !== null && f.outcomes.get(key)?.status === "final"
}

/**
 * The facts with the relayer's final outcomes of our own lock / pay / claim / claimPayment folded into the index
 * view, for when the index has not caught up yet: a final successful call proves its escrow effect as well as
 * the index row would (the index only ever adds the same effect later). Only ever moves a row forward along the
 * happy path (none → locked → claimed, none → held → claimed); an index row already past that is kept.
 */
export const effectiveFacts = (f: FillFacts): FillFacts => {
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

export const decide = (facts: FillFacts): Action => {
  const f = effectiveFacts(facts)
  if (f.state === "signed") return drive(f, "lock", { state: "locking", retry: false })

  if (f.state === "locking") {
    if (f.lock !== null) return { _tag: "Advance", state: "locked" }
    const key = f.keys.lock ?? null
    if (key === null) return drive(f, "lock", { retry: false })
    const o = f.outcomes.get(key)
    if (o === undefined || o.status === "missing") return { _tag: "Resubmit", call: "lock", key }
    // Nothing moved: the lock never took effect, and no payment is made before a final lock.
    if (FAILED.includes(o.status)) return { _tag: "Finish", state: "failed", error: failureReason(o, "lock") }
    return wait(`lock ${o.status}`)
  }

  // From here on the lock is final in the index (locked was reached from it).
  const lock = f.lock
  if (lock === null) return wait("the lock is not indexed")
  const payment = f.payment

  // 1. Delivered on the maker chain (by us, or by anyone holding the secret): collect the payment.
  if (lock.state === "claimed") {
    // `claimed` first, even when the payment is already collected too: every settled fill's journal then has
    // fill.claimed before fill.settled, whichever facts a pass happened to see together.
    if (f.state !== "claimed") return { _tag: "Advance", state: "claimed" }
    if (payment?.state === "claimed") return { _tag: "Finish", state: "settled", error: null }
    if (payment?.state === "refunded") {
      return { _tag: "Finish", state: "refunded", error: "the payment was refunded to the payer after delivery" }
    }
    if (payment === null) return wait("the payment is not indexed")
    return drive(f, "claimPayment", { retry: f.takerNow < f.takerExpiry })
  }

  // 2. The lock ended without delivery (cancelLock or refund): return the payment, if any, then finish.
  if (lock.state === "cancelled" || lock.state === "refunded") {
    if (payment?.state === "held") {
      if (f.takerNow < f.takerExpiry) return wait("the payment refunds after takerExpiry")
      return drive(f, "refundPayment")
    }
    if (payment === null && payInFlight(f)) return wait("the pay call may still land")
    if (payment?.state === "claimed") return { _tag: "Finish", state: "settled", error: null }
    const state = lock.state === "cancelled" && payment === null ? "cancelled" : "refunded"
    return { _tag: "Finish", state, error: null }
  }

  // 3. Locked (claimed only once our claim is final). Our claim is in a block: the secret is public, so collect the
  // payment now rather than after the claim's finality (settled still waits for both). Meanwhile the claim itself
  // is followed below: retried if it fails, the lock refunded past makerExpiry.
  if (f.state === "claiming" && payment?.state === "held" && f.keys.claim) {
    if (f.outcomes.get(f.keys.claim)?.status === "included") {
      const collect = drive(f, "claimPayment", { retry: f.takerNow < f.takerExpiry })
      if (collect._tag !== "Wait") return collect
    }
  }

  // Past makerExpiry nothing can be claimed any more: refund the lock (anyone may; we do).
  if (f.makerNow >= f.makerExpiry) return drive(f, "refund")
  if (f.keys.cancelLock) return drive(f, "cancelLock")
  // A payment that is no longer held can never be collected: never deliver against it.
  if (payment !== null && payment.state !== "held") {
    if (payment.state === "refunded") return drive(f, "cancelLock", { error: "the payment was refunded" })
    return wait(`payment ${payment.state} while the lock is live`)
  }

  if (f.state === "locked") {
    if (payment !== null) return { _tag: "Advance", state: "paid" }
    // Paying only makes sense while a reveal can still follow: else the payer's funds would sit until takerExpiry.
    if (f.makerExpiry - max(f.makerNow, f.takerNow) <= f.revealCutoff) {
      return drive(f, "cancelLock", { error: "the lock neared its expiry before the payment" })
    }
    return drive(f, "pay", { state: "paying", retry: false })
  }

  if (f.state === "paying") {
    if (payment !== null) return { _tag: "Advance", state: "paid" }
    const key = f.keys.pay ?? null
    if (key === null) return drive(f, "pay", { retry: false })
    const o = f.outcomes.get(key)
    if (o === undefined || o.status === "missing") return { _tag: "Resubmit", call: "pay", key }
    // The payment failed (bad permit, no funds, expired): release the maker's lock at once.
    if (FAILED.includes(o.status)) return drive(f, "cancelLock", { error: failureReason(o, "pay") })
    return wait(`pay ${o.status}`)
  }

  if (f.state === "paid" || f.state === "claiming") {
    if (payment === null) return wait("the payment is not indexed")
    // Reveal only while at least reveal_cutoff remains before makerExpiry, so claimPayment has time; later,
    // wait for the refunds (a claim already sent may still land before makerExpiry: then step 1 applies).
    if (f.makerExpiry - f.makerNow < f.revealCutoff) return wait("too late to reveal; refunds after expiry")
    return drive(f, "claim", { state: "claiming" })
  }

  return wait(`state ${f.state}`)
}

/** States after which a fill changes no more. */
export const FINAL_STATES: ReadonlyArray<FillState> = ["settled", "failed", "cancelled", "refunded"]
