import fc from "fast-check"
import { decodeFunctionData, getAddress, keccak256 } from "viem"
import { describe, expect, it } from "vitest"
import { settlementEscrowAbi } from "../../src/Chain/artifacts/index.ts"
import {
  cancelLockCall,
  claimCall,
  claimPaymentCall,
  fillFromWire,
  lockCall,
  payCall,
  permitArg,
  quoteSetFromRow,
  refundCall,
  refundPaymentCall,
} from "../../src/Chain/SettlementCalls.ts"
import {
  type Action,
  attemptOf,
  type CallOutcome,
  callKey,
  decide,
  effectiveFacts,
  type FillFacts,
  type FillState,
  MAX_ATTEMPTS,
  type OutcomeStatus,
  type SettlementCall,
} from "../../src/Domain/SettlementStep.ts"
import { toWireTypedData } from "../../src/Domain/WireTypedData.ts"

const ID = "7f1e0c2a-0000-4000-8000-000000000001"
const T0 = 1_800_000_000n

/** A fill at `state`, lock 1800 s and payment 3600 s ahead, reveal cutoff 600 s, nothing on chain yet. */
const fill = (over: Partial<FillFacts> = {}): FillFacts => ({
  fillId: ID,
  state: "signed",
  keys: {},
  outcomes: new Map(),
  lock: null,
  payment: null,
  makerExpiry: T0 + 1800n,
  takerExpiry: T0 + 3600n,
  makerNow: T0,
  takerNow: T0,
  revealCutoff: 600n,
  ...over,
})

const sent = (call: SettlementCall, status: OutcomeStatus, reason: string | null = null, attempt = 1) => ({
  keys: { [call]: callKey(ID, call, attempt) },
  outcomes: new Map<string, CallOutcome>([[callKey(ID, call, attempt), { status, reason }]]),
})

const merge = (...parts: Array<Pick<FillFacts, "keys" | "outcomes">>) => ({
  keys: Object.assign({}, ...parts.map((p) => p.keys)),
  outcomes: new Map(parts.flatMap((p) => [...p.outcomes])),
})

const submit = (call: SettlementCall, state: FillState | null, attempt = 1, error: string | null = null): Action => ({
  _tag: "Submit",
  call,
  key: callKey(ID, call, attempt),
  state,
  error,
})

const locked = { state: "locked", secret: null } as const
const held = { state: "held", secret: null } as const
const SECRET = `0x${"ab".repeat(32)}`

