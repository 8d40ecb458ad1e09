import type { Duplex } from "node:stream"
import type { Socket } from "@effect/platform"
import { Deferred, Effect, Fiber, Option } from "effect"
import { WebSocket } from "ws"
import { StreamConnections } from "./Connections.ts"
import { CONTROL_CODES, controlFrame, STREAM_LIMITS } from "./StreamProtocol.ts"

/*
 * The stream's socket below the session: the raw `ws` WebSocket under the platform's Socket (its backlog, inbound
 * limit and close), the wait for a written page, and the refusal of a connection without a slot.
 */

/**
 * The `ws` WebSocket behind an upgraded socket. @effect/platform-node upgrades with its own
 * WebSocketServer and hands out only the Socket abstraction; `ws` marks the network socket with its
 * WebSocket under a symbol described "websocket". The raw object gives the backlog
 * (`bufferedAmount`), the inbound size limit and a close that still works while the platform's
 * reader is being torn down.
 */
const rawWebSocketOf = (netSocket: Duplex): WebSocket | undefined => {
  const key = Object.getOwnPropertySymbols(netSocket).find((s) => s.description === "websocket")
  const ws = key === undefined ? undefined : (netSocket as unknown as Record<symbol, unknown>)[key]
  return ws instanceof WebSocket ? ws : undefined
}

interface ReceiverInternals {
  _maxPayload?: number
  prependListener?: (event: string, listener: (error: { code?: string }) => void) => void
}

/**
 * Lowers ws's inbound message limit (the platform's server keeps ws's 100 MiB default) so that an
 * oversized message is refused while its header is parsed, before it is buffered. ws then closes
 * with 1009; `onTooLarge` runs first, so the control frame goes out before the close frame. Returns
 * false when the receiver is not reachable (the length is still checked on every message).
 */
export const limitInbound = (ws: WebSocket, onTooLarge: () => void): boolean => {
  const receiver = (ws as unknown as { _receiver?: ReceiverInternals })._receiver
  if (receiver === undefined || typeof receiver._maxPayload !== "number" || !receiver.prependListener) return false
  receiver._maxPayload = STREAM_LIMITS.maxInboundBytes
  receiver.prependListener("error", (error) => {
    if (error.code === "WS_ERR_UNSUPPORTED_MESSAGE_LENGTH") onTooLarge()
  })
  return true
}

/** Runs the platform's reader and yields the raw WebSocket once the upgrade completed. */
export const openSocket = (socket: Socket.Socket, netSocket: Duplex, onMessage: (data: string | Uint8Array) => void) =>
  Effect.gen(function* () {
    const opened = yield* Deferred.make<WebSocket>()
    const reader = yield* socket
      .runRaw(onMessage, {
        onOpen: Effect.suspend(() => {
          const ws = rawWebSocketOf(netSocket)
          return ws === undefined
            ? Effect.dieMessage("the upgraded socket carries no ws WebSocket (ws internals changed?)")
            : Deferred.succeed(opened, ws)
        }),
      })
      .pipe(Effect.forkScoped)
    const ws = yield* Deferred.await(opened).pipe(
      Effect.raceFirst(Fiber.await(reader).pipe(Effect.zipRight(Effect.fail("closed before open" as const)))),
      Effect.option,
    )
    return { ws, reader }
  })

/** A connection without a slot (the 257th, or beyond its client's share): upgrade, say why, close. */
export const refuseSession = (socket: Socket.Socket, netSocket: Duplex, message: string) =>
  Effect.scoped(
    Effect.gen(function* () {
      const { ws, reader } = yield* openSocket(socket, netSocket, () => {})
      if (Option.isNone(ws)) return
      limitInbound(ws.value, () => {})
      ws.value.send(controlFrame("too_many_connections", message))
      ws.value.close(CONTROL_CODES.too_many_connections, "too_many_connections")
      // Refused sockets do not linger either: a short grace for the close handshake, then dropped.
      const done = yield* Fiber.await(reader).pipe(Effect.timeoutOption("2 seconds"))
      if (Option.isNone(done)) ws.value.terminate()
    }),
  )

/**
 * Waits until the page just written has left the process (the socket's backlog is back under the
 * low-water mark): true when written, false when it stayed blocked for the blocked-send timeout.
 * Pages are read only after the previous one is written, so a subscriber never holds more than one
 * page plus the low-water mark, however slowly its client reads.
 */
export const awaitWritten = (ws: WebSocket, netSocket: Duplex) =>
  Effect.suspend(() => {
    const queued = ws.bufferedAmount
    StreamConnections.recordQueued(queued)
    if (queued <= STREAM_LIMITS.lowWaterBytes) return Effect.succeed(true)
    const drained = Effect.async<void>((resume) => {
      const onDrain = () => resume(Effect.void)
      netSocket.once("drain", onDrain)
      return Effect.sync(() => netSocket.off("drain", onDrain))
    })
    const written = Effect.suspend(() =>
      ws.readyState !== WebSocket.OPEN || ws.bufferedAmount <= STREAM_LIMITS.lowWaterBytes
        ? Effect.succeed(true)
        : Effect.race(drained, Effect.sleep("20 millis")).pipe(Effect.as(false)),
    )
    return written.pipe(
      Effect.repeat({ until: (ok) => ok }),
      Effect.timeoutOption(STREAM_LIMITS.blockedSendTimeout),
      Effect.map(Option.isSome),
    )
  })
