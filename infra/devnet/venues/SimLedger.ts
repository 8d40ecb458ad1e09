// Margin balances of a simulated venue: base units of the devnet token per (user, book). Hyperliquid has two books
// per user, the default perp dex ("") and spot ("spot"); Aster has one ("").

export class SimLedger {
  private readonly balances = new Map<string, bigint>()
  private readonly users = new Set<string>()

  private key(user: string, book: string): string {
    return `${user.toLowerCase()}|${book}`
  }

  /** Whether the user ever held funds here (Hyperliquid refuses actions of unknown users). */
  known(user: string): boolean {
    return this.users.has(user.toLowerCase())
  }

  balance(user: string, book = ""): bigint {
    return this.balances.get(this.key(user, book)) ?? 0n
  }

  credit(user: string, amount: bigint, book = ""): void {
    if (amount < 0n) throw new Error("credit must be non-negative")
    this.users.add(user.toLowerCase())
    this.balances.set(this.key(user, book), this.balance(user, book) + amount)
  }

  /** Debits when the balance suffices; false (and no change) otherwise. */
  debit(user: string, amount: bigint, book = ""): boolean {
    const current = this.balance(user, book)
    if (amount < 0n || current < amount) return false
    this.balances.set(this.key(user, book), current - amount)
    return true
  }

  snapshot(): Record<string, string> {
    return Object.fromEntries([...this.balances].map(([k, v]) => [k, v.toString()]))
  }
}