describe("settlement step: the happy path", () => {
  it("signed → lock → locked → pay → paid → claim → claimed → claimPayment → settled", () => {
    expect(decide(fill())).toEqual(submit("lock", "locking"))
    expect(decide(fill({ state: "locking", ...sent("lock", "pending") }))._tag).toBe("Wait")
    expect(decide(fill({ state: "locking", ...sent("lock", "final"), lock: locked }))).toEqual({
      _tag: "Advance",
      state: "locked",
    })
    const afterLock = sent("lock", "final")
    expect(decide(fill({ state: "locked", ...afterLock, lock: locked }))).toEqual(submit("pay", "paying"))
    const paying = merge(afterLock, sent("pay", "included"))
    expect(decide(fill({ state: "paying", ...paying, lock: locked }))._tag).toBe("Wait")
    expect(decide(fill({ state: "paying", ...paying, lock: locked, payment: held }))).toEqual({
      _tag: "Advance",
      state: "paid",
    })
    expect(decide(fill({ state: "paid", ...paying, lock: locked, payment: held }))).toEqual(submit("claim", "claiming"))
    const claiming = merge(paying, sent("claim", "pending"))
    expect(decide(fill({ state: "claiming", ...claiming, lock: locked, payment: held }))._tag).toBe("Wait")
    const claimedLock = { state: "claimed", secret: SECRET } as const
    expect(decide(fill({ state: "claiming", ...claiming, lock: claimedLock, payment: held }))).toEqual({
      _tag: "Advance",
      state: "claimed",
    })
    expect(decide(fill({ state: "claimed", ...claiming, lock: claimedLock, payment: held }))).toEqual(
      submit("claimPayment", null),
    )
    const collecting = merge(claiming, sent("claimPayment", "final"))
    expect(
      decide(
        fill({ state: "claimed", ...collecting, lock: claimedLock, payment: { state: "claimed", secret: SECRET } }),
      ),
    ).toEqual({ _tag: "Finish", state: "settled", error: null })
  })

  it("the relayer's final outcome of our own call moves the fill on before the index shows it", () => {
    const afterLock = sent("lock", "final")
    expect(decide(fill({ state: "locking", ...afterLock }))).toEqual({ _tag: "Advance", state: "locked" })
    expect(decide(fill({ state: "locked", ...afterLock }))).toEqual(submit("pay", "paying"))
    // Not before it is final: included is not enough for the lock or the payment.
    expect(decide(fill({ state: "locking", ...sent("lock", "included") }))._tag).toBe("Wait")
    expect(decide(fill({ state: "locked", ...sent("lock", "included") }))._tag).toBe("Wait")
    expect(decide(fill({ state: "paying", ...merge(afterLock, sent("pay", "included")) }))._tag).toBe("Wait")
    const paid = merge(afterLock, sent("pay", "final"))
    expect(decide(fill({ state: "paying", ...paid }))).toEqual({ _tag: "Advance", state: "paid" })
    expect(decide(fill({ state: "paid", ...paid }))).toEqual(submit("claim", "claiming"))
    // Our claim in a block reveals the secret: collect the payment without waiting for the claim's finality.
    expect(decide(fill({ state: "claiming", ...merge(paid, sent("claim", "pending")) }))._tag).toBe("Wait")
    const revealed = merge(paid, sent("claim", "included"))
    expect(decide(fill({ state: "claiming", ...revealed }))).toEqual(submit("claimPayment", null))
    const collecting = merge(revealed, sent("claimPayment", "pending"))
    expect(decide(fill({ state: "claiming", ...collecting }))._tag).toBe("Wait")
    // The claimPayment final while the claim is not: not settled yet (the claim must be final too).
    const paidOut = merge(revealed, sent("claimPayment", "final"))
    expect(decide(fill({ state: "claiming", ...paidOut }))._tag).toBe("Wait")
    const claimed = merge(paidOut, sent("claim", "final"))
    // Both final in one pass: claimed first (fill.claimed is journaled before fill.settled), then settled.
    expect(decide(fill({ state: "claiming", ...claimed }))).toEqual({ _tag: "Advance", state: "claimed" })
    expect(decide(fill({ state: "claiming", ...merge(revealed, sent("claim", "final")) }))).toEqual({
      _tag: "Advance",
      state: "claimed",
    })
    expect(decide(fill({ state: "claimed", ...claimed }))).toEqual({ _tag: "Finish", state: "settled", error: null })
  })

  it("a claim that fails after its claimPayment was sent is claimed again; a lost claimPayment key is resubmitted", () => {
    const paid = merge(sent("lock", "final"), sent("pay", "final"))
    const lost = merge(paid, sent("claim", "replaced"), sent("claimPayment", "pending"))
    expect(decide(fill({ state: "claiming", ...lost }))).toEqual(submit("claim", "claiming", 2))
    const unsent = merge(paid, sent("claim", "included"), {
      keys: { claimPayment: callKey(ID, "claimPayment") },
      outcomes: new Map(),
    })
    expect(decide(fill({ state: "claiming", ...unsent }))).toEqual({
      _tag: "Resubmit",
      call: "claimPayment",
      key: callKey(ID, "claimPayment"),
    })
  })

  it("the index wins over the relayer: a lock the index shows refunded is not taken as claimed", () => {
    const f = fill({ state: "claiming", ...sent("claim", "final"), lock: { state: "refunded", secret: null } })
    expect(effectiveFacts(f).lock?.state).toBe("refunded")
  })

  it("a stored key the relayer never got (crash between commit and submit) is submitted again", () => {
    expect(decide(fill({ state: "locking", keys: { lock: callKey(ID, "lock") } }))).toEqual({
      _tag: "Resubmit",
      call: "lock",
      key: callKey(ID, "lock"),
    })
    const k = merge(sent("lock", "final"), { keys: { pay: callKey(ID, "pay") }, outcomes: new Map() })
    expect(decide(fill({ state: "paying", ...k, lock: locked }))).toEqual({
      _tag: "Resubmit",
      call: "pay",
      key: callKey(ID, "pay"),
    })
  })
})

