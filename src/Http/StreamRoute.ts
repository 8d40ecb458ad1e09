import type { Duplex } from "node:stream"
import { HttpApiBuilder, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { NodeHttpServerRequest } from "@effect/platform-node"
import { SqlClient } from "@effect/sql"
import { Context, Duration, Effect, Layer, Option } from "effect"
import { authenticateHeader, CredentialResolver } from "../Auth/Bearer.ts"
import { AppConfig } from "../Config.ts"
import { CredentialResolverLive } from "../Credentials/Resolver.ts"
import { UpgradeRequired } from "../Domain/Errors.ts"
import { StreamConnections, type StreamShares } from "../Stream/Connections.ts"
import { JournalTail } from "../Stream/JournalTail.ts"
import { STREAM_LIMITS } from "../Stream/StreamProtocol.ts"
import { refuseSession, type SessionEnv, streamSession } from "../Stream/StreamSession.ts"
import { ClientIdentity } from "./ClientIdentity.ts"
import { envelopeResponse } from "./Envelope.ts"

export const STREAM_PATH = "/v1/stream"

/** The ping interval (spec-free liveness check); tests shorten it. */
export class StreamHeartbeat extends Context.Reference<StreamHeartbeat>()("StreamHeartbeat", {
  defaultValue: (): Duration.DurationInput => STREAM_LIMITS.heartbeat,
}) {}

/**
 * `GET /v1/stream`: the WebSocket of live events (spec Events, DESIGN §9), served by the platform's
 * built-in upgrade on the same router, middleware and request id as every other route. A request
 * without `Upgrade: websocket` answers 426 UPGRADE_REQUIRED in the error envelope. A connection
 * slot is taken before the upgrade (src/Stream/Connections.ts); beyond 256 open connections on all runners, or
 * beyond the client's share, the socket is upgraded only to receive `too_many_connections` and be
 * closed. A subscription without a token beyond the anonymous share gets the same answer.
 */
const streamRoute = HttpApiBuilder.Router.use((router) =>
  Effect.gen(function* () {
    const { deployment } = yield* AppConfig
    const resolver = yield* CredentialResolver
    const tail = yield* JournalTail
    const sql = yield* SqlClient.SqlClient
    const admins = new Set(deployment.admins.map((a) => a.toLowerCase()))
    const identity = yield* ClientIdentity
    const shares: StreamShares = {
      perClient: deployment.limits.stream_connections_per_client,
      anonymous: deployment.limits.stream_anonymous_connections,
    }
    const env: Omit<SessionEnv, "admit"> = {
      tail,
      // The subscription token authenticates exactly as `Authorization: Bearer <token>` would.
      authenticate: (token) => authenticateHeader(`Bearer ${token}`, admins, resolver),
      venues: new Set(deployment.venues.map((v) => v.id)),
      heartbeat: Duration.decode(yield* StreamHeartbeat),
    }
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
        const admission = yield* StreamConnections.tryAcquire(identity.of(request).key, shares)
        if (admission._tag === "Refused") {
          yield* refuseSession(socket.value, netSocket, admission.message)
          return HttpServerResponse.empty()
        }
        const { slot } = admission
        const admit = (signed: boolean) =>
          Effect.map(StreamConnections.settle(slot, signed), (kept) =>
            kept
              ? undefined
              : `the ${shares.anonymous} stream connections without a token are all open; retry later, or subscribe with a token`,
          ).pipe(Effect.provideService(SqlClient.SqlClient, sql))
        yield* streamSession(socket.value, netSocket, { ...env, admit }).pipe(
          Effect.ensuring(StreamConnections.release(slot)),
        )
        return HttpServerResponse.empty()
      }).pipe(Effect.provideService(SqlClient.SqlClient, sql)),
    )
    // This process's slots stay counted while it lives (src/Stream/Connections.ts).
    yield* Effect.forkScoped(StreamConnections.keepAlive.pipe(Effect.provideService(SqlClient.SqlClient, sql)))
  }),
)

/** The stream route with its process-wide journal tail; add it to the HTTP server like the OpenAPI route. */
export const StreamLive = streamRoute.pipe(
  Layer.provide(JournalTail.Live),
  Layer.provide(CredentialResolverLive),
  Layer.provide(ClientIdentity.Live),
)
