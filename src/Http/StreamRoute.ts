import type { Duplex } from "node:stream"
import { HttpApiBuilder, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { NodeHttpServerRequest } from "@effect/platform-node"
import { Effect, Layer, Option } from "effect"
import { UpgradeRequired } from "../Domain/Errors.ts"
import { Stream } from "../Stream.ts"
import { ClientIdentity } from "./ClientIdentity.ts"
import { envelopeResponse } from "./Envelope.ts"

export const STREAM_PATH = "/v1/stream"

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
        const socket = upgradeRequested ? yield* Effect.option(request.upgrade) : Option.none()
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