describe("settlement step: aborts", () => {
  it("a reverted or replaced lock fails the fill with the reason (nothing moved)", () => {
    expect(decide(fill({ state: "locking", ...sent("lock", "reverted", "QuoteSizeExceeded(1, 0)") }))).toEqual({
      _tag: "Finish",
      state: "failed",
      error: "QuoteSizeExceeded(1, 0)",
    })
    expect(decide(fill({ state: "locking", ...sent("lock", "replaced") }))).toMatchObject({
      _tag: "Finish",
      state: "failed",
    })
  })

  it("a reverted payment cancels the lock; the cancelled lock without payment ends cancelled", () => {
    const k = merge(sent("lock", "final"), sent("pay", "reverted", "ERC20InsufficientAllowance"))
    expect(decide(fill({ state: "paying", ...k, lock: locked }))).toEqual(
      submit("cancelLock", null, 1, "ERC20InsufficientAllowance"),
    )
    const cancelling = merge(k, sent("cancelLock", "pending"))
    expect(decide(fill({ state: "paying", ...cancelling, lock: locked }))._tag).toBe("Wait")
    expect(decide(fill({ state: "paying", ...cancelling, lock: { state: "cancelled", secret: null } }))).toEqual({
      _tag: "Finish",
      state: "cancelled",
      error: null,
    })
  })

  it("no payment once the lock is too close to expiry for a reveal: cancel instead", () => {
    const f = fill({ state: "locked", ...sent("lock", "final"), lock: locked, makerNow: T0 + 1300n })
    expect(decide(f)).toMatchObject({ _tag: "Submit", call: "cancelLock" })
    expect(decide({ ...f, makerNow: T0 + 1100n })).toMatchObject({ _tag: "Submit", call: "pay" })
  })

  it("never reveals with less than reveal_cutoff left; refunds the lock after makerExpiry, the payment after takerExpiry", () => {
    const k = merge(sent("lock", "final"), sent("pay", "final"))
    const paid = fill({ state: "paid", ...k, lock: locked, payment: held, makerNow: T0 + 1201n })
    expect(decide(paid)._tag).toBe("Wait")
    expect(decide({ ...paid, makerNow: T0 + 1200n })).toEqual(submit("claim", "claiming"))
    expect(decide({ ...paid, makerNow: T0 + 1800n })).toEqual(submit("refund", null))
    const refunded = { ...paid, lock: { state: "refunded", secret: null } as const, makerNow: T0 + 1900n }
    expect(decide({ ...refunded, takerNow: T0 + 3599n })._tag).toBe("Wait")
    expect(decide({ ...refunded, takerNow: T0 + 3600n })).toEqual(submit("refundPayment", null))
    expect(decide({ ...refunded, payment: { state: "refunded", secret: null } })).toEqual({
      _tag: "Finish",
      state: "refunded",
      error: null,
    })
  })

  it("an expired lock with the payment still in flight waits for the payment's outcome", () => {
    const k = merge(sent("lock", "final"), sent("pay", "pending"))
    const f = fill({ state: "paying", ...k, lock: { state: "refunded", secret: null }, makerNow: T0 + 1800n })
    expect(decide(f)._tag).toBe("Wait")
    const reverted = merge(sent("lock", "final"), sent("pay", "reverted", "BadExpiry()"))
    expect(decide({ ...f, ...reverted })).toEqual({ _tag: "Finish", state: "refunded", error: null })
  })

  it("a secret made public by someone else's claim completes the payment claim", () => {
    const k = merge(sent("lock", "final"), sent("pay", "final"))
    const f = fill({ state: "paid", ...k, lock: { state: "claimed", secret: SECRET }, payment: held })
    expect(decide(f)).toEqual({ _tag: "Advance", state: "claimed" })
    expect(decide({ ...f, state: "claimed" })).toEqual(submit("claimPayment", null))
  })

  it("a failed claimPayment is retried under a new key, at most MAX_ATTEMPTS times, only before takerExpiry", () => {
    const base = merge(sent("lock", "final"), sent("pay", "final"), sent("claim", "final"))
    const claimed = { state: "claimed", secret: SECRET } as const
    const at = (attempt: number, takerNow = T0) =>
      decide(
        fill({
          state: "claimed",
          ...merge(base, sent("claimPayment", "replaced", null, attempt)),
          lock: claimed,
          payment: held,
          takerNow,
        }),
      )
    expect(at(1)).toEqual(submit("claimPayment", null, 2))
    expect(at(MAX_ATTEMPTS)._tag).toBe("Wait")
    expect(at(1, T0 + 3600n)._tag).toBe("Wait")
    expect(attemptOf(callKey(ID, "claimPayment", 4))).toBe(4)
    expect(attemptOf(callKey(ID, "claimPayment"))).toBe(1)
  })
})

