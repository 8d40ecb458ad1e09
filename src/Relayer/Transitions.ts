import { Effect } from "effect"
import { countRelayerTransition } from "../Observability/Metrics.ts"
import { appendJournal, type Notification } from "../Sql/Journal.ts"
import type { RequestRow } from "./Rows.ts"

/**
 * What a relayer request's status transition tells others, in the transition's transaction: its journal row, a
 * NOTIFY on RELAYER_OUTCOME_CHANNEL (the transition and the idempotency key, so waiters wake at once), one log line
 * and the relayer's counters.
 */

/** Waiters of a request's outcome LISTEN here (payload: `<transition kind> <idempotency key>`, parseRelayerOutcome). */
export const RELAYER_OUTCOME_CHANNEL = "relayer_outcome"

/** A transition as RELAYER_OUTCOME_CHANNEL carries it: its journal kind (`tx.queued`, `tx.final`, …) and the key. */
export interface RelayerOutcomeNotice {
  readonly kind: string
  readonly key: string
}

/** The kind has no space; the key may (any printable characters), so it is everything after the first one. */
export const parseRelayerOutcome = (payload: string): RelayerOutcomeNotice => {
  const space = payload.indexOf(" ")
  return space < 0 ? { kind: "", key: payload } : { kind: payload.slice(0, space), key: payload.slice(space + 1) }
}

export const outcomePayload = (kind: string, key: string) => `${kind} ${key}`

/**
 * Transitions after which nothing a waiter decides can change: the request was recorded, sent or re-sent with a
 * higher fee, and is still neither included nor failed. A waiter that acts only on inclusion, finality or failure
 * (the settlement's step) need not look again for them.
 */
export const IN_FLIGHT_TRANSITIONS: ReadonlyArray<string> = ["tx.queued", "tx.pending", "tx.bumped"]
/**
 * Transitions after which the request has still not ended (final, reverted or replaced): in flight, included, or
 * back to pending after a reorg. A waiter that acts only on a request's end (a close queue: Escrow/Closes.ts
 * nextTransition; order funding: Orders/Repo.ts settleFundingOrders) need not look again for them.
 */
export const UNENDED_TRANSITIONS: ReadonlyArray<string> = [...IN_FLIGHT_TRANSITIONS, "tx.included", "tx.reorged"]
/** The relayer of a venue LISTENs here (payload: venue) to pick up new requests without waiting. */
export const RELAYER_QUEUED_CHANNEL = "relayer_queued"

/**
 * One log line and the relayer's counters per transition (submit, bump, include, reorg, final, revert,
 * replace), written with its journal row in the transition's transaction. Never the calldata or raw bytes.
 */
export const relayerTransitionLogged = (r: RequestRow, kind: string, extra: Record<string, unknown>) => {
  const line =
    kind === "tx.reverted" || kind === "tx.replaced" || kind === "tx.reorged" ? Effect.logWarning : Effect.logInfo
  return Effect.zipRight(
    Effect.sync(() => countRelayerTransition(r.venue, kind)),
    line(`relayer ${kind.slice(3)}`),
  ).pipe(
    Effect.annotateLogs({
      venue: r.venue,
      chain_id: r.chainId,
      tx_key: r.idempotencyKey,
      function: r.functionName,
      target: r.target,
      ...extra,
    }),
  )
}

export const QUEUED = { status: "queued" }

export const journalPayload = (
  r: Pick<RequestRow, "idempotencyKey" | "venue" | "chainId" | "functionName" | "target">,
  extra: Record<string, unknown> = {},
) => ({
  key: r.idempotencyKey,
  venue: r.venue,
  chain_id: r.chainId,
  function: r.functionName,
  target: r.target,
  ...extra,
})

/**
 * A transition's journal row and the waiters' wake-up (and `also`), in one statement inside the caller's
 * transaction.
 */
export const transitionEvents = (
  r: RequestRow,
  kind: string,
  extra: Record<string, unknown>,
  also: ReadonlyArray<Notification> = [],
) =>
  appendJournal({ kind, master: r.master, payload: journalPayload(r, extra) }, [
    { channel: RELAYER_OUTCOME_CHANNEL, payload: outcomePayload(kind, r.idempotencyKey) },
    ...also,
  ]).pipe(Effect.zipLeft(relayerTransitionLogged(r, kind, extra)))

export interface TransitionItem {
  readonly request: RequestRow
  readonly kind: string
  readonly extra: Record<string, unknown>
}

export const transitionEntries = (items: ReadonlyArray<TransitionItem>) =>
  items.map((i) => ({ kind: i.kind, master: i.request.master, payload: journalPayload(i.request, i.extra) }))
export const transitionNotices = (items: ReadonlyArray<TransitionItem>): Array<Notification> =>
  items.map((i) => ({ channel: RELAYER_OUTCOME_CHANNEL, payload: outcomePayload(i.kind, i.request.idempotencyKey) }))
export const transitionsLogged = (items: ReadonlyArray<TransitionItem>) =>
  Effect.forEach(items, (i) => relayerTransitionLogged(i.request, i.kind, i.extra), { discard: true })
