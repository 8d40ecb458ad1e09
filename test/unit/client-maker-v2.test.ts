/**
 * The maker client's reveal decision (src/Client/MakerReveal.ts): it reveals only for a payment to itself, at its
 * price, under its hashlock, matched by its own live lock (same Fill digest, its escrow and order) with time left.
 * Every single lie an operator acting as a taker could tell (no lock, another owner's order with the same id, a fake
 * escrow, too little time, …) leaves it silent. test/unit/client-flow-v2.test.ts runs the same on anvil chains.
 */
import fc from "fast-check"
import { bytesToHex, getAddress, type Hex, keccak256, toHex } from "viem"
import { describe, expect, it } from "vitest"
import type { LockView, PaymentView } from "../../src/Client/EscrowReadsV2.ts"
import {
  decideReveal,
  type MakerConfig,
  type RevealInput,
  type RevealRefusalCode,
} from "../../src/Client/MakerReveal.ts"
import type { QuoteSetV2 } from "../../src/Domain/EscrowTypedDataV2.ts"
import { deriveHashlockSet, hashlockOf, type SecretScope, secretKeyOf } from "../../src/Domain/Hashlocks.ts"

const MAKER_CHAIN = 999
const TAKER_CHAIN = 42161
const addr = (n: number) => getAddress(`0x${n.toString(16).padStart(40, "0")}`)
const config: MakerConfig = {
  makerChainId: MAKER_CHAIN,
  makerEscrow: addr(0xe2),
  takerChains: {
    [TAKER_CHAIN]: { escrow: addr(0xe1), payee: addr(0xb2) },
    // Reviewed, but this maker's sets below quote no escrow on it.
    10: { escrow: addr(0xe3), payee: addr(0xb2) },
  },
  revealCutoffSeconds: 120n,
}
const NOW = 1_800_000_000n
const bytes32 = fc.uint8Array({ minLength: 32, maxLength: 32 }).map((b) => bytesToHex(b))

interface Scenario {
  readonly key: Hex
  readonly input: RevealInput
  readonly index: number
}

/** A consistent, honest scenario: the maker's set, its lock of fill `index` and the matching final payment. */
const scenarioArb: fc.Arbitrary<Scenario> = fc
  .record({
    privateKey: bytes32,
    owner: fc.integer({ min: 1, max: 1000 }).map((n) => addr(0x10000 + n)),
    orderId: bytes32,
    sequence: fc.bigInt({ min: 1n, max: 2n ** 40n }),
    count: fc.integer({ min: 1, max: 8 }),
    pick: fc.nat(),
    supply: fc.bigInt({ min: 1n, max: 10n ** 12n }),
    receive: fc.bigInt({ min: 1n, max: 10n ** 12n }),
    amountOut: fc.bigInt({ min: 1n, max: 10n ** 12n }),
    extraIn: fc.bigInt({ min: 0n, max: 10n ** 6n }),
    timeLeft: fc.bigInt({ min: 120n, max: 10_000n }),
    digest: bytes32,
  })
  .map((p) => {
    const key = secretKeyOf(p.privateKey)
    const scope: SecretScope = {
      chainId: BigInt(MAKER_CHAIN),
      makerEscrow: config.makerEscrow,
      owner: p.owner,
      orderId: p.orderId,
      sequence: p.sequence,
    }
    const hashlocks = deriveHashlockSet(key, scope, p.count)
    const quoteSet: QuoteSetV2 = {
      owner: p.owner,
      orderId: p.orderId,
      sequence: p.sequence,
      generation: 1n,
      quoteSize: 10n ** 15n,
      issuedAt: NOW - 60n,
      validUntil: NOW + 240n,
      hashlockRoot: hashlocks.root,
      hashlockCount: p.count,
      quotes: [
        {
          chainId: BigInt(TAKER_CHAIN),
          token: addr(0xc1),
          escrow: config.takerChains[TAKER_CHAIN]!.escrow,
          recipient: config.takerChains[TAKER_CHAIN]!.payee,
          supply: p.supply,
          receive: p.receive,
          minFill: 1n,
        },
      ],
    }
    const index = p.pick % p.count
    const hashlock = hashlocks.hashlocks[index]!
    // The least the price allows (rounded up), plus something.
    const amountIn = (p.amountOut * p.receive + p.supply - 1n) / p.supply + p.extraIn
    const lock: LockView = {
      chainId: MAKER_CHAIN,
      escrow: config.makerEscrow,
      digest: p.digest,
      blockNumber: 100n,
      state: "Locked",
      owner: p.owner,
      orderId: p.orderId,
      sequence: p.sequence,
      expiry: NOW + p.timeLeft + 600n,
      dex: 0,
      toMargin: true,
      recipient: addr(0xa2),
      payKey: addr(0xa3),
      hashlock,
      amountOut: p.amountOut,
    }
    const payment: PaymentView = {
      chainId: TAKER_CHAIN,
      escrow: config.takerChains[TAKER_CHAIN]!.escrow,
      digest: p.digest,
      blockNumber: 200n,
      state: "Held",
      payer: addr(0xa1),
      expiry: NOW + p.timeLeft,
      payee: config.takerChains[TAKER_CHAIN]!.payee,
      hashlock,
      amountIn,
    }
    return { key, index, input: { config, quoteSet, hashlocks, payment, lock, now: NOW } }
  })