// ------------------------------------------------------------------ properties over arbitrary facts

const STATES: Array<FillState> = ["signed", "locking", "locked", "paying", "paid", "claiming", "claimed"]
const CALLS: Array<SettlementCall> = ["lock", "pay", "claim", "claimPayment", "cancelLock", "refund", "refundPayment"]
const STATUSES: Array<OutcomeStatus> = ["missing", "queued", "pending", "included", "final", "reverted", "replaced"]

const arbFacts = fc
  .record({
    state: fc.constantFrom(...STATES),
    calls: fc.array(
      fc.record({
        call: fc.constantFrom(...CALLS),
        status: fc.constantFrom(...STATUSES),
        attempt: fc.integer({ min: 1, max: 6 }),
      }),
      { maxLength: 7 },
    ),
    lock: fc.option(
      fc.record({
        state: fc.constantFrom("locked", "claimed", "refunded", "cancelled" as const),
        secret: fc.option(fc.constant(SECRET)),
      }),
    ),
    payment: fc.option(
      fc.record({
        state: fc.constantFrom("held", "claimed", "refunded" as const),
        secret: fc.option(fc.constant(SECRET)),
      }),
    ),
    makerNow: fc.bigInt({ min: T0 - 100n, max: T0 + 4000n }),
    takerNow: fc.bigInt({ min: T0 - 100n, max: T0 + 4000n }),
  })
  .map(
    (r): FillFacts =>
      fill({
        state: r.state,
        keys: Object.fromEntries(r.calls.map((c) => [c.call, callKey(ID, c.call, c.attempt)])),
        outcomes: new Map(
          r.calls
            .filter((c) => c.status !== "missing")
            .map((c) => [callKey(ID, c.call, c.attempt), { status: c.status, reason: null }]),
        ),
        lock: r.lock,
        payment: r.payment,
        makerNow: r.makerNow,
        takerNow: r.takerNow,
      }),
  )

describe("settlement step: invariants", () => {
  it("reveals only with the payment held, the lock live and at least reveal_cutoff before makerExpiry", () => {
    fc.assert(
      fc.property(arbFacts, (raw) => {
        // Final = in the index, or our own call final by the relayer (effectiveFacts folds those in).
        const f = effectiveFacts(raw)
        const a = decide(raw)
        if (a._tag === "Submit" && a.call === "claim") {
          expect(f.payment?.state).toBe("held")
          expect(f.lock?.state).toBe("locked")
          expect(f.makerExpiry - f.makerNow >= f.revealCutoff).toBe(true)
        }
      }),
      { numRuns: 5000 },
    )
  })

  it("settles only when both sides are claimed; pays only against a live lock; refunds only after expiry", () => {
    fc.assert(
      fc.property(arbFacts, (raw) => {
        const f = effectiveFacts(raw)
        const a = decide(raw)
        if (a._tag === "Finish" && a.state === "settled") expect(f.payment?.state).toBe("claimed")
        // claimPayment only once the secret is out: the lock claimed (final), or our claim in a block.
        if (a._tag === "Submit" && a.call === "claimPayment") {
          const claim = raw.keys.claim ? raw.outcomes.get(raw.keys.claim)?.status : undefined
          expect(f.lock?.state === "claimed" || claim === "included").toBe(true)
        }
        if (a._tag === "Submit" && a.call === "pay") {
          expect(f.lock?.state).toBe("locked")
          expect(f.payment).toBe(null)
          expect(f.makerNow < f.makerExpiry).toBe(true)
        }
        if (a._tag === "Submit" && a.call === "refund") expect(f.makerNow >= f.makerExpiry).toBe(true)
        if (a._tag === "Submit" && a.call === "refundPayment") {
          expect(f.takerNow >= f.takerExpiry).toBe(true)
          expect(f.lock?.state === "claimed").toBe(false)
        }
        if (a._tag === "Submit" && a.call === "cancelLock") expect(f.lock?.state).toBe("locked")
        if (a._tag === "Finish" && (a.state === "cancelled" || a.state === "refunded")) {
          expect(f.payment?.state === "held").toBe(false)
        }
      }),
      { numRuns: 5000 },
    )
  })

  it("keys are settle:<fill>:<call>[:n], a new key only after the previous failed, never past MAX_ATTEMPTS", () => {
    fc.assert(
      fc.property(arbFacts, (f) => {
        const a = decide(f)
        if (a._tag !== "Submit") return
        expect(a.key.startsWith(`settle:${ID}:${a.call}`)).toBe(true)
        const previous = f.keys[a.call]
        if (previous) {
          expect(["reverted", "replaced"]).toContain(f.outcomes.get(previous)?.status)
          expect(attemptOf(a.key)).toBe(attemptOf(previous) + 1)
        }
        expect(attemptOf(a.key)).toBeLessThanOrEqual(MAX_ATTEMPTS)
      }),
      { numRuns: 5000 },
    )
  })
})

