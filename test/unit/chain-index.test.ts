import fc from "fast-check"
import { type Address, type Hex, type Log, zeroAddress, zeroHash } from "viem"
import { describe, expect, it } from "vitest"
import {
  applyEvents,
  emptyState,
  type IndexState,
  indexedLiabilities,
  touchedKeys,
} from "../../src/Chain/EscrowIndex.ts"
import { decodeLogs, type IndexedEvent } from "../../src/Chain/EscrowLogs.ts"
import { firstMismatch } from "../../src/Chain/Integrity.ts"
import { addr, ESCROW, fill, id, LEGACY, logOf, OTHER, resetLogIndex } from "../support/ChainLogs.ts"

// ------------------------------------------------------------------ a model of the escrow's bookkeeping

interface Model {
  orders: Map<string, { owner: Address; available: bigint; locked: bigint }>
  balances: Map<string, bigint>
  locks: Map<string, { orderId: Hex; amount: bigint; state: "locked" | "claimed" | "refunded" | "cancelled" }>
  payments: Map<string, { amount: bigint; state: "held" | "claimed" | "refunded" }>
  liabilities: bigint
}

type Op =
  | { op: "fund"; order: number; owner: number; amount: bigint }
  | { op: "close"; order: number; refused: boolean }
  | { op: "closeZero"; owner: number; refused: boolean }
  | { op: "lock"; order: number; fill: number; part: number }
  | { op: "settle"; fill: number; how: "claim" | "claimRefused" | "refund" | "cancel" }
  | { op: "pay"; fill: number; amount: bigint }
  | { op: "settlePayment"; fill: number; how: "claim" | "refund" }

const opArb: fc.Arbitrary<Op> = fc.oneof(
  fc.record({
    op: fc.constant("fund" as const),
    order: fc.integer({ min: 1, max: 5 }),
    owner: fc.integer({ min: 1, max: 3 }),
    amount: fc.bigInt({ min: 1n, max: 10n ** 12n }),
  }),
  fc.record({ op: fc.constant("close" as const), order: fc.integer({ min: 1, max: 5 }), refused: fc.boolean() }),
  fc.record({ op: fc.constant("closeZero" as const), owner: fc.integer({ min: 1, max: 3 }), refused: fc.boolean() }),
  fc.record({
    op: fc.constant("lock" as const),
    order: fc.integer({ min: 1, max: 5 }),
    fill: fc.integer({ min: 1, max: 12 }),
    part: fc.integer({ min: 1, max: 100 }),
  }),
  fc.record({
    op: fc.constant("settle" as const),
    fill: fc.integer({ min: 1, max: 12 }),
    how: fc.constantFrom("claim" as const, "claimRefused" as const, "refund" as const, "cancel" as const),
  }),
  fc.record({
    op: fc.constant("pay" as const),
    fill: fc.integer({ min: 1, max: 12 }),
    amount: fc.bigInt({ min: 1n, max: 10n ** 9n }),
  }),
  fc.record({
    op: fc.constant("settlePayment" as const),
    fill: fc.integer({ min: 1, max: 12 }),
    how: fc.constantFrom("claim" as const, "refund" as const),
  }),
)

