import { randomUUID } from "node:crypto"
import { Duration, Effect } from "effect"
import { acquireSlot, refreshSlots, releaseSlot, settleReserveAnonymously, signSlot } from "./Slots.ts"
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
    /** The slots could not be counted (the database failed at the upgrade). */
    readonly unavailable: number
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
  /** Connections one client (src/Domain/ClientAddress.ts) may hold, whatever their kind, on every runner together. */
  readonly perClient: number
  /** Connections without a token (anonymous, or not subscribed yet), on every runner together. */
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
  /** Its row in stream_slots. */
  readonly id: string
  readonly client: string
  readonly shares: StreamShares
  kind: "anonymous" | "reserve" | "signed"
  released: boolean
}

export type Admission =
  | { readonly _tag: "Admitted"; readonly slot: Slot }
  | { readonly _tag: "Refused"; readonly reason: "full" | "client" | "unavailable"; readonly message: string }

/** How often this process refreshes its slots' rows (well within SLOT_LIFETIME_SECONDS). */
const SLOT_HEARTBEAT = Duration.seconds(2)

/**
 * The connection limit (spec Limits: 256 stream connections) and its per-client shares, global across the
 * runners on one database: each slot is a row of stream_slots (src/Stream/Slots.ts says why rows),
 * taken before the upgrade and deleted when the session ends, however it ends; a process that dies stops
 * refreshing its rows and they stop counting within SLOT_LIFETIME_SECONDS. Within the 256: one client holds
 * at most `perClient`, and connections without a token at most `anonymous`, so a flood of token-less
 * connections, from one client or many, never takes the slots of subscriptions with a token. The counters
 * here are this process's own figures (stats, metrics); admission reads only the rows.
 */
const make = (limit: number) => {
  /** This process, as the holder of its rows. */
  const holder = randomUUID()
  const held = new Map<string, Slot>()
  let active = 0
  let anonymous = 0
  let refused = 0
  const refusedBy = { full: 0, client: 0, anonymous: 0, unavailable: 0 }
  const byClient = new Map<string, number>()
  let maxQueuedBytes = 0
  const closed: Record<string, number> = {}
  const pages = { window: 0, journal: 0, pushed: 0 }
  const refuse = (reason: "full" | "client" | "unavailable", message: string): Admission => {
    refused++
    refusedBy[reason]++
    return { _tag: "Refused", reason, message }
  }
  const dropLocally = (slot: Slot) => {
    active = Math.max(0, active - 1)
    if (slot.kind === "anonymous") anonymous = Math.max(0, anonymous - 1)
    const count = (byClient.get(slot.client) ?? 1) - 1
    if (count > 0) byClient.set(slot.client, count)
    else byClient.delete(slot.client)
  }
  return {
    limit,
    /** Takes a slot for a new connection of `client`, before the upgrade. */
    tryAcquire: (client: string, shares: StreamShares) =>
      Effect.gen(function* () {
        const id = randomUUID()
        const taken = yield* acquireSlot({
          id,
          holder,
          client,
          limits: { total: limit, perClient: shares.perClient, anonymous: shares.anonymous },
        }).pipe(
          Effect.tapErrorCause((cause) => Effect.logWarning("stream admission failed", cause)),
          Effect.option,
        )
        if (taken._tag === "None") return refuse("unavailable", "stream admission is unavailable; retry later")
        if (taken.value._tag === "Refused") {
          return taken.value.reason === "full"
            ? refuse("full", `${limit} stream connections are open; retry later`)
            : refuse("client", `this client already holds ${shares.perClient} stream connections; retry later`)
        }
        const slot: Slot = { id, client, shares, kind: taken.value.kind, released: false }
        held.set(id, slot)
        active++
        byClient.set(client, (byClient.get(client) ?? 0) + 1)
        if (slot.kind === "anonymous") anonymous++
        return { _tag: "Admitted", slot } satisfies Admission as Admission
      }),
    /**
     * The subscription arrived: with a token (`signed`) the slot is kept whatever its kind; without
     * one, a reserve slot needs room among the anonymous connections of every runner. False: refuse the connection.
     */
    settle: (slot: Slot, signed: boolean) =>
      Effect.gen(function* () {
        if (slot.released) return false
        if (signed) {
          // Failing to mark it only leaves it counted in its old share until it ends: never more slots.
          yield* signSlot(slot.id).pipe(
            Effect.tapErrorCause((cause) => Effect.logWarning("stream slot update failed", cause)),
            Effect.ignore,
          )
          if (slot.kind === "anonymous") anonymous--
          slot.kind = "signed"
          return true
        }
        if (slot.kind !== "reserve") return true
        const kept = yield* settleReserveAnonymously(slot.id, slot.shares.anonymous).pipe(
          Effect.tapErrorCause((cause) => Effect.logWarning("stream admission failed", cause)),
          Effect.orElseSucceed(() => false),
        )
        if (!kept) {
          refused++
          refusedBy.anonymous++
          return false
        }
        anonymous++
        slot.kind = "anonymous"
        return true
      }),
    release: (slot: Slot) =>
      Effect.gen(function* () {
        if (slot.released) return
        slot.released = true
        held.delete(slot.id)
        dropLocally(slot)
        // A failed delete leaves a row nobody refreshes: it stops counting within SLOT_LIFETIME_SECONDS.
        yield* releaseSlot(slot.id).pipe(
          Effect.tapErrorCause((cause) => Effect.logWarning("stream slot release failed", cause)),
          Effect.ignore,
        )
      }),
    /** Refreshes this process's rows every SLOT_HEARTBEAT, forever (fork it with the stream route). */
    keepAlive: Effect.suspend(() => refreshSlots([...held.keys()])).pipe(
      Effect.tapErrorCause((cause) => Effect.logWarning("stream slot heartbeat failed; next beat retries", cause)),
      Effect.ignore,
      Effect.zipRight(Effect.sleep(SLOT_HEARTBEAT)),
      Effect.forever,
    ),
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
