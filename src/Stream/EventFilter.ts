import { SESSION_ONLY_EVENT_FIELDS } from "../Domain/CredentialVisibility.ts"
import type { Principal } from "../Domain/Principal.ts"
import type { JournalEvent } from "./JournalReader.ts"
import type { Channel, Pair } from "./StreamProtocol.ts"

/**
 * Who may see which journal row. The rules depend only on the row's `master`, `kind` and two payload
 * fields, so a new event kind needs no change here:
 *
 * 1. `master` null and `kind` starting with `trade.`: public, channel `trades`. With `pairs`, only
 *    trades whose `data.from`/`data.to` venues match a pair in either direction.
 * 2. `master` null, any other kind: operator-internal, never streamed.
 * 3. `master` set: private to that master, channel `account`:
 *    - a session of the master sees every such row;
 *    - a maker credential (scope `read`) sees only rows whose `data.identity_id` equals the quote
 *      identity it is bound to. Maker-facing payloads must therefore carry `identity_id`.
 * 4. A credential never gets the session-only fields of an event's `data` (`encodingFor`).
 */
export const PUBLIC_KIND_PREFIX = "trade."

export interface Audience {
  /** The `trades` channel, optionally restricted to venue pairs. */
  readonly trades: boolean
  readonly pairs: ReadonlyArray<Pair> | undefined
  /** The `account` channel: the master, and for a credential its quote identity. */
  readonly account: { readonly master: string; readonly identityId: string | null } | undefined
}

/** May this principal read private events at all (spec Events: a session or a `read` credential)? */
export const mayReadPrivate = (principal: Principal): boolean =>
  principal._tag === "Session" || principal.scopes.includes("read")

export const audienceOf = (
  channels: ReadonlyArray<Channel>,
  pairs: ReadonlyArray<Pair> | undefined,
  principal: Principal | undefined,
): Audience => ({
  trades: channels.includes("trades"),
  pairs,
  account:
    channels.includes("account") && principal !== undefined
      ? {
          master: principal.master.toLowerCase(),
          identityId: principal._tag === "Credential" ? principal.quoteIdentityId : null,
        }
      : undefined,
})

const pairMatches = (pairs: ReadonlyArray<Pair>, from: string | null, to: string | null) =>
  from !== null && to !== null && pairs.some((p) => (p.a === from && p.b === to) || (p.a === to && p.b === from))

export const visibleTo =
  (audience: Audience) =>
  (event: JournalEvent): boolean => {
    if (event.master === null) {
      if (!audience.trades || !event.kind.startsWith(PUBLIC_KIND_PREFIX)) return false
      return audience.pairs === undefined || pairMatches(audience.pairs, event.from, event.to)
    }
    const account = audience.account
    if (account === undefined || event.master !== account.master) return false
    return account.identityId === null || event.identityId === account.identityId
  }

/** Field names as they appear in an event's encoded JSON: a cheap test before any re-encoding. */
const hiddenKeys = SESSION_ONLY_EVENT_FIELDS.map((field) => `"${field}":`)

/** Credential encodings already made, per event (an event is shared by every subscriber's window). */
const redacted = new WeakMap<JournalEvent, string>()

const redact = (event: JournalEvent): string => {
  if (!hiddenKeys.some((key) => event.json.includes(key))) return event.json
  const cached = redacted.get(event)
  if (cached !== undefined) return cached
  const frame = JSON.parse(event.json) as { data?: unknown }
  if (frame.data !== null && typeof frame.data === "object") {
    const data = frame.data as Record<string, unknown>
    for (const field of SESSION_ONLY_EVENT_FIELDS) delete data[field]
  }
  const json = JSON.stringify(frame)
  redacted.set(event, json)
  return json
}

/**
 * How this audience's events are encoded: as published for sessions and public subscribers (encoded once,
 * shared); for a credential, without the session-only fields (rule 4; re-encoded only for events that carry one).
 */
export const encodingFor = (audience: Audience): ((event: JournalEvent) => string) =>
  audience.account !== undefined && audience.account.identityId !== null ? redact : (event) => event.json
