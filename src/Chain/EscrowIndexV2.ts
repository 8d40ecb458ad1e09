import { type Address, type Hex, keccak256, zeroHash } from "viem"
import type { Stamp } from "./EscrowIndex.ts"
import { jsonSafe } from "./EscrowLogs.ts"
import type { IndexedEventV2 } from "./EscrowLogsV2.ts"

/**
 * SettlementEscrowV2 events → indexed state, as a pure fold (the v2 twin of EscrowIndex.ts; decoding: EscrowLogsV2.ts).
 * Orders are keyed by `orderKey = keccak256(owner, orderId)` (the events carry it; the table's key is (owner,
 * order_id)), locks and payments by Fill digest. Amounts are bigints, addresses and hashes lowercase.
 */

// ------------------------------------------------------------------ rows

export interface OrderV2Row extends Stamp {
  readonly orderKey: Hex
  readonly owner: Address
  readonly orderId: Hex
  readonly operator: Address
  readonly quoteSigner: Address
  readonly available: bigint
  readonly locked: bigint
  /** Sticky: the owner closed the order (no lock, no top-up from then on). */
  readonly closeRequested: boolean
  readonly closeDex: number | null
  readonly closeToMargin: boolean | null
  readonly createdBlock: bigint
}

export interface BalanceV2Row extends Stamp {
  readonly owner: Address
  readonly balance: bigint
}

export type LockV2State = "locked" | "claimed" | "refunded" | "cancelled"
export interface LockV2Row extends Stamp {
  readonly fillDigest: Hex
  readonly state: LockV2State
  readonly orderKey: Hex
  readonly owner: Address
  readonly orderId: Hex
  readonly sequence: bigint
  readonly payer: Address
  readonly recipient: Address
  readonly amountIn: bigint
  readonly amountOut: bigint
  readonly dex: number
  readonly toMargin: boolean
  readonly hashlock: Hex
  readonly hashlockIndex: number
  /** makerExpiry: claim before it, refund from it. */
  readonly expiry: bigint
  readonly takerExpiry: bigint
  readonly payKey: Address
  readonly payBy: bigint
  readonly quoteSetDigest: Hex | null
  readonly quoteIndex: bigint | null
  /** Claimed: the venue refused the margin deposit. Refunded/cancelled: the same for a payout to the owner. */
  readonly refused: boolean | null
  /** Refunded/cancelled: the amount went to the owner (the order had a close request), not back to available. */
  readonly toOwner: boolean | null
  readonly secret: Hex | null
  /** The Fill struct, JSON-safe (bigints as decimal strings); null when the lock predates the index. */
  readonly fill: Record<string, unknown> | null
  readonly createdBlock: bigint
  readonly txHash: Hex
}

export type PaymentV2State = "held" | "claimed" | "refunded"
export interface PaymentV2Row extends Stamp {
  readonly fillDigest: Hex
  readonly state: PaymentV2State
  readonly payer: Address
  readonly payee: Address
  readonly amountIn: bigint
  readonly hashlock: Hex
  /** takerExpiry: claimPayment before it, refundPayment from it. */
  readonly expiry: bigint
  readonly payKey: Address
  readonly payBy: bigint
  readonly payTakeDigest: Hex | null
  readonly secret: Hex | null
  readonly fill: Record<string, unknown> | null
  readonly createdBlock: bigint
  readonly txHash: Hex
}

/** A secret made public by a claim (maker chain `Claimed`) or a reveal (taker chain `PaymentClaimed`). */
export interface SecretV2Row extends Stamp {
  readonly hashlock: Hex
  readonly secret: Hex
  readonly fillDigest: Hex
  readonly event: "Claimed" | "PaymentClaimed"
  readonly txHash: Hex
}

export interface IndexStateV2 {
  /** key: orderKey */
  readonly orders: Map<string, OrderV2Row>
  readonly balances: Map<string, BalanceV2Row>
  readonly locks: Map<string, LockV2Row>
  readonly payments: Map<string, PaymentV2Row>
}

export const emptyStateV2 = (): IndexStateV2 => ({
  orders: new Map(),
  balances: new Map(),
  locks: new Map(),
  payments: new Map(),
})

export interface TouchedKeysV2 {
  readonly orders: Set<string>
  readonly balances: Set<string>
  readonly locks: Set<string>
  readonly payments: Set<string>
}

const lc = <T extends string>(s: T): T => s.toLowerCase() as T
const ZERO = "0x0000000000000000000000000000000000000000" as Address