describe("settlement calls: calldata from stored records", () => {
  const fillMsg = {
    fillId: `0x${"0".repeat(32)}${ID.replaceAll("-", "")}` as `0x${string}`,
    orderId: `0x${"11".repeat(32)}` as `0x${string}`,
    sequence: 3n,
    makerChainId: 999n,
    makerEscrow: getAddress(`0x${"aa".repeat(20)}`),
    takerChainId: 42161n,
    takerEscrow: getAddress(`0x${"bb".repeat(20)}`),
    payer: getAddress(`0x${"cc".repeat(20)}`),
    payee: getAddress(`0x${"dd".repeat(20)}`),
    amountIn: 10n ** 30n,
    recipient: getAddress(`0x${"ee".repeat(20)}`),
    amountOut: 2n ** 255n,
    dex: 4294967295,
    toMargin: true,
    hashlock: keccak256(SECRET as `0x${string}`),
    makerExpiry: T0 + 1800n,
    takerExpiry: T0 + 3600n,
  }

  it("the wire Fill (decimal strings, lowercase addresses) converts back to the signed message exactly", () => {
    const wire = JSON.parse(
      JSON.stringify(toWireTypedData(fillMsg), (_k, v) =>
        typeof v === "string" && /^0x[0-9a-fA-F]{40}$/.test(v) ? v.toLowerCase() : v,
      ),
    )
    expect(fillFromWire(wire)).toEqual(fillMsg)
  })

  it("lock, pay, claim and the refunds encode the escrow functions with the records' values", () => {
    const set = quoteSetFromRow({
      order_id: fillMsg.orderId,
      sequence: "3",
      identity_generation: "7",
      quote_size: "1000",
      valid_until: new Date(Number(T0) * 1000),
      quotes: [
        {
          chain_id: 42161,
          token: `0x${"12".repeat(20)}`,
          recipient: `0x${"dd".repeat(20)}`,
          supply: "5",
          receive: "4",
          min_fill: "1",
        },
      ],
    })
    const lock = decodeFunctionData({ abi: settlementEscrowAbi, data: lockCall(fillMsg, "0x01", set, 0, "0x02") })
    expect(lock.functionName).toBe("lock")
    expect(lock.args[0]).toEqual(fillMsg)
    expect(lock.args[2]).toMatchObject({ sequence: 3n, generation: 7n, quoteSize: 1000n, validUntil: T0 })
    const sig = `0x${"ab".repeat(32)}${"cd".repeat(32)}01` as `0x${string}`
    const pay = decodeFunctionData({ abi: settlementEscrowAbi, data: payCall(fillMsg, "0x01", permitArg(5n, 6n, sig)) })
    expect(pay.args[2]).toEqual({
      value: 5n,
      deadline: 6n,
      v: 28,
      r: `0x${"ab".repeat(32)}`,
      s: `0x${"cd".repeat(32)}`,
    })
    for (const [data, name] of [
      [claimCall(fillMsg.fillId, SECRET as `0x${string}`), "claim"],
      [claimPaymentCall(fillMsg.fillId, SECRET as `0x${string}`), "claimPayment"],
      [cancelLockCall(fillMsg.fillId), "cancelLock"],
      [refundCall(fillMsg.fillId), "refund"],
      [refundPaymentCall(fillMsg.fillId), "refundPayment"],
    ] as const) {
      const d = decodeFunctionData({ abi: settlementEscrowAbi, data })
      expect(d.functionName).toBe(name)
      expect(d.args[0]).toBe(fillMsg.fillId)
    }
  })
})