/** Runs the ops against the model with the contract's rules; returns the logs the contract would emit. */
const run = (ops: ReadonlyArray<Op>, blockOf: (i: number) => bigint) => {
  const m: Model = { orders: new Map(), balances: new Map(), locks: new Map(), payments: new Map(), liabilities: 0n }
  const logs: Array<Log> = []
  const credit = (who: Address, amount: bigint) => m.balances.set(who, (m.balances.get(who) ?? 0n) + amount)
  ops.forEach((o, i) => {
    const block = blockOf(i)
    switch (o.op) {
      case "fund": {
        const orderId = id(o.order)
        const prev = m.orders.get(orderId)
        const owner = prev?.owner ?? addr(o.owner)
        const available = (prev?.available ?? 0n) + o.amount
        m.orders.set(orderId, { owner, available, locked: prev?.locked ?? 0n })
        m.liabilities += o.amount
        logs.push(
          logOf(
            "OrderFunded",
            {
              orderId,
              owner,
              operator: addr(0x0b),
              quoteSigner: addr(0x05),
              amount: o.amount,
              available,
              created: prev === undefined,
              digest: id(7),
            },
            block,
          ),
        )
        break
      }
      case "close": {
        const orderId = id(o.order)
        const order = m.orders.get(orderId)
        if (!order || order.available === 0n) return
        const amount = order.available
        order.available = 0n
        m.liabilities -= amount
        if (o.refused) {
          credit(order.owner, amount)
          m.liabilities += amount
        }
        logs.push(
          logOf(
            "OrderClosed",
            {
              orderId,
              owner: order.owner,
              caller: OTHER,
              amount,
              dex: 0,
              toMargin: o.refused,
              refused: o.refused,
              byOperator: false,
              nonce: BigInt(i),
            },
            block,
          ),
        )
        break
      }
      case "closeZero": {
        const owner = addr(o.owner)
        const amount = m.balances.get(owner) ?? 0n
        if (amount === 0n) return
        m.balances.set(owner, o.refused ? amount : 0n)
        logs.push(
          logOf(
            "OrderClosed",
            {
              orderId: zeroHash,
              owner,
              caller: OTHER,
              amount,
              dex: 0,
              toMargin: o.refused,
              refused: o.refused,
              byOperator: false,
              nonce: BigInt(i),
            },
            block,
          ),
        )
        if (!o.refused) m.liabilities -= amount
        break
      }
      case "lock": {
        const orderId = id(o.order)
        const fillId = id(0x1000 + o.fill)
        const order = m.orders.get(orderId)
        if (!order || m.locks.has(fillId)) return
        const amount = (order.available * BigInt(o.part)) / 100n
        if (amount === 0n) return
        order.available -= amount
        order.locked += amount
        m.locks.set(fillId, { orderId, amount, state: "locked" })
        logs.push(
          logOf(
            "Locked",
            {
              fillId,
              orderId,
              payer: addr(0xa1),
              fill: fill(fillId, orderId, amount, 1n, addr(0xee)),
              quoteIndex: 0n,
              quoteSetDigest: id(8),
              fillDigest: id(9),
            },
            block,
          ),
        )
        break
      }
      case "settle": {
        const fillId = id(0x1000 + o.fill)
        const l = m.locks.get(fillId)
        if (l?.state !== "locked") return
        const order = m.orders.get(l.orderId)!
        order.locked -= l.amount
        if (o.how === "claim" || o.how === "claimRefused") {
          l.state = "claimed"
          m.liabilities -= l.amount
          const refused = o.how === "claimRefused"
          if (refused) {
            credit(addr(0xee), l.amount)
            m.liabilities += l.amount
          }
          logs.push(
            logOf(
              "Claimed",
              {
                fillId,
                orderId: l.orderId,
                recipient: addr(0xee),
                amountOut: l.amount,
                dex: 0,
                toMargin: true,
                refused,
                secret: id(0x5),
              },
              block,
            ),
          )
        } else {
          order.available += l.amount
          l.state = o.how === "refund" ? "refunded" : "cancelled"
          logs.push(
            logOf(
              o.how === "refund" ? "Refunded" : "LockCancelled",
              { fillId, orderId: l.orderId, amountOut: l.amount },
              block,
            ),
          )
        }
        break
      }
      case "pay": {
        const fillId = id(0x2000 + o.fill)
        if (m.payments.has(fillId)) return
        m.payments.set(fillId, { amount: o.amount, state: "held" })
        m.liabilities += o.amount
        logs.push(
          logOf(
            "Paid",
            {
              fillId,
              payer: addr(0xa1),
              payee: addr(0xa2),
              fill: fill(fillId, id(1), 1n, o.amount, addr(0xee)),
              fillDigest: id(10),
            },
            block,
          ),
        )
        break
      }
      case "settlePayment": {
        const fillId = id(0x2000 + o.fill)
        const p = m.payments.get(fillId)
        if (p?.state !== "held") return
        p.state = o.how === "claim" ? "claimed" : "refunded"
        m.liabilities -= p.amount
        logs.push(
          o.how === "claim"
            ? logOf("PaymentClaimed", { fillId, payee: addr(0xa2), amountIn: p.amount, secret: id(0x5) }, block)
            : logOf("PaymentRefunded", { fillId, payer: addr(0xa1), amountIn: p.amount }, block),
        )
        break
      }
    }
  })
  return { model: m, logs }
}

