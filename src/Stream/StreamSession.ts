import type { Duplex } from "node:stream"
import type { Socket } from "@effect/platform"
import type { SqlClient } from "@effect/sql"
import { Cause, Deferred, Duration, Effect, Either, Exit, Fiber, Option, Schema } from "effect"
import { WebSocket } from "ws"
import { exceedsJsonDepth, tooDeepMessage } from "../Domain/JsonDepth.ts"
import type { Principal } from "../Domain/Principal.ts"
import { StreamConnections } from "./Connections.ts"
import { type Audience, audienceOf, encodingFor, mayReadPrivate, visibleTo } from "./EventFilter.ts"
import { type JournalEvent, journalHead, oldestRetainedCursor } from "./JournalReader.ts"
import type { Follower, JournalTailService } from "./JournalTail.ts"
import {
  type Channel,
  CONTROL_CODES,
  type ControlCode,
  controlFrame,
  describeParseError,
  eventPageFrame,
  STREAM_LIMITS,
  StreamSubscription,
} from "./StreamProtocol.ts"
import { awaitWritten, limitInbound, openSocket } from "./StreamSocket.ts"

/** Why the server ends a stream: sent as a StreamControl frame, then the socket closes. */
export interface Close {
  readonly code: ControlCode
  readonly message: string
}

export interface SessionEnv {
  readonly tail: JournalTailService
  /** Resolves a subscription token to a principal (a session or a credential), as a bearer would. */
  readonly authenticate: (token: string) => Effect.Effect<Principal, { readonly message: string }, SqlClient.SqlClient>
  /** Venue ids of the deployment (pair filter validation). */
  readonly venues: ReadonlySet<string>
  /** How often the server pings; a peer that answered none of the last two pings is dropped. */
  readonly heartbeat: Duration.Duration
  /**
   * The connection's slot meets its subscription (src/Stream/Connections.ts): with a token or not.
   * A message: no slot for such a subscription, closed with `too_many_connections`.
   */
  readonly admit: (signed: boolean) => Effect.Effect<string | undefined>
}

const close = (code: ControlCode, message: string): Close => ({ code, message })

interface Subscribed {
  readonly audience: Audience
  readonly start: bigint
  readonly token: string | undefined
}

const parseSubscription = (text: string, env: SessionEnv) =>
  Effect.gen(function* () {
    if (exceedsJsonDepth(text)) return yield* Effect.fail(close("protocol_error", tooDeepMessage("the subscription")))
    let json: unknown
    try {
      json = JSON.parse(text)
    } catch {
      return yield* Effect.fail(close("protocol_error", "the subscription is not valid JSON"))
    }
    const decoded = Schema.decodeUnknownEither(StreamSubscription)(json)
    if (Either.isLeft(decoded)) {
      return yield* Effect.fail(close("protocol_error", `invalid subscription: ${describeParseError(decoded.left)}`))
    }
    const sub = decoded.right
    for (const pair of sub.pairs ?? []) {
      for (const venue of [pair.a, pair.b]) {
        if (!env.venues.has(venue)) {
          return yield* Effect.fail(close("protocol_error", `unknown venue ${venue} in pairs; see GET /v1/venues`))
        }
      }
    }
    if (sub.pairs !== undefined && sub.channels !== undefined && !sub.channels.includes("trades")) {
      return yield* Effect.fail(close("protocol_error", "pairs filter the trades channel, which is not subscribed"))
    }
    let principal: Principal | undefined
    if (sub.token !== undefined) {
      const resolved = yield* env.authenticate(sub.token).pipe(Effect.either)
      if (Either.isLeft(resolved)) return yield* Effect.fail(close("unauthorized", resolved.left.message))
      principal = resolved.right
    }
    const channels: ReadonlyArray<Channel> =
      sub.channels ?? (principal !== undefined && mayReadPrivate(principal) ? ["trades", "account"] : ["trades"])
    if (channels.includes("account")) {
      if (principal === undefined) {
        return yield* Effect.fail(
          close("unauthorized", "the account channel needs a token: a session or a credential with the read scope"),
        )
      }
      if (!mayReadPrivate(principal)) {
        return yield* Effect.fail(close("forbidden", "this credential lacks the read scope the account channel needs"))
      }
    }
    const head = yield* journalHead.pipe(Effect.orDie)
    let start = head
    if (sub.cursor !== undefined) {
      const cursor = BigInt(sub.cursor)
      if (cursor > head) {
        return yield* Effect.fail(
          close("cursor_expired", `cursor ${cursor} is ahead of the journal (head ${head}); take a new snapshot`),
        )
      }
      const oldest = yield* oldestRetainedCursor.pipe(Effect.orDie)
      if (oldest !== null && cursor < oldest - 1n) {
        return yield* Effect.fail(
          close(
            "cursor_expired",
            `events after cursor ${cursor} are no longer retained (oldest ${oldest}); take a new snapshot and resume from its x-event-cursor`,
          ),
        )
      }
      start = cursor
    }
    return { audience: audienceOf(channels, sub.pairs, principal), start, token: sub.token } satisfies Subscribed
  })

