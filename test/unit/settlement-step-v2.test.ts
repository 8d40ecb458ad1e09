import { describe, expect, it } from "vitest"
import type { CallOutcome, OutcomeStatus } from "../../src/Domain/SettlementStep.ts"
import {
  type Action,
  callKeyV2,
  DELIVERED_UNPAID,
  decideV2,
  type FillFactsV2,
  type FillState,
  payTakeKey,
  type SettlementCall,
} from "../../src/Domain/SettlementStepV2.ts"

const ID = "7f1e0c2a-0000-4000-8000-000000000001"
const TAKE = "7f1e0c2a-0000-4000-8000-0000000000aa"
const T0 = 1_800_000_000n
const SECRET = `0x${"ab".repeat(32)}`

/** A fill at `state`: payBy 120 s, takerExpiry 1020 s, makerExpiry 1620 s ahead; nothing on chain, nothing signed. */
const fill = (over: Partial<FillFactsV2> = {}): FillFactsV2 => ({
  fillId: ID,
  takeId: TAKE,
  state: "signed",
  keys: {},
  outcomes: new Map(),
  lock: null,
  payment: null,
  secret: null,
  payBy: T0 + 120n,
  takerExpiry: T0 + 1020n,
  makerExpiry: T0 + 1620n,
  makerNow: T0,
  takerNow: T0,
  takeLocksFinal: false,
  payAuthorized: false,
  cancelSigned: false,
  takeCancelling: false,
  revealMined: false,
  ...over,
})

const key = (call: SettlementCall, attempt = 1) => callKeyV2({ fillId: ID, takeId: TAKE }, call, attempt)

const sent = (call: SettlementCall, status: OutcomeStatus, reason: string | null = null, attempt = 1) => ({
  keys: { [call]: key(call, attempt) },
  outcomes: new Map<string, CallOutcome>(status === "missing" ? [] : [[key(call, attempt), { status, reason }]]),
})

const merge = (...parts: Array<Pick<FillFactsV2, "keys" | "outcomes">>) => ({
  keys: Object.assign({}, ...parts.map((p) => p.keys)),
  outcomes: new Map(parts.flatMap((p) => [...p.outcomes])),
})

const submit = (call: SettlementCall, state: FillState | null, attempt = 1, error: string | null = null): Action => ({
  _tag: "Submit",
  call,
  key: key(call, attempt),
  state,
  error,
})

const locked = { state: "locked", secret: null } as const
const held = { state: "held", secret: null } as const
const ready = { takeLocksFinal: true, payAuthorized: true } as const
const at = (t: bigint) => ({ makerNow: T0 + t, takerNow: T0 + t })

describe("settlement v2 step: the happy path", () => {
  it("lock → locked → one payTake per take → paid → the maker's reveal → claim → claimed → settled", () => {
    expect(decideV2(fill())).toEqual(submit("lock", "locking"))
    expect(decideV2(fill({ state: "locking", ...sent("lock", "pending") }))._tag).toBe("Wait")
    expect(decideV2(fill({ state: "locking", ...sent("lock", "included"), lock: locked }))).toEqual({
      _tag: "Advance",
      state: "locked",
    })
    // The relayer's final outcome of our own lock proves it before the index does.
    expect(decideV2(fill({ state: "locking", ...sent("lock", "final") }))).toEqual({ _tag: "Advance", state: "locked" })
    const l = { ...sent("lock", "final"), lock: locked }
    expect(decideV2(fill({ state: "locked", ...l, ...ready }))).toEqual(submit("pay", "paying"))
    expect(key("pay")).toBe(payTakeKey(TAKE))
    const p = merge(sent("lock", "final"), sent("pay", "included"))
    expect(decideV2(fill({ state: "paying", ...p, lock: locked, ...ready }))._tag).toBe("Wait")
    expect(decideV2(fill({ state: "paying", ...p, lock: locked, payment: held, ...ready }))).toEqual({
      _tag: "Advance",
      state: "paid",
    })
    expect(decideV2(fill({ state: "paid", ...p, lock: locked, payment: held, ...ready }))).toEqual({
      _tag: "Wait",
      why: "waiting for the maker's reveal",
    })
    const revealed = { state: "claimed", secret: SECRET } as const
    expect(decideV2(fill({ state: "paid", ...p, lock: locked, payment: revealed, ...ready }))).toEqual(
      submit("claim", "claiming"),
    )
    // The secret may show up in escrow_v2_secrets before the payment row moves.
    expect(decideV2(fill({ state: "paid", ...p, lock: locked, payment: held, secret: SECRET }))).toEqual(
      submit("claim", "claiming"),
    )
    const c = merge(p, sent("claim", "final"))
    // Both claims final: settled straight from claiming (the claimed step is only kept while the payment is held).
    expect(decideV2(fill({ state: "claiming", ...c, lock: locked, payment: revealed }))).toEqual({
      _tag: "Finish",
      state: "settled",
      error: null,
    })
    expect(
      decideV2(fill({ state: "claimed", ...c, lock: { state: "claimed", secret: SECRET }, payment: revealed })),
    ).toEqual({ _tag: "Finish", state: "settled", error: null })
  })

  it("a lock claimed while the payment is still held: relays claimPayment with the public secret", () => {
    const lock = { state: "claimed", secret: SECRET } as const
    expect(decideV2(fill({ state: "claimed", lock, payment: held }))).toEqual(submit("claimPayment", null))
    expect(decideV2(fill({ state: "claiming", lock, payment: held }))).toEqual({ _tag: "Advance", state: "claimed" })
    expect(decideV2(fill({ state: "claimed", lock, payment: null }))._tag).toBe("Wait")
    expect(decideV2(fill({ state: "claimed", lock, payment: { state: "refunded", secret: null } }))).toMatchObject({
      _tag: "Finish",
      state: "refunded",
    })
  })
})

