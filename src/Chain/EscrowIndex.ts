import { type Address, type Hex, zeroHash } from "viem"
import { type IndexedEvent, jsonSafe } from "./EscrowLogs.ts"

/**
 * Escrow events → indexed state, as a pure fold. The watcher loads the rows an ingest page touches,
 * applies the page's decoded events (EscrowLogs.ts) in chain order with `applyEvents`, and writes back what
 * changed; the same function is what the unit tests exercise. Amounts are bigints; a row that goes negative
 * means history is missing (an event before `deployment_block`), which the integrity check reports.
 */

// ------------------------------------------------------------------ state rows

export interface Stamp {
  readonly blockNumber: bigint
  readonly blockHash: Hex
}

export interface OrderRow extends Stamp {
  readonly orderId: Hex
  readonly owner: Address
  readonly operator: Address
  readonly quoteSigner: Address
  readonly available: bigint
  readonly locked: bigint
  readonly createdBlock: bigint
}

export interface BalanceRow extends Stamp {
  readonly owner: Address
  readonly balance: bigint
}

export type LockState = "locked" | "claimed" | "refunded" | "cancelled"
export interface LockRow extends Stamp {
  readonly fillId: Hex
  readonly orderId: Hex
  readonly payer: Address
  readonly recipient: Address
  readonly amountOut: bigint
  readonly hashlock: Hex
  readonly expiry: bigint
  readonly state: LockState
  readonly refused: boolean | null
  readonly secret: Hex | null
  readonly createdBlock: bigint
}

export type PaymentState = "held" | "claimed" | "refunded"
export interface PaymentRow extends Stamp {
  readonly fillId: Hex
  readonly payer: Address
  readonly payee: Address
  readonly amountIn: bigint
  readonly hashlock: Hex
  readonly expiry: bigint
  readonly state: PaymentState
  readonly secret: Hex | null
  readonly createdBlock: bigint
}

export interface LegacyOfferRow extends Stamp {
  readonly contract: Address
  readonly offerId: bigint
  readonly owner: Address
  readonly amount: bigint
  readonly refundAt: bigint
  readonly reclaimed: boolean
  readonly createdBlock: bigint
}

export interface FillRow extends Stamp {
  readonly fillId: Hex
  readonly side: "maker" | "taker"
  /** The signed Fill struct, JSON-safe (bigints as decimal strings). */
  readonly fill: Record<string, unknown>
  readonly fillDigest: Hex
  readonly quoteSetDigest: Hex | null
  readonly quoteIndex: bigint | null
  readonly txHash: Hex
}

export interface CloseRow extends Stamp {
  readonly logIndex: number
  readonly orderId: Hex
  readonly owner: Address
  readonly caller: Address
  readonly amount: bigint
  readonly dex: number
  readonly toMargin: boolean
  readonly refused: boolean
  readonly byOperator: boolean
  readonly nonce: bigint
  readonly txHash: Hex
}

export interface UsedNonceRow extends Stamp {
  readonly owner: Address
  readonly nonce: bigint
  readonly reason: "closed" | "invalidated"
}

/** The mutable part of the index, keyed as in the tables (addresses and ids lowercase). */
export interface IndexState {
  readonly orders: Map<string, OrderRow>
  readonly balances: Map<string, BalanceRow>
  readonly locks: Map<string, LockRow>
  readonly payments: Map<string, PaymentRow>
  /** key `${contract}:${offerId}` */
  readonly legacy: Map<string, LegacyOfferRow>
}

/** What a page adds to the append-only tables. */
export interface IndexAppends {
  readonly fills: Array<FillRow>
  readonly closes: Array<CloseRow>
  readonly nonces: Array<UsedNonceRow>
}

export const emptyState = (): IndexState => ({
  orders: new Map(),
  balances: new Map(),
  locks: new Map(),
  payments: new Map(),
  legacy: new Map(),
})

/** The keys a batch of events reads or writes, so that exactly those rows are loaded first. */
export interface TouchedKeys {
  readonly orders: Set<string>
  readonly balances: Set<string>
  readonly locks: Set<string>
  readonly payments: Set<string>
  readonly legacy: Set<string>
}

const lc = <T extends string>(s: T): T => s.toLowerCase() as T
const ZERO_ADDRESS = "0x0000000000000000000000000000000000000000" as Address

