import { Duration, ParseResult, Schema } from "effect"
import { VenueId } from "../Domain/Primitives.ts"

/**
 * The wire protocol of `GET /v1/stream` (spec: Events; DESIGN §9). Every frame is a JSON text frame.
 *
 * client → server, exactly once, first, within 5 s:
 *   StreamSubscription `{type:"subscribe", token?, cursor?, channels?, pairs?}`
 * server → client:
 *   EventPage `{type:"events", events:[{cursor, kind, at, data}], next_cursor}`; resume after `next_cursor`
 *   StreamControl `{type:"control", code, message}`: always the last frame before the server closes
 *
 * The JSON Schema of every frame and of every event kind's `data` is `events.schema.json` beside this
 * file; the README's "Events" section says the same in prose.
 */

/** Stream limits of the spec (Limits: "Stream …"; Events 1, 2, 3, 5). */
export const STREAM_LIMITS = {
  /** The subscription must arrive within this time after the upgrade. */
  subscribeTimeout: Duration.seconds(5),
  /** Largest inbound message, bytes (enforced by ws itself where reachable, and checked again here). */
  maxInboundBytes: 4096,
  /** Connections open at once on all runners together (refused beyond, with a control frame). */
  maxConnections: 256,
  /** A page write that has not drained for this long closes the socket (`slow_consumer`). */
  blockedSendTimeout: Duration.seconds(5),
  /** An empty page is sent when nothing was sent for this long. */
  idlePageInterval: Duration.millis(500),
  /** The server pings this often and drops a peer that answered none of the last two pings. */
  heartbeat: Duration.seconds(15),
  /** Private streams re-authenticate their token this often. */
  authRecheckInterval: Duration.millis(500),
  /** Most journal rows scanned for one page. */
  pageRows: 256,
  /** A page stops growing once its events take this many bytes (at least one event per page). */
  pageBytes: 256 * 1024,
  /** Bytes still queued in the socket below which a page counts as written. */
  lowWaterBytes: 16 * 1024,
} as const

/** Largest journal cursor (a Postgres bigint). */
const MAX_CURSOR = 2n ** 63n - 1n

/** A journal cursor as a lossless decimal string (spec: Wire conventions 5). */
export const Cursor = Schema.String.pipe(
  Schema.pattern(/^(0|[1-9][0-9]{0,18})$/),
  Schema.filter((s) => BigInt(s) <= MAX_CURSOR, { message: () => "must be at most 2^63 - 1" }),
  Schema.annotations({ identifier: "Cursor", description: "journal cursor, decimal string" }),
)

export const Channel = Schema.Literal("trades", "account")
export type Channel = typeof Channel.Type

/** A venue pair, either direction: `{a:"hyperliquid", b:"aster"}` matches trades a→b and b→a. */
export const Pair = Schema.Struct({ a: VenueId, b: VenueId })
export type Pair = typeof Pair.Type

export const StreamSubscription = Schema.Struct({
  type: Schema.Literal("subscribe"),
  /** A session token or an `mk_` credential; omitted for public events only. Never in the URL. */
  token: Schema.optional(Schema.String.pipe(Schema.minLength(1), Schema.maxLength(512))),
  /** Resume after this cursor (the last processed `next_cursor`); omitted: start at the current head. */
  cursor: Schema.optional(Cursor),
  /** Default: `trades`, plus `account` when the token may read private events. */
  channels: Schema.optional(Schema.Array(Channel).pipe(Schema.minItems(1), Schema.maxItems(2))),
  /** Only trades between these venue pairs (either direction); omitted: every pair. */
  pairs: Schema.optional(Schema.Array(Pair).pipe(Schema.minItems(1), Schema.maxItems(64))),
}).annotations({ identifier: "StreamSubscription", parseOptions: { onExcessProperty: "error" } })
export type StreamSubscription = typeof StreamSubscription.Type

/**
 * Why the server closes. Each code is sent in a StreamControl frame, then the socket closes with the
 * WebSocket close code listed here. Clients branch on `code`, never on `message`.
 */
export const CONTROL_CODES = {
  /** The server is stopping; reconnect (to another instance) and resume from the last next_cursor. */
  shutdown: 1001,
  /** A frame that is not one valid subscription: bad JSON, unknown field, a second or a binary frame. */
  protocol_error: 1008,
  /** An inbound message over 4096 bytes. */
  message_too_large: 1009,
  /** Unexpected server failure (e.g. the database); reconnect and resume. */
  internal: 1011,
  /** No slot: 256 connections are open, the client holds its share, or no token and the token-less share is taken. */
  too_many_connections: 1013,
  /** Missing, malformed, unknown, expired or revoked token at subscription time. */
  unauthorized: 4401,
  /** The session or credential ended (revoked, rotated, expired) while streaming. */
  auth_revoked: 4401,
  /** The token may not read the requested channel (a credential without the `read` scope). */
  forbidden: 4403,
  /** No subscription within 5 s of the upgrade. */
  subscribe_timeout: 4408,
  /** The cursor is older than the oldest retained journal row (or ahead of the head): take a new snapshot. */
  cursor_expired: 4410,
  /** A page stayed unwritten for 5 s: the client does not read fast enough. */
  slow_consumer: 4429,
  /** No pong since the previous ping: the peer is gone; the frame is best effort and the socket is dropped. */
  unresponsive: 4408,
} as const
export type ControlCode = keyof typeof CONTROL_CODES

export interface StreamControl {
  readonly type: "control"
  readonly code: ControlCode
  readonly message: string
}

export const controlFrame = (code: ControlCode, message: string): string =>
  JSON.stringify({ type: "control", code, message } satisfies StreamControl)

/**
 * An EventPage from events already encoded as JSON objects (`{cursor, kind, at, data}`), so a row is
 * encoded once per process however many subscribers receive it.
 */
export const eventPageFrame = (encodedEvents: ReadonlyArray<string>, nextCursor: bigint): string =>
  `{"type":"events","events":[${encodedEvents.join(",")}],"next_cursor":"${nextCursor}"}`

/** `path: message` per issue, without the offending values (a token is never echoed back). */
export const describeParseError = (error: ParseResult.ParseError): string => {
  const issues = ParseResult.ArrayFormatter.formatErrorSync(error)
  const parts = issues.slice(0, 3).map((issue) => {
    const where = issue.path.length > 0 ? issue.path.map(String).join(".") : "subscription"
    const what = issue.message
      .replace(/,?\s*actual\b[\s\S]*$/, "")
      .replace(/\s+/g, " ")
      .trim()
    return `${where}: ${what.length > 160 ? `${what.slice(0, 160)}…` : what}`
  })
  return parts.length > 0 ? parts.join("; ") : "invalid subscription"
}