interface Lie {
  readonly name: string
  readonly apply: (s: Scenario) => RevealInput
  readonly code: RevealRefusalCode
}

const other = addr(0xdead)
const lies: ReadonlyArray<Lie> = [
  {
    name: "an operator-as-taker payment with no lock",
    apply: ({ input }) => ({ ...input, lock: { ...input.lock, state: "None", owner: addr(0), amountOut: 0n } }),
    code: "lock_state",
  },
  {
    name: "a lock on another owner's order with the same id",
    apply: ({ input }) => ({ ...input, lock: { ...input.lock, owner: other } }),
    code: "lock_order",
  },
  {
    name: "a lock on another order of this owner",
    apply: ({ input }) => ({ ...input, lock: { ...input.lock, orderId: keccak256(toHex("other order")) } }),
    code: "lock_order",
  },
  {
    name: "a lock under another sequence",
    apply: ({ input }) => ({ ...input, lock: { ...input.lock, sequence: input.lock.sequence + 1n } }),
    code: "lock_order",
  },
  {
    name: "a lock of another Fill (digest)",
    apply: ({ input }) => ({ ...input, lock: { ...input.lock, digest: keccak256(input.lock.digest) } }),
    code: "lock_fill",
  },
  {
    name: "a lock read on another escrow",
    apply: ({ input }) => ({ ...input, lock: { ...input.lock, escrow: other } }),
    code: "lock_escrow",
  },
  {
    name: "a lock read on another chain",
    apply: ({ input }) => ({ ...input, lock: { ...input.lock, chainId: TAKER_CHAIN } }),
    code: "lock_escrow",
  },
  {
    name: "a payment held by a fake escrow",
    apply: ({ input }) => ({ ...input, payment: { ...input.payment, escrow: other } }),
    code: "payment_escrow",
  },
  {
    name: "a payment on a reviewed escrow this set did not quote",
    apply: ({ input }) => ({
      ...input,
      payment: { ...input.payment, chainId: 10, escrow: config.takerChains[10]!.escrow },
    }),
    code: "payment_escrow",
  },
  {
    name: "too little time left",
    apply: ({ input }) => ({ ...input, payment: { ...input.payment, expiry: input.now + 119n } }),
    code: "time",
  },
  {
    name: "a payment to someone else",
    apply: ({ input }) => ({ ...input, payment: { ...input.payment, payee: other } }),
    code: "payee",
  },
  {
    name: "below the signed price",
    apply: ({ input }) => {
      const q = input.quoteSet.quotes[0]!
      const least = (input.lock.amountOut * q.receive + q.supply - 1n) / q.supply
      return { ...input, payment: { ...input.payment, amountIn: least - 1n } }
    },
    code: "price",
  },
  {
    name: "a hashlock that is not the maker's",
    apply: ({ input }) => {
      const h = keccak256(toHex("not ours"))
      return { ...input, payment: { ...input.payment, hashlock: h }, lock: { ...input.lock, hashlock: h } }
    },
    code: "hashlock",
  },
  {
    name: "lock and payment under different hashlocks",
    apply: ({ input, index }) => {
      const h = input.hashlocks.hashlocks[(index + 1) % input.hashlocks.count]!
      return { ...input, lock: { ...input.lock, hashlock: h === input.lock.hashlock ? keccak256(h) : h } }
    },
    code: "lock_fill",
  },
  {
    name: "hashlocks that are not the set's",
    apply: ({ input, key }) => ({
      ...input,
      hashlocks: deriveHashlockSet(
        key,
        {
          chainId: BigInt(MAKER_CHAIN),
          makerEscrow: config.makerEscrow,
          owner: input.quoteSet.owner,
          orderId: input.quoteSet.orderId,
          sequence: input.quoteSet.sequence + 1n,
        },
        input.quoteSet.hashlockCount,
      ),
    }),
    code: "quote_set",
  },
  ...(["None", "Claimed", "Refunded"] as const).map(
    (state): Lie => ({
      name: `a payment ${state}`,
      apply: ({ input }) => ({ ...input, payment: { ...input.payment, state } }),
      code: "payment_state",
    }),
  ),
  ...(["Refunded", "Cancelled"] as const).map(
    (state): Lie => ({
      name: `a lock ${state}`,
      apply: ({ input }) => ({ ...input, lock: { ...input.lock, state } }),
      code: "lock_state",
    }),
  ),
]

