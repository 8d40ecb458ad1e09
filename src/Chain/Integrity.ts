import { type IndexState, indexedLiabilities } from "./EscrowIndex.ts"

/**
 * The integrity check's comparison: what the index says vs what the escrow answers at the same
 * block (the watcher's cursor). Pure; the watcher does the reads. Keys are compared in a fixed
 * order (orders, zero-id balances, locks, payments, legacy offers, then the total), and the first
 * difference is reported, since that is the key an operator investigates first.
 */

export interface ChainOrder {
  readonly owner: string
  readonly available: bigint
  readonly locked: bigint
}

/** On-chain reads at the cursor block, keyed like IndexState (lowercase). */
export interface ChainSnapshot {
  readonly block: bigint
  readonly totalLiabilities: bigint
  readonly orders: ReadonlyMap<string, ChainOrder>
  readonly balances: ReadonlyMap<string, bigint>
  /** LockState enum: 0 none, 1 locked, 2 claimed, 3 refunded, 4 cancelled. */
  readonly locks: ReadonlyMap<string, number>
  /** PaymentState enum: 0 none, 1 held, 2 claimed, 3 refunded. */
  readonly payments: ReadonlyMap<string, number>
  /** `${contract}:${id}` → reclaimed */
  readonly legacy: ReadonlyMap<string, boolean>
}

const LOCK_STATES = { locked: 1, claimed: 2, refunded: 3, cancelled: 4 } as const
const PAYMENT_STATES = { held: 1, claimed: 2, refunded: 3 } as const

const sorted = <V>(m: ReadonlyMap<string, V>): Array<[string, V]> =>
  [...m.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))

/** Null when everything matches; otherwise `key field: indexed X, chain Y at block B`. */
export const firstMismatch = (indexed: IndexState, chain: ChainSnapshot): string | null => {
  const at = `at block ${chain.block}`
  for (const [id, o] of sorted(indexed.orders)) {
    const c = chain.orders.get(id)
    if (c === undefined) return `order ${id}: not read from chain ${at}`
    if (c.owner.toLowerCase() !== o.owner) return `order ${id} owner: indexed ${o.owner}, chain ${c.owner} ${at}`
    if (c.available !== o.available) {
      return `order ${id} available: indexed ${o.available}, chain ${c.available} ${at}`
    }
    if (c.locked !== o.locked) return `order ${id} locked: indexed ${o.locked}, chain ${c.locked} ${at}`
  }
  for (const [owner, b] of sorted(indexed.balances)) {
    const c = chain.balances.get(owner)
    if (c !== b.balance) return `balance ${owner}: indexed ${b.balance}, chain ${c ?? "unread"} ${at}`
  }
  for (const [id, l] of sorted(indexed.locks)) {
    const c = chain.locks.get(id)
    if (c !== LOCK_STATES[l.state]) return `lock ${id} state: indexed ${l.state}, chain ${c ?? "unread"} ${at}`
  }
  for (const [id, p] of sorted(indexed.payments)) {
    const c = chain.payments.get(id)
    if (c !== PAYMENT_STATES[p.state]) {
      return `payment ${id} state: indexed ${p.state}, chain ${c ?? "unread"} ${at}`
    }
  }
  for (const [key, o] of sorted(indexed.legacy)) {
    const c = chain.legacy.get(key)
    if (c !== o.reclaimed) return `legacy offer ${key} reclaimed: indexed ${o.reclaimed}, chain ${c ?? "unread"} ${at}`
  }
  const total = indexedLiabilities(indexed)
  if (total !== chain.totalLiabilities) {
    return `total liabilities: indexed ${total}, chain ${chain.totalLiabilities} ${at}`
  }
  return null
}