/** The rows a page reads or writes. Balances of owners known only from a lock row: `balanceOwnersOf`. */
export const touchedKeysV2 = (evs: ReadonlyArray<IndexedEventV2>): TouchedKeysV2 => {
  const k: TouchedKeysV2 = { orders: new Set(), balances: new Set(), locks: new Set(), payments: new Set() }
  for (const { decoded: e } of evs) {
    switch (e.eventName) {
      case "OrderFunded":
      case "CloseRequested":
        k.orders.add(lc(e.args.orderKey))
        k.balances.add(lc(e.args.owner))
        break
      case "OrderClosed":
        if (e.args.orderId !== zeroHash) k.orders.add(lc(e.args.orderKey))
        k.balances.add(lc(e.args.owner))
        break
      case "Locked":
        k.orders.add(lc(e.args.orderKey))
        k.locks.add(lc(e.args.fillDigest))
        k.balances.add(lc(e.args.fill.owner))
        break
      case "Claimed":
        k.orders.add(lc(e.args.orderKey))
        k.locks.add(lc(e.args.fillDigest))
        k.balances.add(lc(e.args.recipient))
        break
      case "Refunded":
      case "LockCancelled":
        k.orders.add(lc(e.args.orderKey))
        k.locks.add(lc(e.args.fillDigest))
        break
      case "Paid":
      case "PaymentClaimed":
      case "PaymentRefunded":
        k.payments.add(lc(e.args.fillDigest))
        break
      default:
        break
    }
  }
  return k
}

/** Owners of loaded locks and orders: a refund to the owner may credit their zero-id balance. */
export const balanceOwnersOf = (state: IndexStateV2): Set<string> =>
  new Set([...[...state.locks.values()].map((l) => l.owner), ...[...state.orders.values()].map((o) => o.owner)])