/**
 * Re-authenticates the token every 500 ms (spec Events 2) and ends the stream with `auth_revoked`
 * once it no longer resolves (revoked, rotated, expired). A failing database is not a revocation:
 * after ten failed checks in a row (about 5 s) the stream ends with `internal` instead.
 */
const recheckAuth = (token: string, env: SessionEnv) =>
  Effect.gen(function* () {
    let failures = 0
    while (true) {
      yield* Effect.sleep(STREAM_LIMITS.authRecheckInterval)
      const result = yield* env.authenticate(token).pipe(
        Effect.either,
        Effect.map(Option.some),
        Effect.catchAllDefect(() => Effect.succeedNone),
      )
      if (Option.isNone(result)) {
        if (++failures >= 10) return close("internal", "the token could not be rechecked; reconnect and resume")
        continue
      }
      failures = 0
      if (Either.isLeft(result.value)) return close("auth_revoked", result.value.left.message)
    }
  })

/**
 * Cuts rows into EventPage frames for one subscriber: only the rows it may see, pages of at most
 * 256 KiB of events (at least one event each). Each page's `next_cursor` is the last row it covers,
 * so it also moves past filtered-out rows; `last` covers every row, including trailing filtered ones.
 */
const pagesOf = (
  rows: ReadonlyArray<JournalEvent>,
  visible: (row: JournalEvent) => boolean,
  encode: (row: JournalEvent) => string,
  after: bigint,
) => {
  const pages: Array<{ readonly frame: string; readonly last: bigint }> = []
  let events: Array<string> = []
  let bytes = 0
  let last = after
  for (const row of rows) {
    if (visible(row)) {
      const json = encode(row)
      if (events.length > 0 && bytes + json.length > STREAM_LIMITS.pageBytes) {
        pages.push({ frame: eventPageFrame(events, last), last })
        events = []
        bytes = 0
      }
      events.push(json)
      bytes += json.length
    }
    last = row.cursor
  }
  if (events.length > 0) pages.push({ frame: eventPageFrame(events, last), last })
  return { pages, last }
}

const slowConsumer = close("slow_consumer", "a page stayed unwritten for 5 s; resume from the last next_cursor")

/**
 * Sends pages from `start` on, in two modes.
 * - Pull: read the rows after the last cursor (the shared window, or the journal when further
 *   behind), send what this subscriber may see, and read the next page only once the previous one is
 *   written. Used from the start until caught up, and after a blocked send.
 * - Follow: once caught up, the journal tail hands each batch it reads to the subscriber at once
 *   (synchronously, like a broadcast), as long as the socket keeps up; a backed-up socket drops
 *   back to pull mode, which waits for the backlog to drain (at most 5 s, else `slow_consumer`).
 * An empty page goes out when nothing was sent for 500 ms.
 */
