import type { Duplex } from "node:stream"
import { HttpApiBuilder, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { NodeHttpServerRequest } from "@effect/platform-node"
import { Duration, Effect, Layer, Option } from "effect"
import { InvalidRequest, UpgradeRequired } from "../Domain/Errors.ts"
import { Stream } from "../Stream.ts"
import { ClientIdentity } from "./ClientIdentity.ts"
import { envelopeResponse } from "./Envelope.ts"

export const STREAM_PATH = "/v1/stream"

/** RFC 6455 tokens (`ws`'s rule for a subprotocol name). */
const TOKEN = "[!#$%&'*+\\-.^_`|~0-9A-Za-z]+"
const PROTOCOLS = new RegExp(`^${TOKEN}(?:[ \t]*,[ \t]*${TOKEN})*$`)

/**
 * Why `ws` would refuse this handshake, checked first: `ws` answers those itself (a text 400, not the envelope)
 * and the platform's upgrade then never resumes, leaving the request's fiber suspended. At least as strict as
 * `ws` 8's handleUpgrade: a key of 16 bytes in base64, version 13 or 8, well-formed distinct subprotocols.
 */
const handshakeProblem = (request: HttpServerRequest.HttpServerRequest): string | undefined => {
  const key = request.headers["sec-websocket-key"]
  if (key === undefined || !/^[+/0-9A-Za-z]{22}==$/.test(key)) {
    return "Sec-WebSocket-Key is missing or is not 16 bytes in base64"
  }
  const version = request.headers["sec-websocket-version"]
  if (version !== "13" && version !== "8") return "Sec-WebSocket-Version must be 13"
  const protocols = request.headers["sec-websocket-protocol"]
  if (protocols !== undefined) {
    const names = protocols.split(",").map((p) => p.trim())
    if (!PROTOCOLS.test(protocols) || new Set(names).size !== names.length) {
      return "Sec-WebSocket-Protocol is not a list of distinct tokens"
    }
  }
  return undefined
}

/** A backstop: an upgrade `ws` aborted anyway never resumes; the request's fiber ends after this. */
const UPGRADE_TIMEOUT = Duration.seconds(10)

/**
 * `GET /v1/stream`: the WebSocket of live events (spec Events, DESIGN §9), served by the platform's
 * built-in upgrade on the same router, middleware and request id as every other route. A request
 * without `Upgrade: websocket` answers 426 UPGRADE_REQUIRED in the error envelope. A connection
 * slot is taken before the upgrade (the Stream service, src/Stream.ts); beyond 256 open connections on all
 * runners, or beyond the client's share, the socket is upgraded only to receive `too_many_connections` and be
 * closed. A subscription without a token beyond the anonymous share gets the same answer.
 */
const streamRoute = HttpApiBuilder.Router.use((router) =>
  Effect.gen(function* () {
    const stream = yield* Stream
    const identity = yield* ClientIdentity
    yield* router.get(
      STREAM_PATH,
      Effect.gen(function* () {
        const request = yield* HttpServerRequest.HttpServerRequest
        const upgradeRequested = request.headers.upgrade?.toLowerCase() === "websocket"
        const problem = upgradeRequested ? handshakeProblem(request) : undefined
        if (problem !== undefined) return yield* envelopeResponse(new InvalidRequest({ message: problem }))
        const socket = upgradeRequested
          ? yield* request.upgrade.pipe(
              Effect.timeoutOption(UPGRADE_TIMEOUT),
              Effect.catchAll(() => Effect.succeedNone),
            )
          : Option.none()
        if (Option.isNone(socket)) {
          return yield* envelopeResponse(
            new UpgradeRequired({
              message: `${STREAM_PATH} is a WebSocket: connect with Upgrade: websocket and send a subscription frame`,
            }),
            { headers: { upgrade: "websocket" } },
          )
        }
        const netSocket: Duplex = NodeHttpServerRequest.toIncomingMessage(request).socket
        const admission = yield* stream.admit(identity.of(request).key)
        if (admission._tag === "Refused") yield* stream.refuse(socket.value, netSocket, admission.message)
        else yield* stream.serve(socket.value, netSocket, admission.slot)
        return HttpServerResponse.empty()
      }),
    )
  }),
)

/** The stream route and the Stream service (its journal tail is the process's one); add it like the OpenAPI route. */
export const StreamLive = streamRoute.pipe(Layer.provide(Stream.Default), Layer.provide(ClientIdentity.Live))