describe("settlement v2 step: the maker's reveal mined, not final yet", () => {
  const p = merge(sent("lock", "final"), sent("pay", "final"))
  const mined = { secret: SECRET, revealMined: true } as const

  it("the claim goes out at once: the secret opens the hashlock whatever becomes of the reveal's block", () => {
    expect(decideV2(fill({ state: "paid", ...p, lock: locked, payment: held, ...mined }))).toEqual(
      submit("claim", "claiming"),
    )
  })

  it("the lock claimed while the index still shows the payment held: no claimPayment of ours until takerExpiry", () => {
    const lock = { state: "claimed", secret: SECRET } as const
    const c = merge(p, sent("claim", "final"))
    expect(decideV2(fill({ state: "claimed", ...c, lock, payment: held, ...mined }))).toEqual({
      _tag: "Wait",
      why: "the maker's reveal is mined; not final yet",
    })
    // Past takerExpiry: as before, one try without retries.
    expect(decideV2(fill({ state: "claimed", ...c, lock, payment: held, ...mined, ...at(1020n) }))).toEqual(
      submit("claimPayment", null),
    )
    // The reveal final: the payment claimed in the index, settled.
    const revealed = { state: "claimed", secret: SECRET } as const
    expect(decideV2(fill({ state: "claimed", ...c, lock, payment: revealed, secret: SECRET }))).toEqual({
      _tag: "Finish",
      state: "settled",
      error: null,
    })
  })
})