const pump = (ws: WebSocket, netSocket: Duplex, subscribed: Subscribed, env: SessionEnv) =>
  Effect.gen(function* () {
    const clock = yield* Effect.clock
    const now = () => clock.unsafeCurrentTimeMillis()
    const visible = visibleTo(subscribed.audience)
    const encode = encodingFor(subscribed.audience)
    const idleMs = Duration.toMillis(STREAM_LIMITS.idlePageInterval)
    const open = () => ws.readyState === WebSocket.OPEN
    let last = subscribed.start
    let lastSentAt = 0
    /** Sends one frame; true while the socket's backlog stays under the low-water mark. */
    const sendRaw = (frame: string) => {
      ws.send(frame)
      lastSentAt = now()
      const queued = ws.bufferedAmount
      StreamConnections.recordQueued(queued)
      return queued <= STREAM_LIMITS.lowWaterBytes
    }
    // Pull mode's send: each page must be written before the next one is sent or read.
    const send = (frame: string) =>
      Effect.suspend(() => {
        if (!open()) return Effect.never
        sendRaw(frame)
        return Effect.map(awaitWritten(ws, netSocket), (written) =>
          written ? Option.none() : Option.some(slowConsumer),
        )
      })

    /** Follow mode until the socket backs up (true) or follow mode is not possible now (false). */
    const follow = Effect.gen(function* () {
      const left = yield* Deferred.make<"blocked" | "gap">()
      const follower: Follower = {
        last,
        push: (rows) => {
          if (!open()) return false
          if (rows[0]!.cursor !== follower.last + 1n) {
            Deferred.unsafeDone(left, Exit.succeed("gap"))
            return false
          }
          StreamConnections.recordPage("pushed")
          const { pages, last: covered } = pagesOf(rows, visible, encode, follower.last)
          for (const page of pages) {
            follower.last = page.last
            // Backed up: stop here; pull mode goes on from this page once it is written.
            if (!sendRaw(page.frame)) {
              Deferred.unsafeDone(left, Exit.succeed("blocked"))
              return false
            }
          }
          follower.last = covered
          return true
        },
      }
      if (!(yield* env.tail.follow(follower))) return false
      const outcome = yield* Effect.gen(function* () {
        while (true) {
          const woken = yield* Deferred.await(left).pipe(
            Effect.timeoutOption(Duration.millis(Math.max(1, idleMs - (now() - lastSentAt)))),
          )
          if (Option.isSome(woken)) return woken.value
          if (!open()) return yield* Effect.never
          if (now() - lastSentAt >= idleMs && !sendRaw(eventPageFrame([], follower.last))) return "blocked"
        }
      }).pipe(Effect.ensuring(env.tail.unfollow(follower)))
      last = follower.last
      return outcome === "blocked"
    })

    // The first page tells the client where the stream starts.
    const first = yield* send(eventPageFrame([], last))
    if (Option.isSome(first)) return first.value
    while (true) {
      const rows = yield* env.tail.pageAfter(last, STREAM_LIMITS.pageRows).pipe(Effect.orDie)
      const head = rows[0]
      if (head !== undefined && head.cursor !== last + 1n) {
        return close(
          "cursor_expired",
          `events after cursor ${last} are no longer retained; take a new snapshot and resume from its x-event-cursor`,
        )
      }
      const { pages, last: covered } = pagesOf(rows, visible, encode, last)
      for (const page of pages) {
        last = page.last
        const blocked = yield* send(page.frame)
        if (Option.isSome(blocked)) return blocked.value
      }
      last = covered
      if (pages.length === 0 && now() - lastSentAt >= idleMs) {
        const blocked = yield* send(eventPageFrame([], last))
        if (Option.isSome(blocked)) return blocked.value
      }
      if (rows.length < STREAM_LIMITS.pageRows) {
        if (yield* follow) {
          if (!(yield* awaitWritten(ws, netSocket))) return slowConsumer
        } else {
          yield* env.tail.awaitBeyond(last, Duration.millis(Math.max(1, idleMs - (now() - lastSentAt))))
        }
      }
    }
  })

/**
 * One stream connection from the upgrade to the close. Every way it ends sends a StreamControl
 * frame first, except when the client is already gone: a violation seen by the reader (oversized,
 * binary or second frame), the subscription outcome, a revoked token, a blocked send, a failure
 * (`internal`), and interruption while open, which is the server shutting down (`shutdown`).
 */
