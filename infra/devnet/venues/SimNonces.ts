// Per-signer nonce bookkeeping, the two flavours the venues document.
//
// Hyperliquid (docs "nonces and API wallets"): the 100 *highest* nonces are kept per signer; a new nonce must be
// larger than the smallest of them (once the set is full) and never used before.
//
// Aster (futures v3 "V3 Nonce Mechanism"): the 100 *most recent* nonces are kept per user; a used nonce is a
// duplicate; if the list is full and the new nonce is smaller than its minimum it is expired; otherwise the oldest
// (first inserted) is dropped.

export type NonceVerdict =
  | { readonly ok: true }
  | { readonly ok: false; readonly reason: "duplicate" | "too_low"; readonly least: bigint }

export class HighestNonceSet {
  private readonly bySigner = new Map<string, Array<bigint>>()
  constructor(private readonly size: number) {}

  /** Checks and, when accepted, records `nonce` for `signer`. */
  use(signer: string, nonce: bigint): NonceVerdict {
    const set = this.bySigner.get(signer) ?? []
    const least = set.length > 0 ? (set[0] as bigint) : 0n
    if (set.includes(nonce)) return { ok: false, reason: "duplicate", least }
    if (set.length >= this.size && nonce <= least) return { ok: false, reason: "too_low", least }
    set.push(nonce)
    set.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))
    while (set.length > this.size) set.shift()
    this.bySigner.set(signer, set)
    return { ok: true }
  }
}

/** bigint minimum (Math.min does not take bigints). */
const smaller = (a: bigint, b: bigint): bigint => {
  if (b < a) return b
  return a
}

export class RecentNonceList {
  private readonly byUser = new Map<string, Array<bigint>>()
  constructor(private readonly size: number) {}

  use(user: string, nonce: bigint): NonceVerdict {
    const list = this.byUser.get(user) ?? []
    const least = list.reduce(smaller, list[0] ?? 0n)
    if (list.includes(nonce)) return { ok: false, reason: "duplicate", least }
    if (list.length >= this.size && nonce < least) return { ok: false, reason: "too_low", least }
    list.push(nonce)
    while (list.length > this.size) list.shift()
    this.byUser.set(user, list)
    return { ok: true }
  }
}