/** Applies `evs` in order to `state` (mutated) and returns the secrets made public. */
export const applyEventsV2 = (
  state: IndexStateV2,
  evs: ReadonlyArray<IndexedEventV2>,
): { readonly secrets: Array<SecretV2Row> } => {
  const secrets: Array<SecretV2Row> = []
  const order = (key: Hex, stamp: Stamp): OrderV2Row =>
    state.orders.get(lc(key)) ?? {
      orderKey: lc(key),
      owner: ZERO,
      orderId: zeroHash,
      operator: ZERO,
      quoteSigner: ZERO,
      available: 0n,
      locked: 0n,
      closeRequested: false,
      closeDex: null,
      closeToMargin: null,
      createdBlock: stamp.blockNumber,
      ...stamp,
    }
  const credit = (owner: Address, amount: bigint, stamp: Stamp) => {
    const key = lc(owner)
    state.balances.set(key, { owner: key, balance: (state.balances.get(key)?.balance ?? 0n) + amount, ...stamp })
  }
  for (const ev of evs) {
    const stamp: Stamp = { blockNumber: ev.blockNumber, blockHash: lc(ev.blockHash) }
    const e = ev.decoded
    switch (e.eventName) {
      case "OrderFunded": {
        const a = e.args
        const o = order(a.orderKey, stamp)
        state.orders.set(lc(a.orderKey), {
          ...o,
          owner: lc(a.owner),
          orderId: lc(a.orderId),
          operator: lc(a.operator),
          quoteSigner: lc(a.quoteSigner),
          available: a.available,
          ...stamp,
        })
        break
      }
      case "CloseRequested": {
        const a = e.args
        const o = order(a.orderKey, stamp)
        state.orders.set(lc(a.orderKey), {
          ...o,
          owner: lc(a.owner),
          orderId: lc(a.orderId),
          closeRequested: true,
          closeDex: a.dex,
          closeToMargin: a.toMargin,
          ...stamp,
        })
        break
      }
      case "OrderClosed": {
        const a = e.args
        if (a.orderId === zeroHash) {
          credit(a.owner, -a.amount, stamp)
        } else {
          const o = order(a.orderKey, stamp)
          state.orders.set(lc(a.orderKey), {
            ...o,
            owner: lc(a.owner),
            orderId: lc(a.orderId),
            available: o.available - a.amount,
            ...stamp,
          })
        }
        if (a.refused) credit(a.owner, a.amount, stamp)
        break
      }
      case "Locked": {
        const a = e.args
        const f = a.fill
        const o = order(a.orderKey, stamp)
        state.orders.set(lc(a.orderKey), {
          ...o,
          owner: lc(f.owner),
          orderId: lc(f.orderId),
          available: o.available - f.amountOut,
          locked: o.locked + f.amountOut,
          ...stamp,
        })
        state.locks.set(lc(a.fillDigest), {
          fillDigest: lc(a.fillDigest),
          state: "locked",
          orderKey: lc(a.orderKey),
          owner: lc(f.owner),
          orderId: lc(f.orderId),
          sequence: f.sequence,
          payer: lc(f.payer),
          recipient: lc(f.recipient),
          amountIn: f.amountIn,
          amountOut: f.amountOut,
          dex: f.dex,
          toMargin: f.toMargin,
          hashlock: lc(f.hashlock),
          hashlockIndex: f.hashlockIndex,
          expiry: f.makerExpiry,
          takerExpiry: f.takerExpiry,
          payKey: lc(f.payKey),
          payBy: f.payBy,
          quoteSetDigest: lc(a.quoteSetDigest),
          quoteIndex: a.quoteIndex,
          refused: null,
          toOwner: null,
          secret: null,
          fill: jsonSafe(f) as Record<string, unknown>,
          createdBlock: ev.blockNumber,
          txHash: lc(ev.txHash),
          ...stamp,
        })
        break
      }
      case "Claimed":
      case "Refunded":
      case "LockCancelled": {
        const a = e.args
        const o = order(a.orderKey, stamp)
        const prev = state.locks.get(lc(a.fillDigest))
        const claimed = e.eventName === "Claimed"
        const toOwner = claimed ? null : e.args.toOwner
        state.orders.set(lc(a.orderKey), {
          ...o,
          available: o.available + (claimed || toOwner ? 0n : a.amountOut),
          locked: o.locked - a.amountOut,
          ...stamp,
        })
        const owner = prev?.owner ?? o.owner
        state.locks.set(lc(a.fillDigest), {
          fillDigest: lc(a.fillDigest),
          orderKey: lc(a.orderKey),
          owner,
          orderId: prev?.orderId ?? o.orderId,
          sequence: prev?.sequence ?? 0n,
          payer: prev?.payer ?? ZERO,
          recipient: prev?.recipient ?? (claimed ? lc(e.args.recipient) : ZERO),
          amountIn: prev?.amountIn ?? 0n,
          dex: prev?.dex ?? (claimed ? e.args.dex : 0),
          toMargin: prev?.toMargin ?? (claimed ? e.args.toMargin : false),
          hashlock: prev?.hashlock ?? zeroHash,
          hashlockIndex: prev?.hashlockIndex ?? 0,
          expiry: prev?.expiry ?? 0n,
          takerExpiry: prev?.takerExpiry ?? 0n,
          payKey: prev?.payKey ?? ZERO,
          payBy: prev?.payBy ?? 0n,
          quoteSetDigest: prev?.quoteSetDigest ?? null,
          quoteIndex: prev?.quoteIndex ?? null,
          fill: prev?.fill ?? null,
          createdBlock: prev?.createdBlock ?? ev.blockNumber,
          txHash: prev?.txHash ?? lc(ev.txHash),
          amountOut: a.amountOut,
          state: claimed ? "claimed" : e.eventName === "Refunded" ? "refunded" : "cancelled",
          refused: e.args.refused,
          toOwner,
          secret: claimed ? lc(e.args.secret) : null,
          ...stamp,
        })
        if (claimed) {
          if (e.args.refused) credit(e.args.recipient, a.amountOut, stamp)
          secrets.push({
            hashlock: lc(keccak256(e.args.secret)),
            secret: lc(e.args.secret),
            fillDigest: lc(a.fillDigest),
            event: "Claimed",
            txHash: lc(ev.txHash),
            ...stamp,
          })
        } else if (e.args.toOwner && e.args.refused) {
          credit(owner, a.amountOut, stamp)
        }
        break
      }
      case "Paid": {
        const a = e.args
        const f = a.fill
        state.payments.set(lc(a.fillDigest), {
          fillDigest: lc(a.fillDigest),
          state: "held",
          payer: lc(a.payer),
          payee: lc(a.payee),
          amountIn: f.amountIn,
          hashlock: lc(f.hashlock),
          expiry: f.takerExpiry,
          payKey: lc(f.payKey),
          payBy: f.payBy,
          payTakeDigest: lc(a.payTakeDigest),
          secret: null,
          fill: jsonSafe(f) as Record<string, unknown>,
          createdBlock: ev.blockNumber,
          txHash: lc(ev.txHash),
          ...stamp,
        })
        break
      }
      case "PaymentClaimed":
      case "PaymentRefunded": {
        const a = e.args
        const prev = state.payments.get(lc(a.fillDigest))
        const claimed = e.eventName === "PaymentClaimed"
        state.payments.set(lc(a.fillDigest), {
          fillDigest: lc(a.fillDigest),
          payer: prev?.payer ?? (claimed ? ZERO : lc(e.args.payer)),
          payee: prev?.payee ?? (claimed ? lc(e.args.payee) : ZERO),
          hashlock: prev?.hashlock ?? zeroHash,
          expiry: prev?.expiry ?? 0n,
          payKey: prev?.payKey ?? ZERO,
          payBy: prev?.payBy ?? 0n,
          payTakeDigest: prev?.payTakeDigest ?? null,
          fill: prev?.fill ?? null,
          createdBlock: prev?.createdBlock ?? ev.blockNumber,
          txHash: prev?.txHash ?? lc(ev.txHash),
          amountIn: a.amountIn,
          state: claimed ? "claimed" : "refunded",
          secret: claimed ? lc(e.args.secret) : null,
          ...stamp,
        })
        if (claimed) {
          secrets.push({
            hashlock: lc(keccak256(e.args.secret)),
            secret: lc(e.args.secret),
            fillDigest: lc(a.fillDigest),
            event: "PaymentClaimed",
            txHash: lc(ev.txHash),
            ...stamp,
          })
        }
        break
      }
      default:
        break
    }
  }
  return { secrets }
}
