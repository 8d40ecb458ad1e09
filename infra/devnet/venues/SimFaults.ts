// Fault injection for the venue simulators: the next N matching requests refuse, time out, or are applied and
// then answered with an error (the "unknown" outcome a relayer must reconcile).

/** Which requests a fault applies to: state-changing ones (default), reads, or both. */
export type FaultScope = "write" | "read" | "any"

export type Fault =
  /** Answer with the venue's clear refusal shape; nothing is applied. */
  | { readonly kind: "refuse"; readonly message: string }
  /** Keep the connection open without answering for `holdMs`, then drop it; `apply` decides whether it took effect. */
  | { readonly kind: "timeout"; readonly holdMs: number; readonly apply: boolean }
  /** Apply the request, then answer with an error whose outcome is unknown to the client (5xx). */
  | { readonly kind: "acceptThenError" }

interface Pending {
  readonly fault: Fault
  readonly scope: FaultScope
  remaining: number
}

export class FaultQueue {
  private readonly queue: Array<Pending> = []

  add(fault: Fault, count: number, scope: FaultScope = "write"): void {
    if (!Number.isInteger(count) || count < 1) throw new Error("fault count must be a positive integer")
    this.queue.push({ fault, scope, remaining: count })
  }

  /** The fault for a request of `kind`, consuming one use, or undefined. First added, first used. */
  take(kind: "write" | "read"): Fault | undefined {
    const i = this.queue.findIndex((p) => p.scope === "any" || p.scope === kind)
    const pending = this.queue[i]
    if (pending === undefined) return undefined
    pending.remaining -= 1
    if (pending.remaining === 0) this.queue.splice(i, 1)
    return pending.fault
  }

  clear(): void {
    this.queue.length = 0
  }

  get size(): number {
    return this.queue.reduce((n, p) => n + p.remaining, 0)
  }
}