export const streamSession = (socket: Socket.Socket, netSocket: Duplex, env: SessionEnv) =>
  Effect.scoped(
    Effect.gen(function* () {
      const state = { closing: false, firstSeen: false }
      const stop = yield* Deferred.make<Close>()
      const first = yield* Deferred.make<string>()
      const violation = (c: Close) => Deferred.unsafeDone(stop, Exit.succeed(c))
      const onMessage = (data: string | Uint8Array) => {
        const size = typeof data === "string" ? Buffer.byteLength(data) : data.byteLength
        if (size > STREAM_LIMITS.maxInboundBytes) {
          return violation(
            close("message_too_large", `inbound messages are at most ${STREAM_LIMITS.maxInboundBytes} bytes`),
          )
        }
        if (typeof data !== "string") {
          return violation(close("protocol_error", "binary frames are not accepted; send the subscription as text"))
        }
        if (!state.firstSeen) {
          state.firstSeen = true
          return Deferred.unsafeDone(first, Exit.succeed(data))
        }
        violation(close("protocol_error", "text frames after the subscription are not accepted"))
      }
      const { ws: opened, reader } = yield* openSocket(socket, netSocket, onMessage)
      if (Option.isNone(opened)) return yield* StreamConnections.recordClose("peer")
      const ws = opened.value

      // Dead peers (no FIN, no pong) would hold a connection slot until TCP gives up: ping, and drop
      // a peer that did not answer since the previous ping.
      let answered = true
      ws.on("pong", () => {
        answered = true
      })
      yield* Effect.gen(function* () {
        while (ws.readyState === WebSocket.OPEN) {
          yield* Effect.sleep(env.heartbeat)
          if (!answered) {
            state.closing = true
            yield* StreamConnections.recordClose("unresponsive")
            // Spec Events 3: a control frame before closing, even here. The peer may be gone, so it is best effort:
            // dropped once written to the socket, or after 1 s (a full send buffer) without waiting for the peer.
            const gone = close("unresponsive", "no pong since the previous ping")
            yield* Effect.async<void>((resume) => {
              ws.send(controlFrame(gone.code, gone.message), () => resume(Effect.void))
            }).pipe(Effect.timeout("1 second"), Effect.ignore)
            return ws.terminate()
          }
          answered = false
          if (ws.readyState === WebSocket.OPEN) ws.ping()
        }
      }).pipe(Effect.forkScoped)

      const tooLarge = close("message_too_large", `inbound messages are at most ${STREAM_LIMITS.maxInboundBytes} bytes`)
      limitInbound(ws, () => {
        // ws closes with 1009 right after this returns: the control frame must go out now.
        if (state.closing || ws.readyState !== WebSocket.OPEN) return
        state.closing = true
        ws.send(controlFrame(tooLarge.code, tooLarge.message))
        Effect.runSync(StreamConnections.recordClose(tooLarge.code))
        violation(tooLarge)
      })

      const finish = (c: Close) =>
        Effect.suspend(() => {
          if (state.closing) return Effect.void
          state.closing = true
          if (ws.readyState === WebSocket.OPEN) {
            ws.send(controlFrame(c.code, c.message))
            ws.close(CONTROL_CODES[c.code], c.code)
          }
          return StreamConnections.recordClose(c.code)
        })
      // The slot is held until the socket is really closed: the close handshake gets a short grace
      // (a slow consumer reads nothing, not even its close frame), then the socket is dropped.
      const linger = (grace: Duration.DurationInput) =>
        Fiber.await(reader).pipe(
          Effect.timeoutOption(grace),
          Effect.flatMap((done) => (Option.isNone(done) ? Effect.sync(() => ws.terminate()) : Effect.void)),
        )

      const conversation = Effect.gen(function* () {
        const text = yield* Deferred.await(first).pipe(Effect.timeoutOption(STREAM_LIMITS.subscribeTimeout))
        if (Option.isNone(text)) {
          return close("subscribe_timeout", "no subscription within 5 s of the upgrade")
        }
        const subscribed = yield* parseSubscription(text.value, env)
        const refused = yield* env.admit(subscribed.token !== undefined)
        if (refused !== undefined) return close("too_many_connections", refused)
        const streaming = pump(ws, netSocket, subscribed, env)
        return subscribed.token === undefined
          ? yield* streaming
          : yield* Effect.raceFirst(streaming, recheckAuth(subscribed.token, env))
      }).pipe(
        Effect.catchAll((c: Close) => Effect.succeed(c)),
        Effect.catchAllCause((cause) =>
          Cause.isInterruptedOnly(cause)
            ? Effect.failCause(cause)
            : Effect.logError("stream session failed", Cause.squash(cause)).pipe(
                Effect.as(close("internal", "internal error; reconnect and resume from the last next_cursor")),
              ),
        ),
      )

      const outcome = yield* Effect.raceAll([
        conversation.pipe(Effect.map(Option.some)),
        Deferred.await(stop).pipe(Effect.map(Option.some)),
        Fiber.await(reader).pipe(Effect.as(Option.none<Close>())),
      ]).pipe(
        Effect.onInterrupt(() =>
          Effect.suspend(() => {
            if (state.closing) return Effect.void
            if (ws.readyState !== WebSocket.OPEN) {
              state.closing = true
              return StreamConnections.recordClose("peer")
            }
            return finish(
              close("shutdown", "the server is shutting down; reconnect and resume from the last next_cursor"),
            ).pipe(Effect.zipRight(linger("2 seconds")))
          }),
        ),
      )
      if (Option.isSome(outcome)) {
        yield* finish(outcome.value)
        return yield* linger(outcome.value.code === "slow_consumer" ? "1 second" : "2 seconds")
      }
      if (!state.closing) {
        state.closing = true
        yield* StreamConnections.recordClose("peer")
      }
    }),
  )