/** Applies pages the way the store does: load the touched rows, fold, write them back. */
const ingestInPages = (events: ReadonlyArray<IndexedEvent>, pageSize: number): IndexState => {
  const db = emptyState()
  for (let i = 0; i < events.length; i += pageSize) {
    const page = events.slice(i, i + pageSize)
    const keys = touchedKeys(page)
    const loaded = emptyState()
    for (const k of keys.orders) if (db.orders.has(k)) loaded.orders.set(k, db.orders.get(k)!)
    for (const k of keys.balances) if (db.balances.has(k)) loaded.balances.set(k, db.balances.get(k)!)
    for (const k of keys.locks) if (db.locks.has(k)) loaded.locks.set(k, db.locks.get(k)!)
    for (const k of keys.payments) if (db.payments.has(k)) loaded.payments.set(k, db.payments.get(k)!)
    for (const k of keys.legacy) if (db.legacy.has(k)) loaded.legacy.set(k, db.legacy.get(k)!)
    applyEvents(loaded, page)
    for (const [k, v] of loaded.orders) db.orders.set(k, v)
    for (const [k, v] of loaded.balances) db.balances.set(k, v)
    for (const [k, v] of loaded.locks) db.locks.set(k, v)
    for (const [k, v] of loaded.payments) db.payments.set(k, v)
    for (const [k, v] of loaded.legacy) db.legacy.set(k, v)
  }
  return db
}