export const touchedKeys = (events: ReadonlyArray<IndexedEvent>): TouchedKeys => {
  const keys: TouchedKeys = {
    orders: new Set(),
    balances: new Set(),
    locks: new Set(),
    payments: new Set(),
    legacy: new Set(),
  }
  for (const { decoded: e, contract } of events) {
    switch (e.eventName) {
      case "OrderFunded":
        keys.orders.add(lc(e.args.orderId))
        break
      case "OrderClosed":
        if (e.args.orderId === zeroHash) keys.balances.add(lc(e.args.owner))
        else keys.orders.add(lc(e.args.orderId))
        if (e.args.refused) keys.balances.add(lc(e.args.owner))
        break
      case "Locked":
        keys.orders.add(lc(e.args.orderId))
        keys.locks.add(lc(e.args.fillId))
        break
      case "Claimed":
        keys.orders.add(lc(e.args.orderId))
        keys.locks.add(lc(e.args.fillId))
        if (e.args.refused) keys.balances.add(lc(e.args.recipient))
        break
      case "Refunded":
      case "LockCancelled":
        keys.orders.add(lc(e.args.orderId))
        keys.locks.add(lc(e.args.fillId))
        break
      case "Paid":
      case "PaymentClaimed":
      case "PaymentRefunded":
        keys.payments.add(lc(e.args.fillId))
        break
      case "OfferCreated":
      case "OfferReclaimed":
        keys.legacy.add(`${contract}:${e.args.id}`)
        break
      default:
        break
    }
  }
  return keys
}

/**
 * Applies events in order to `state` (mutated in place) and returns the append-only rows. Each row
 * written takes the stamp (block number and hash) of the event that last changed it.
 */