describe("settlement v2 step: the payment waits for the whole take and the pay key", () => {
  const l = { state: "locked" as const, ...sent("lock", "final"), lock: locked }
  it("never pays before every lock of the take is final", () => {
    expect(decideV2(fill({ ...l, payAuthorized: true }))).toEqual({
      _tag: "Wait",
      why: "other locks of the take are not final",
    })
  })
  it("never pays without the pay key's authorisation", () => {
    expect(decideV2(fill({ ...l, takeLocksFinal: true }))).toEqual({
      _tag: "Wait",
      why: "waiting for the pay key's authorisation",
    })
  })
  it("never pays at or after payBy: refund after makerExpiry, or cancelLock with the pay key's cancel", () => {
    const late = decideV2(fill({ ...l, ...ready, ...at(120n) }))
    expect(late._tag).toBe("Wait")
    expect(decideV2(fill({ ...l, ...ready, ...at(120n), cancelSigned: true }))).toEqual(
      submit("cancelLock", null, 1, "no payment by payBy"),
    )
    expect(decideV2(fill({ ...l, ...at(1620n) }))).toEqual(submit("refund", null))
  })
  it("never pays a take one of whose locks is being cancelled, even authorised (the payTake would pay for it)", () => {
    // Another fill of the take has its cancelLock relayed: this one waits for its refund; nothing is paid.
    expect(decideV2(fill({ ...l, ...ready, takeCancelling: true }))).toEqual({
      _tag: "Wait",
      why: "the pay key cancelled a fill of the take; the lock refunds after makerExpiry",
    })
    expect(decideV2(fill({ ...l, ...ready, takeCancelling: true, ...at(1620n) }))).toEqual(submit("refund", null))
    // The cancelled fill itself follows its cancelLock.
    const cancelling = { state: "locked" as const, ...merge(sent("lock", "final"), sent("cancelLock", "pending")) }
    expect(decideV2(fill({ ...cancelling, lock: locked, ...ready, takeCancelling: true }))).toEqual({
      _tag: "Wait",
      why: "cancelLock pending",
    })
  })
  it("a cancel given before any authorisation releases the lock at once", () => {
    expect(decideV2(fill({ ...l, cancelSigned: true }))).toEqual(
      submit("cancelLock", null, 1, "cancelled by the pay key"),
    )
    // Authorised: the cancel is for after payBy only.
    expect(decideV2(fill({ ...l, ...ready, cancelSigned: true }))).toEqual(submit("pay", "paying"))
  })
  it("a payTake submitted by a sibling fill: the same key, the same call", () => {
    const sibling = { keys: {}, outcomes: new Map([[payTakeKey(TAKE), { status: "final" as const, reason: null }]]) }
    // This fill has no pay key yet: it records the take's key (the relayer already has it: no second payment).
    expect(decideV2(fill({ ...l, ...ready, outcomes: sibling.outcomes }))).toEqual(submit("pay", "paying"))
  })
  it("crash between the commit and the submit: the stored payTake key is handed over again (before payBy only)", () => {
    const p = merge(sent("lock", "final"), sent("pay", "missing"))
    expect(decideV2(fill({ state: "paying", ...p, lock: locked, ...ready }))).toEqual({
      _tag: "Resubmit",
      call: "pay",
      key: payTakeKey(TAKE),
    })
    expect(decideV2(fill({ state: "paying", ...p, lock: locked, ...ready, ...at(120n) }))._tag).toBe("Wait")
  })
  it("a reverted or replaced payTake is tried again before payBy, then aborts", () => {
    for (const status of ["reverted", "replaced"] as const) {
      const p = merge(sent("lock", "final"), sent("pay", status, "NotAllowed"))
      expect(decideV2(fill({ state: "paying", ...p, lock: locked, ...ready }))).toEqual(submit("pay", null, 2))
      expect(
        decideV2(fill({ state: "paying", ...p, lock: locked, ...ready, ...at(120n), cancelSigned: true })),
      ).toEqual(submit("cancelLock", null, 1, "NotAllowed"))
      const last = merge(sent("lock", "final"), sent("pay", status, null, 5))
      expect(decideV2(fill({ state: "paying", ...last, lock: locked, ...ready }))._tag).toBe("Wait")
    }
  })
  it("a payTake still in flight blocks a cancel", () => {
    const p = merge(sent("lock", "final"), sent("pay", "included"))
    expect(decideV2(fill({ state: "paying", ...p, lock: locked, ...ready, ...at(200n), cancelSigned: true }))).toEqual({
      _tag: "Wait",
      why: "pay included",
    })
  })
})

describe("settlement v2 step: locks", () => {
  it("a reverted or replaced lock fails the fill (nothing moved); a missing key is resubmitted", () => {
    for (const status of ["reverted", "replaced"] as const) {
      expect(decideV2(fill({ state: "locking", ...sent("lock", status, "QuoteExpired") }))).toEqual({
        _tag: "Finish",
        state: "failed",
        error: "QuoteExpired",
      })
    }
    expect(decideV2(fill({ state: "locking", ...sent("lock", "missing") }))).toEqual({
      _tag: "Resubmit",
      call: "lock",
      key: key("lock"),
    })
    expect(decideV2(fill({ state: "locking" }))).toEqual(submit("lock", null))
  })
  it("never locks at or after payBy", () => {
    expect(decideV2(fill(at(120n)))).toMatchObject({ _tag: "Finish", state: "failed" })
    expect(decideV2(fill({ state: "locking", ...at(120n) }))).toMatchObject({ _tag: "Finish", state: "failed" })
    // A stored lock key the relayer never got (crash, or refused): past payBy nothing can be locked any more.
    expect(decideV2(fill({ state: "locking", ...sent("lock", "missing"), ...at(120n) }))).toMatchObject({
      _tag: "Finish",
      state: "failed",
    })
    expect(decideV2(fill({ state: "locking", ...sent("lock", "pending"), ...at(120n) }))._tag).toBe("Wait")
  })
  it("waits for the index when the state says locked but no row backs it", () => {
    expect(decideV2(fill({ state: "locked" }))).toEqual({ _tag: "Wait", why: "the lock is not indexed" })
  })
})