describe("escrow index fold", () => {
  it("decodes only our contracts' events, in chain order", () => {
    const a = logOf("NonceInvalidated", { owner: addr(1), nonce: 5n }, 3n)
    const b = logOf("OfferCreated", { id: 1n, owner: addr(1), amount: 10n, refundAt: 99n }, 2n, LEGACY)
    const foreign = logOf("NonceInvalidated", { owner: addr(1), nonce: 6n }, 1n, OTHER)
    const removed = { ...logOf("NonceInvalidated", { owner: addr(1), nonce: 7n }, 1n), removed: true }
    const events = decodeLogs([a, b, foreign, removed], [ESCROW, LEGACY])
    expect(events.map((e) => [e.blockNumber, e.decoded.eventName])).toEqual([
      [2n, "OfferCreated"],
      [3n, "NonceInvalidated"],
    ])
  })

  it("funding, a lock claimed into a refused margin deposit, and a zero-id close", () => {
    const o = id(1)
    const owner = addr(3)
    const recipient = addr(0xee)
    const events = decodeLogs(
      [
        logOf(
          "OrderFunded",
          {
            orderId: o,
            owner,
            operator: addr(0xb),
            quoteSigner: addr(5),
            amount: 100n,
            available: 100n,
            created: true,
            digest: id(7),
          },
          1n,
        ),
        logOf(
          "Locked",
          {
            fillId: id(0x10),
            orderId: o,
            payer: addr(0xa1),
            fill: fill(id(0x10), o, 30n, 1n, recipient),
            quoteIndex: 0n,
            quoteSetDigest: id(8),
            fillDigest: id(9),
          },
          2n,
        ),
        logOf(
          "Claimed",
          {
            fillId: id(0x10),
            orderId: o,
            recipient,
            amountOut: 30n,
            dex: 0,
            toMargin: true,
            refused: true,
            secret: id(0x5),
          },
          3n,
        ),
        logOf(
          "OrderClosed",
          {
            orderId: zeroHash,
            owner: recipient,
            caller: recipient,
            amount: 30n,
            dex: 0,
            toMargin: false,
            refused: false,
            byOperator: false,
            nonce: 4n,
          },
          4n,
        ),
      ],
      [ESCROW],
    )
    const state = emptyState()
    const appends = applyEvents(state, events)
    const order = state.orders.get(o)!
    expect([order.available, order.locked, order.owner]).toEqual([70n, 0n, owner])
    expect(order.blockNumber).toBe(3n)
    expect(state.locks.get(id(0x10))).toMatchObject({
      state: "claimed",
      refused: true,
      secret: id(0x5),
      amountOut: 30n,
    })
    expect(state.balances.get(recipient)?.balance).toBe(0n)
    expect(state.balances.get(recipient)?.blockNumber).toBe(4n)
    expect(appends.fills.map((f) => [f.fillId, f.side])).toEqual([[id(0x10), "maker"]])
    expect(appends.closes.length).toBe(1)
    expect(appends.nonces).toMatchObject([{ owner: recipient, nonce: 4n, reason: "closed" }])
    expect(indexedLiabilities(state)).toBe(70n)
  })

  it("property: any history, cut into any pages, folds to the contract's own bookkeeping", () => {
    fc.assert(
      fc.property(
        fc.array(opArb, { minLength: 1, maxLength: 80 }),
        fc.integer({ min: 1, max: 17 }),
        fc.integer({ min: 1, max: 4 }),
        (ops, pageSize, perBlock) => {
          resetLogIndex()
          const { model, logs } = run(ops, (i) => BigInt(1 + Math.floor(i / perBlock)))
          const state = ingestInPages(decodeLogs(logs, [ESCROW]), pageSize)
          for (const [k, o] of model.orders) {
            expect([state.orders.get(k)?.available, state.orders.get(k)?.locked]).toEqual([o.available, o.locked])
          }
          for (const [k, b] of model.balances) expect(state.balances.get(k)?.balance ?? 0n).toBe(b)
          for (const [k, l] of model.locks) expect(state.locks.get(k)?.state).toBe(l.state)
          for (const [k, p] of model.payments) expect(state.payments.get(k)?.state).toBe(p.state)
          expect(indexedLiabilities(state)).toBe(model.liabilities)
          // The integrity comparison agrees when fed the model's answers.
          const snapshot = {
            block: 1n,
            totalLiabilities: model.liabilities,
            orders: new Map([...model.orders].map(([k, o]) => [k, o])),
            balances: new Map([...model.balances].map(([k, b]) => [k, b])),
            locks: new Map(
              [...model.locks].map(([k, l]) => [k, { locked: 1, claimed: 2, refunded: 3, cancelled: 4 }[l.state]]),
            ),
            payments: new Map([...model.payments].map(([k, p]) => [k, { held: 1, claimed: 2, refunded: 3 }[p.state]])),
            legacy: new Map<string, boolean>(),
          }
          expect(firstMismatch(state, snapshot)).toBeNull()
        },
      ),
      { numRuns: 200, seed: 42 },
    )
  })

  it("the integrity comparison names the first differing key, in a fixed order", () => {
    const state = emptyState()
    const stamp = { blockNumber: 1n, blockHash: zeroHash }
    state.orders.set(id(2), {
      orderId: id(2),
      owner: addr(1),
      operator: zeroAddress,
      quoteSigner: zeroAddress,
      available: 5n,
      locked: 0n,
      createdBlock: 1n,
      ...stamp,
    })
    state.balances.set(addr(9), { owner: addr(9), balance: 3n, ...stamp })
    const chain = {
      block: 7n,
      totalLiabilities: 8n,
      orders: new Map([[id(2), { owner: addr(1), available: 5n, locked: 0n }]]),
      balances: new Map([[addr(9), 4n]]),
      locks: new Map<string, number>(),
      payments: new Map<string, number>(),
      legacy: new Map<string, boolean>(),
    }
    expect(firstMismatch(state, chain)).toBe(`balance ${addr(9)}: indexed 3, chain 4 at block 7`)
    chain.balances.set(addr(9), 3n)
    expect(firstMismatch(state, chain)).toBeNull()
    chain.orders.set(id(2), { owner: addr(1), available: 6n, locked: 0n })
    chain.balances.set(addr(9), 0n)
    expect(firstMismatch(state, chain)).toBe(`order ${id(2)} available: indexed 5, chain 6 at block 7`)
    chain.orders.set(id(2), { owner: addr(1), available: 5n, locked: 0n })
    chain.balances.set(addr(9), 3n)
    expect(firstMismatch(state, { ...chain, totalLiabilities: 9n })).toBe(
      "total liabilities: indexed 8, chain 9 at block 7",
    )
  })
})
