import { Effect } from "effect"
import { STREAM_LIMITS } from "./StreamProtocol.ts"

/** What the stream has done in this process: for reporting and for tests. */
export interface StreamStats {
  /** Sockets holding a connection slot now. */
  readonly active: number
  /** Of those, the ones without a token: subscribed anonymously, or not subscribed yet. */
  readonly anonymous: number
  /** Distinct clients holding a slot now. */
  readonly clients: number
  /** Connections refused with too_many_connections, by why. */
  readonly refused: number
  readonly refusedBy: {
    /** Every slot was taken (at the upgrade). */
    readonly full: number
    /** The client held its share (at the upgrade). */
    readonly client: number
    /** A subscription without a token while the anonymous share was taken (at the subscription). */
    readonly anonymous: number
  }
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

/** The per-client shares of the 256 slots (deployment `limits`), passed with each admission. */
export interface StreamShares {
  /** Connections one client (src/Domain/ClientAddress.ts) may hold, whatever their kind. */
  readonly perClient: number
  /** Connections without a token (anonymous, or not subscribed yet) the process may hold. */
  readonly anonymous: number
}

/**
 * One connection's slot. It is taken before the upgrade, when the subscription (and its token) is not
 * known yet: `anonymous` while there is room among the connections without a token, else `reserve`
 * (one of the slots kept for subscriptions with a token, held until the subscription arrives, at most
 * 5 s). The subscription settles it: a token makes it `signed`; without one, a `reserve` slot must find
 * room among the anonymous ones or the connection is refused.
 */
export interface Slot {
  readonly client: string
  readonly shares: StreamShares
  kind: "anonymous" | "reserve" | "signed"
  released: boolean
}

export type Admission =
  | { readonly _tag: "Admitted"; readonly slot: Slot }
  | { readonly _tag: "Refused"; readonly reason: "full" | "client"; readonly message: string }

/**
 * The connection limit (spec Limits: 256 stream connections) and its per-client shares. "Globally" is
 * per process: the slots live in this module, shared by every server the process runs. Slots are taken
 * before the upgrade and given back when the session ends, however it ends. Within the 256: one client
 * holds at most `perClient`, and connections without a token at most `anonymous`, so a flood of
 * token-less connections, from one client or many, never takes the slots of subscriptions with a token.
 */
const make = (limit: number) => {
  let active = 0
  let anonymous = 0
  let refused = 0
  const refusedBy = { full: 0, client: 0, anonymous: 0 }
  const byClient = new Map<string, number>()
  let maxQueuedBytes = 0
  const closed: Record<string, number> = {}
  const pages = { window: 0, journal: 0, pushed: 0 }
  const refuse = (reason: "full" | "client", message: string): Admission => {
    refused++
    refusedBy[reason]++
    return { _tag: "Refused", reason, message }
  }
  return {
    limit,
    /** Takes a slot for a new connection of `client`, before the upgrade. */
    tryAcquire: (client: string, shares: StreamShares) =>
      Effect.sync((): Admission => {
        if (active >= limit) return refuse("full", `${limit} stream connections are open; retry later`)
        const held = byClient.get(client) ?? 0
        if (held >= shares.perClient) {
          return refuse("client", `this client already holds ${shares.perClient} stream connections; retry later`)
        }
        active++
        byClient.set(client, held + 1)
        const kind = anonymous < shares.anonymous ? "anonymous" : "reserve"
        if (kind === "anonymous") anonymous++
        return { _tag: "Admitted", slot: { client, shares, kind, released: false } }
      }),
    /**
     * The subscription arrived: with a token (`signed`) the slot is kept whatever its kind; without
     * one, a reserve slot needs room among the anonymous connections. False: refuse the connection.
     */
    settle: (slot: Slot, signed: boolean) =>
      Effect.sync(() => {
        if (slot.released) return false
        if (signed) {
          if (slot.kind === "anonymous") anonymous--
          slot.kind = "signed"
          return true
        }
        if (slot.kind !== "reserve") return true
        if (anonymous >= slot.shares.anonymous) {
          refused++
          refusedBy.anonymous++
          return false
        }
        anonymous++
        slot.kind = "anonymous"
        return true
      }),
    release: (slot: Slot) =>
      Effect.sync(() => {
        if (slot.released) return
        slot.released = true
        active = Math.max(0, active - 1)
        if (slot.kind === "anonymous") anonymous = Math.max(0, anonymous - 1)
        const held = (byClient.get(slot.client) ?? 1) - 1
        if (held > 0) byClient.set(slot.client, held)
        else byClient.delete(slot.client)
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
      (): StreamStats => ({
        active,
        anonymous,
        clients: byClient.size,
        refused,
        refusedBy: { ...refusedBy },
        closed: { ...closed },
        maxQueuedBytes,
        pages: { ...pages },
      }),
    ),
  }
}

export const StreamConnections = make(STREAM_LIMITS.maxConnections)