describe("settlement v2 step: no reveal, refunds, cancels", () => {
  const paid = { state: "paid" as const, ...merge(sent("lock", "final"), sent("pay", "final")), lock: locked }
  it("paid and not revealed by takerExpiry: refundPayment, then the lock refunds after makerExpiry", () => {
    expect(decideV2(fill({ ...paid, payment: held, ...at(1019n) }))._tag).toBe("Wait")
    expect(decideV2(fill({ ...paid, payment: held, ...at(1020n) }))).toEqual(submit("refundPayment", null))
    const refunded = { state: "refunded", secret: null } as const
    expect(decideV2(fill({ ...paid, payment: refunded, ...at(1100n) }))._tag).toBe("Wait")
    expect(decideV2(fill({ ...paid, payment: refunded, ...at(1620n) }))).toEqual(submit("refund", null))
    expect(
      decideV2(fill({ ...paid, lock: { state: "refunded", secret: null }, payment: refunded, ...at(1700n) })),
    ).toEqual({ _tag: "Finish", state: "refunded", error: null })
  })
  it("the lock refunded first: the held payment refunds after takerExpiry, then finish", () => {
    const gone = { state: "refunded", secret: null } as const
    expect(decideV2(fill({ ...paid, lock: gone, payment: held, ...at(1000n) }))._tag).toBe("Wait")
    expect(decideV2(fill({ ...paid, lock: gone, payment: held, ...at(1620n) }))).toEqual(submit("refundPayment", null))
  })
  it("cancelled with no payment → cancelled; a payTake still in flight is waited for", () => {
    const cancelled = { state: "cancelled", secret: null } as const
    const k = merge(sent("lock", "final"), sent("cancelLock", "final"))
    expect(decideV2(fill({ state: "locked", ...k, lock: cancelled }))).toEqual({
      _tag: "Finish",
      state: "cancelled",
      error: null,
    })
    const inflight = merge(k, sent("pay", "pending"))
    expect(decideV2(fill({ state: "paying", ...inflight, lock: cancelled }))._tag).toBe("Wait")
  })
  it("a secret public while a cancelLock is in flight: the claim goes out (never worse for the taker)", () => {
    const k = merge(sent("lock", "final"), sent("cancelLock", "pending"))
    expect(decideV2(fill({ state: "locked", ...k, lock: locked, secret: SECRET }))).toEqual(submit("claim", "claiming"))
    const paidClaimed = { state: "claimed", secret: SECRET } as const
    expect(decideV2(fill({ state: "locked", ...k, lock: locked, payment: paidClaimed }))).toEqual(
      submit("claim", "claiming"),
    )
  })
  it("delivered before any payment: finished at takerExpiry with no payTake of ours in flight, as unpaid", () => {
    const lock = { state: "claimed", secret: SECRET } as const
    const k = merge(sent("lock", "final"), sent("claim", "final"))
    // Past payBy a payment included just before it may still be on its way to finality: wait until takerExpiry.
    expect(decideV2(fill({ state: "claimed", ...k, lock, ...at(1019n) }))).toEqual({
      _tag: "Wait",
      why: "the payment is not indexed",
    })
    expect(decideV2(fill({ state: "claimed", ...k, lock, ...at(1020n) }))).toEqual({
      _tag: "Finish",
      state: "settled",
      error: DELIVERED_UNPAID,
      unpaid: true,
    })
    const paying = merge(k, sent("pay", "included"))
    expect(decideV2(fill({ state: "claimed", ...paying, lock, ...at(1100n) }))._tag).toBe("Wait")
  })
  it("a cancelLock sent is followed to its end (retried if it reverted)", () => {
    const k = merge(sent("lock", "final"), sent("cancelLock", "reverted"))
    expect(decideV2(fill({ state: "locked", ...k, lock: locked }))).toEqual(submit("cancelLock", null, 2))
  })
  it("a claim that reverted is retried before makerExpiry; past it, the lock is refunded", () => {
    const k = merge(sent("lock", "final"), sent("pay", "final"), sent("claim", "reverted"))
    const payment = { state: "claimed", secret: SECRET } as const
    expect(decideV2(fill({ state: "claiming", ...k, lock: locked, payment }))).toEqual(submit("claim", "claiming", 2))
    expect(decideV2(fill({ state: "claiming", ...k, lock: locked, payment, ...at(1620n) }))).toEqual(
      submit("refund", null),
    )
  })
  it("a claimed payment with a lock refunded: refunded, with the reason", () => {
    const k = merge(sent("lock", "final"), sent("pay", "final"))
    expect(
      decideV2(
        fill({
          state: "paid",
          ...k,
          lock: { state: "refunded", secret: null },
          payment: { state: "claimed", secret: SECRET },
        }),
      ),
    ).toMatchObject({ _tag: "Finish", state: "refunded" })
  })
})
