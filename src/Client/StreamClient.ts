/**
 * The stream client: `GET /v1/stream` as an Effect `Stream` of events that outlives its connections (spec Events 4).
 * It subscribes, reads EventPage frames in order and, after the last event of a page has been pulled downstream,
 * keeps that page's `next_cursor`. When the connection is lost (network, `shutdown`, `internal`,
 * `too_many_connections`, `slow_consumer`) it reconnects with capped, jittered backoff and resumes after that
 * cursor, so each event arrives once and in cursor order across reconnects. A refusal no reconnect can mend ends the
 * stream with `StreamRefused` and its code: `unauthorized` / `auth_revoked` (sign in again), `forbidden` (the token
 * may not read that channel), `cursor_expired` (take a new snapshot: a private GET answers `x-event-cursor`, then
 * subscribe after it), `protocol_error` / `message_too_large` (a bug in the subscription).
 *
 * Gap-free delivery needs a starting cursor (`cursor`, from a snapshot's `x-event-cursor` or a cursor kept from
 * `onCursor`): without one the first connection starts at the head, and a connection lost before its first page
 * starts at the head again.
 *
 * No Node-only import: pass a WebSocket constructor (a browser's `WebSocket`, or the `ws` package's in Node 20).
 */
import { Data, Duration, Effect, Option, Random, Ref, Schedule, Stream } from "effect"
import type { Channel, ControlCode, Pair } from "../Stream/StreamProtocol.ts"

export interface StreamEvent {
  readonly cursor: string
  readonly kind: string
  readonly at: string
  readonly data: unknown
}

/** The stream ended for good: the service refused the subscription or revoked it (branch on `code`). */
export class StreamRefused extends Data.TaggedError("StreamRefused")<{
  readonly code: ControlCode | "invalid_frame"
  readonly message: string
}> {}

/** One connection ended without a refusal: reconnect and resume. */
class ConnectionLost extends Data.TaggedError("ConnectionLost")<{ readonly reason: string }> {}

/** The part of the WebSocket API the client uses (the browser's and the `ws` package's both have it). */
export interface WebSocketLike {
  send(data: string): void
  close(code?: number): void
  onopen: ((event: unknown) => void) | null
  onmessage: ((event: { readonly data: unknown }) => void) | null
  onclose: ((event: { readonly code: number; readonly reason: unknown }) => void) | null
  onerror: ((event: unknown) => void) | null
}
export type WebSocketConstructor = new (url: string) => WebSocketLike

export interface StreamClientOptions {
  /** The service's base URL (`http://…` or `https://…`); the stream is `ws(s)://…/v1/stream`. */
  readonly baseUrl: string
  readonly WebSocket: WebSocketConstructor
  /** A session token or an `mk_` credential with scope `read`; omitted: public events only. Never put in the URL. */
  readonly token?: string | undefined
  /** Resume after this cursor (the last processed `next_cursor`, or a snapshot's `x-event-cursor`). */
  readonly cursor?: string | undefined
  readonly channels?: ReadonlyArray<Channel> | undefined
  readonly pairs?: ReadonlyArray<Pair> | undefined
  /** Called with each page's `next_cursor` once its events were pulled: persist it to resume after a restart. */
  readonly onCursor?: ((cursor: string) => void) | undefined
  /** Called with each reconnect's reason and the attempt number (a heartbeat for the caller's log). */
  readonly onReconnect?: ((reason: string, attempt: number) => void) | undefined
  /** The first reconnect's delay (default 250 ms); it doubles per failed attempt, jittered, up to `maxBackoff` (10 s). */
  readonly backoff?: Duration.DurationInput | undefined
  readonly maxBackoff?: Duration.DurationInput | undefined
}

/** Control codes after which a new connection would be refused again. */
const FINAL: ReadonlySet<string> = new Set<ControlCode>([
  "unauthorized",
  "auth_revoked",
  "forbidden",
  "cursor_expired",
  "protocol_error",
  "message_too_large",
])

type Frame =
  | { readonly type: "events"; readonly events: ReadonlyArray<StreamEvent>; readonly next_cursor: string }
  | { readonly type: "control"; readonly code: ControlCode; readonly message: string }

const parseFrame = (data: unknown): Frame | undefined => {
  if (typeof data !== "string") return undefined
  try {
    const frame = JSON.parse(data) as Partial<Frame> | null
    if (frame?.type === "events" && Array.isArray(frame.events) && typeof frame.next_cursor === "string") {
      return frame as Frame
    }
    if (frame?.type === "control" && typeof frame.code === "string") return frame as Frame
  } catch {
    // not JSON: refused below
  }
  return undefined
}