export const applyEvents = (state: IndexState, events: ReadonlyArray<IndexedEvent>): IndexAppends => {
  const appends: IndexAppends = { fills: [], closes: [], nonces: [] }
  const order = (id: Hex, stamp: Stamp, owner: Address = ZERO_ADDRESS): OrderRow =>
    state.orders.get(lc(id)) ?? {
      orderId: lc(id),
      owner: lc(owner),
      operator: ZERO_ADDRESS,
      quoteSigner: ZERO_ADDRESS,
      available: 0n,
      locked: 0n,
      createdBlock: stamp.blockNumber,
      ...stamp,
    }
  const credit = (owner: Address, amount: bigint, stamp: Stamp) => {
    const key = lc(owner)
    const current = state.balances.get(key)?.balance ?? 0n
    state.balances.set(key, { owner: key, balance: current + amount, ...stamp })
  }
  for (const ev of events) {
    const stamp: Stamp = { blockNumber: ev.blockNumber, blockHash: lc(ev.blockHash) }
    const e = ev.decoded
    switch (e.eventName) {
      case "OrderFunded": {
        const a = e.args
        const prev = state.orders.get(lc(a.orderId))
        state.orders.set(lc(a.orderId), {
          orderId: lc(a.orderId),
          owner: lc(a.owner),
          operator: lc(a.operator),
          quoteSigner: lc(a.quoteSigner),
          // The event states the new total: no arithmetic to drift.
          available: a.available,
          locked: prev?.locked ?? 0n,
          createdBlock: prev?.createdBlock ?? ev.blockNumber,
          ...stamp,
        })
        break
      }
      case "OrderClosed": {
        const a = e.args
        if (a.orderId === zeroHash) {
          const key = lc(a.owner)
          const current = state.balances.get(key)?.balance ?? 0n
          state.balances.set(key, { owner: key, balance: current - a.amount, ...stamp })
        } else {
          const o = order(a.orderId, stamp, a.owner)
          state.orders.set(lc(a.orderId), { ...o, available: o.available - a.amount, ...stamp })
        }
        if (a.refused) credit(a.owner, a.amount, stamp)
        appends.closes.push({
          ...stamp,
          logIndex: ev.logIndex,
          orderId: lc(a.orderId),
          owner: lc(a.owner),
          caller: lc(a.caller),
          amount: a.amount,
          dex: a.dex,
          toMargin: a.toMargin,
          refused: a.refused,
          byOperator: a.byOperator,
          nonce: a.nonce,
          txHash: lc(ev.txHash),
        })
        if (!a.byOperator) appends.nonces.push({ ...stamp, owner: lc(a.owner), nonce: a.nonce, reason: "closed" })
        break
      }
      case "NonceInvalidated":
        appends.nonces.push({ ...stamp, owner: lc(e.args.owner), nonce: e.args.nonce, reason: "invalidated" })
        break
      case "Locked": {
        const a = e.args
        const f = a.fill
        const o = order(a.orderId, stamp)
        state.orders.set(lc(a.orderId), {
          ...o,
          available: o.available - f.amountOut,
          locked: o.locked + f.amountOut,
          ...stamp,
        })
        state.locks.set(lc(a.fillId), {
          fillId: lc(a.fillId),
          orderId: lc(a.orderId),
          payer: lc(a.payer),
          recipient: lc(f.recipient),
          amountOut: f.amountOut,
          hashlock: lc(f.hashlock),
          expiry: f.makerExpiry,
          state: "locked",
          refused: null,
          secret: null,
          createdBlock: ev.blockNumber,
          ...stamp,
        })
        appends.fills.push({
          ...stamp,
          fillId: lc(a.fillId),
          side: "maker",
          fill: jsonSafe(f) as Record<string, unknown>,
          fillDigest: lc(a.fillDigest),
          quoteSetDigest: lc(a.quoteSetDigest),
          quoteIndex: a.quoteIndex,
          txHash: lc(ev.txHash),
        })
        break
      }
      case "Claimed":
      case "Refunded":
      case "LockCancelled": {
        const a = e.args
        const o = order(a.orderId, stamp)
        const back = e.eventName === "Claimed" ? 0n : a.amountOut
        state.orders.set(lc(a.orderId), {
          ...o,
          available: o.available + back,
          locked: o.locked - a.amountOut,
          ...stamp,
        })
        const prev = state.locks.get(lc(a.fillId))
        const next: LockState =
          e.eventName === "Claimed" ? "claimed" : e.eventName === "Refunded" ? "refunded" : "cancelled"
        state.locks.set(lc(a.fillId), {
          fillId: lc(a.fillId),
          orderId: lc(a.orderId),
          payer: prev?.payer ?? ZERO_ADDRESS,
          recipient: prev?.recipient ?? (e.eventName === "Claimed" ? lc(e.args.recipient) : ZERO_ADDRESS),
          amountOut: a.amountOut,
          hashlock: prev?.hashlock ?? zeroHash,
          expiry: prev?.expiry ?? 0n,
          state: next,
          refused: e.eventName === "Claimed" ? e.args.refused : null,
          secret: e.eventName === "Claimed" ? lc(e.args.secret) : null,
          createdBlock: prev?.createdBlock ?? ev.blockNumber,
          ...stamp,
        })
        if (e.eventName === "Claimed" && e.args.refused) credit(e.args.recipient, a.amountOut, stamp)
        break
      }
      case "Paid": {
        const a = e.args
        const f = a.fill
        state.payments.set(lc(a.fillId), {
          fillId: lc(a.fillId),
          payer: lc(a.payer),
          payee: lc(a.payee),
          amountIn: f.amountIn,
          hashlock: lc(f.hashlock),
          expiry: f.takerExpiry,
          state: "held",
          secret: null,
          createdBlock: ev.blockNumber,
          ...stamp,
        })
        appends.fills.push({
          ...stamp,
          fillId: lc(a.fillId),
          side: "taker",
          fill: jsonSafe(f) as Record<string, unknown>,
          fillDigest: lc(a.fillDigest),
          quoteSetDigest: null,
          quoteIndex: null,
          txHash: lc(ev.txHash),
        })
        break
      }
      case "PaymentClaimed":
      case "PaymentRefunded": {
        const a = e.args
        const prev = state.payments.get(lc(a.fillId))
        state.payments.set(lc(a.fillId), {
          fillId: lc(a.fillId),
          payer: prev?.payer ?? (e.eventName === "PaymentRefunded" ? lc(e.args.payer) : ZERO_ADDRESS),
          payee: prev?.payee ?? (e.eventName === "PaymentClaimed" ? lc(e.args.payee) : ZERO_ADDRESS),
          amountIn: a.amountIn,
          hashlock: prev?.hashlock ?? zeroHash,
          expiry: prev?.expiry ?? 0n,
          state: e.eventName === "PaymentClaimed" ? "claimed" : "refunded",
          secret: e.eventName === "PaymentClaimed" ? lc(e.args.secret) : null,
          createdBlock: prev?.createdBlock ?? ev.blockNumber,
          ...stamp,
        })
        break
      }
      case "OfferCreated": {
        const a = e.args
        state.legacy.set(`${ev.contract}:${a.id}`, {
          contract: ev.contract,
          offerId: a.id,
          owner: lc(a.owner),
          amount: a.amount,
          refundAt: a.refundAt,
          reclaimed: false,
          createdBlock: ev.blockNumber,
          ...stamp,
        })
        break
      }
      case "OfferReclaimed": {
        const a = e.args
        const key = `${ev.contract}:${a.id}`
        const prev = state.legacy.get(key)
        state.legacy.set(key, {
          contract: ev.contract,
          offerId: a.id,
          owner: lc(a.owner),
          amount: prev?.amount ?? a.amount,
          refundAt: prev?.refundAt ?? 0n,
          reclaimed: true,
          createdBlock: prev?.createdBlock ?? ev.blockNumber,
          ...stamp,
        })
        break
      }
      default:
        break
    }
  }
  return appends
}

/** Σ what the index says the escrow owes: available + locked + zero-id balances + held payments. */
export const indexedLiabilities = (state: IndexState): bigint => {
  let total = 0n
  for (const o of state.orders.values()) total += o.available + o.locked
  for (const b of state.balances.values()) total += b.balance
  for (const p of state.payments.values()) if (p.state === "held") total += p.amountIn
  return total
}
