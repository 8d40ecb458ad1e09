import { Effect } from "effect"
import { STREAM_LIMITS } from "./StreamProtocol.ts"

/** What the stream has done in this process: for reporting and for tests. */
export interface StreamStats {
  /** Sockets holding a connection slot now. */
  readonly active: number
  /** Upgrades refused because every slot was taken. */
  readonly refused: number
  /** Closed sessions by reason: a control code, or `peer` when the client went away first. */
  readonly closed: Readonly<Record<string, number>>
  /** Largest backlog (bytes queued in a socket, not yet written) seen right after a page write. */
  readonly maxQueuedBytes: number
  /**
   * Pages pulled from the shared window of recent rows, pulled from the journal by a lagging
   * subscriber, and batches pushed by the tail to following subscribers.
   */
  readonly pages: { readonly window: number; readonly journal: number; readonly pushed: number }
}

/**
 * The global connection limit (spec Limits: 256 stream connections). "Globally" is per process: the
 * slots live in this module, shared by every server the process runs. Slots are taken before the
 * upgrade and given back when the session ends, however it ends.
 */
const make = (limit: number) => {
  let active = 0
  let refused = 0
  let maxQueuedBytes = 0
  const closed: Record<string, number> = {}
  const pages = { window: 0, journal: 0, pushed: 0 }
  return {
    limit,
    tryAcquire: Effect.sync(() => {
      if (active >= limit) {
        refused++
        return false
      }
      active++
      return true
    }),
    release: Effect.sync(() => {
      active = Math.max(0, active - 1)
    }),
    recordClose: (reason: string) =>
      Effect.sync(() => {
        closed[reason] = (closed[reason] ?? 0) + 1
      }),
    recordQueued: (bytes: number) => {
      if (bytes > maxQueuedBytes) maxQueuedBytes = bytes
    },
    recordPage: (source: "window" | "journal" | "pushed") => {
      pages[source]++
    },
    stats: Effect.sync(
      (): StreamStats => ({ active, refused, closed: { ...closed }, maxQueuedBytes, pages: { ...pages } }),
    ),
  }
}

export const StreamConnections = make(STREAM_LIMITS.maxConnections)