/** `http(s)://host/base` → `ws(s)://host/base/v1/stream`. */
export const streamUrl = (baseUrl: string) => `${baseUrl.replace(/\/$/, "").replace(/^http/, "ws")}/v1/stream`

/** One connection: its frames until it closes (ConnectionLost) or is refused for good (StreamRefused). */
const connection = (options: StreamClientOptions, cursor: Option.Option<string>) =>
  Stream.asyncScoped<Frame, StreamRefused | ConnectionLost>((emit) =>
    Effect.acquireRelease(
      Effect.sync(() => {
        const socket = new options.WebSocket(streamUrl(options.baseUrl))
        let refused: StreamRefused | undefined
        socket.onopen = () =>
          socket.send(
            JSON.stringify({
              type: "subscribe",
              ...(options.token === undefined ? {} : { token: options.token }),
              ...(Option.isSome(cursor) ? { cursor: cursor.value } : {}),
              ...(options.channels === undefined ? {} : { channels: options.channels }),
              ...(options.pairs === undefined ? {} : { pairs: options.pairs }),
            }),
          )
        socket.onmessage = (event) => {
          const frame = parseFrame(typeof event.data === "string" ? event.data : String(event.data))
          if (frame === undefined) {
            refused = new StreamRefused({ code: "invalid_frame", message: "the service sent a frame that is no page" })
            socket.close(1002)
            return
          }
          if (frame.type === "control" && FINAL.has(frame.code)) {
            refused = new StreamRefused({ code: frame.code, message: frame.message })
          }
          void emit.single(frame)
        }
        socket.onerror = () => {}
        socket.onclose = (event) =>
          void emit.fail(
            refused ?? new ConnectionLost({ reason: `closed ${event.code} ${String(event.reason)}`.trim() }),
          )
        return socket
      }),
      (socket) =>
        Effect.sync(() => {
          socket.onclose = null
          socket.onmessage = null
          socket.close(1000)
        }),
    ),
  )

/**
 * Every event of the subscription, in cursor order, once each, across reconnects; fails only with StreamRefused.
 * Interrupting the stream (or its scope) closes the socket.
 */
export const streamEvents = (options: StreamClientOptions): Stream.Stream<StreamEvent, StreamRefused> =>
  Stream.unwrap(
    Effect.gen(function* () {
      const last = yield* Ref.make(Option.fromNullable(options.cursor))
      const attempts = yield* Ref.make(0)
      const once = Stream.unwrap(Effect.map(Ref.get(last), (cursor) => connection(options, cursor))).pipe(
        Stream.flatMap((frame) => {
          if (frame.type === "control") return Stream.empty
          // The cursor moves only after the page's events were pulled, so a loss mid-page replays the page.
          const advance = Effect.zipRight(
            Ref.set(last, Option.some(frame.next_cursor)),
            Effect.zipRight(
              Ref.set(attempts, 0),
              Effect.sync(() => options.onCursor?.(frame.next_cursor)),
            ),
          )
          return Stream.concat(Stream.fromIterable(frame.events), Stream.execute(advance))
        }),
      )
      // Capped exponential backoff with jitter, counted from the last page received (a page resets it).
      const firstMs = Duration.toMillis(options.backoff ?? "250 millis")
      const maxMs = Duration.toMillis(options.maxBackoff ?? "10 seconds")
      const delay = Effect.gen(function* () {
        const n = yield* Ref.get(attempts)
        const jitter = yield* Random.nextRange(0.5, 1)
        return Duration.millis(Math.min(maxMs, firstMs * 2 ** Math.max(0, n - 1)) * jitter)
      })
      const reconnect = Schedule.identity<StreamRefused | ConnectionLost>().pipe(
        Schedule.whileInput((e) => e._tag === "ConnectionLost"),
        Schedule.modifyDelayEffect(() => delay),
      )
      return once.pipe(
        Stream.tapError((e) =>
          e._tag === "ConnectionLost"
            ? Effect.flatMap(
                Ref.updateAndGet(attempts, (n) => n + 1),
                (n) => Effect.sync(() => options.onReconnect?.(e.reason, n)),
              )
            : Effect.void,
        ),
        Stream.retry(reconnect),
        // The schedule stops only on a refusal; this keeps the error channel StreamRefused for the type checker.
        Stream.catchTag("ConnectionLost", (e) =>
          Stream.fail(new StreamRefused({ code: "internal", message: e.reason })),
        ),
      )
    }),
  )