describe("decideReveal", () => {
  it("reveals the secret of the payment's hashlock for an honest, matching pair with the cutoff left", () =>
    fc.assert(
      fc.property(scenarioArb, ({ input, index }) => {
        const d = decideReveal(input)
        expect(d.reveal ? [] : d.reasons).toEqual([])
        if (!d.reveal) return
        expect(d.hashlockIndex).toBe(index)
        expect(hashlockOf(d.secret)).toBe(input.payment.hashlock)
        expect(d).toMatchObject({ digest: input.payment.digest, takerChainId: TAKER_CHAIN, takerEscrow: addr(0xe1) })
      }),
    ))

  it("a maker restarted with its state wiped re-derives the same secret from its key and the set", () =>
    fc.assert(
      fc.property(scenarioArb, ({ input, key }) => {
        const q = input.quoteSet
        const rederived = deriveHashlockSet(
          key,
          {
            chainId: BigInt(MAKER_CHAIN),
            makerEscrow: config.makerEscrow,
            owner: q.owner,
            orderId: q.orderId,
            sequence: q.sequence,
          },
          q.hashlockCount,
        )
        const a = decideReveal(input)
        const b = decideReveal({ ...input, hashlocks: rederived })
        expect(b).toEqual(a)
      }),
      { numRuns: 30 },
    ))

  it("a lock already claimed (the secret went public, our reveal was dropped): the payment is still claimed", () => {
    const [s] = fc.sample(scenarioArb, { numRuns: 1, seed: 11 })
    const claimed = (expiry: bigint) =>
      decideReveal({
        ...s!.input,
        lock: { ...s!.input.lock, state: "Claimed" },
        payment: { ...s!.input.payment, expiry },
      })
    // Inside the cutoff too (nothing new is revealed), until takerExpiry; every other check still applies.
    expect(claimed(NOW + 30n).reveal).toBe(true)
    expect(claimed(NOW + 1n).reveal).toBe(true)
    expect(claimed(NOW)).toMatchObject({ reveal: false, reasons: [{ code: "time" }] })
    const elsewhere = decideReveal({
      ...s!.input,
      lock: { ...s!.input.lock, state: "Claimed" },
      payment: { ...s!.input.payment, payee: other },
    })
    expect(elsewhere.reveal).toBe(false)
  })

  it("exactly at the cutoff reveals; one second less does not", () => {
    const [s] = fc.sample(scenarioArb, { numRuns: 1, seed: 7 })
    const at = (expiry: bigint) => decideReveal({ ...s!.input, payment: { ...s!.input.payment, expiry } }).reveal
    expect(at(NOW + 120n)).toBe(true)
    expect(at(NOW + 119n)).toBe(false)
  })

  it.each(lies.map((l) => [l.name, l] as const))("%s: no reveal", (_, lie) =>
    fc.assert(
      fc.property(scenarioArb, (s) => {
        const d = decideReveal(lie.apply(s))
        expect(d.reveal).toBe(false)
        if (!d.reveal) expect(d.reasons.map((r) => r.code)).toContain(lie.code)
      }),
      { numRuns: 25 },
    ),
  )
})
