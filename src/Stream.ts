/**
 * Stream (spec GET /v1/stream, DESIGN §9): live journal events over a WebSocket. The service admits connections
 * within the spec's global 256 and the deployment's per-client and token-less shares (src/Stream/Connections.ts,
 * counted over every runner), and serves an upgraded socket from its subscription to its close
 * (src/Stream/StreamSession.ts), reading the journal through the process's one tail (src/Stream/JournalTail.ts).
 * src/Http/StreamRoute.ts only upgrades the request and names the client. Stream sits in the edge tier beside HTTP
 * and does not import it: the route passes plain values (the client's key, the upgraded socket).
 */
import type { Duplex } from "node:stream"
import type { Socket } from "@effect/platform"
import { SqlClient } from "@effect/sql"
import { Context, Duration, Effect, Layer } from "effect"
import { authenticateHeader, CredentialResolver } from "./Auth/Bearer.ts"
import { AppConfig } from "./Config.ts"
import { CredentialResolverLive } from "./Credentials/Resolver.ts"
import { SqlTest } from "./Sql/TestDatabase.ts"
import { type Admission, type Slot, StreamConnections, type StreamShares } from "./Stream/Connections.ts"
import { JournalTail } from "./Stream/JournalTail.ts"
import { STREAM_LIMITS } from "./Stream/StreamProtocol.ts"
import { type SessionEnv, streamSession } from "./Stream/StreamSession.ts"
import { refuseSession } from "./Stream/StreamSocket.ts"

/** The ping interval (spec-free liveness check); tests shorten it. */
export class StreamHeartbeat extends Context.Reference<StreamHeartbeat>()("StreamHeartbeat", {
  defaultValue: (): Duration.DurationInput => STREAM_LIMITS.heartbeat,
}) {}

export class Stream extends Effect.Service<Stream>()("Stream", {
  scoped: Effect.gen(function* () {
    const { deployment } = yield* AppConfig
    const resolver = yield* CredentialResolver
    const tail = yield* JournalTail
    const sql = yield* SqlClient.SqlClient
    const withSql = Effect.provideService(SqlClient.SqlClient, sql)
    const admins = new Set(deployment.admins.map((a) => a.toLowerCase()))
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

    /**
     * Takes a connection slot for `client` (src/Domain/ClientAddress.ts's key) before the upgrade: Admitted with its
     * slot, or Refused with the message the socket is told before it closes (all 256 taken, the client's share
     * taken, or the slots could not be counted).
     */
    const admit = (client: string): Effect.Effect<Admission> =>
      StreamConnections.tryAcquire(client, shares).pipe(withSql, Effect.withSpan("Stream.admit"))

    /**
     * The subscription meets its slot: with a token the slot is kept; without one it needs room among the
     * token-less connections of every runner. Undefined when kept, else why the connection is refused.
     */
    const settle = (slot: Slot, signed: boolean): Effect.Effect<string | undefined> =>
      Effect.map(StreamConnections.settle(slot, signed), (kept) =>
        kept
          ? undefined
          : `the ${shares.anonymous} stream connections without a token are all open; retry later, or subscribe with a token`,
      ).pipe(withSql)

    /** Frees the slot (idempotent); a failed delete leaves a row that stops counting within 10 s. */
    const release = (slot: Slot): Effect.Effect<void> => StreamConnections.release(slot).pipe(withSql)

    /** An admitted connection, from the upgrade to its close; the slot is released however it ends. */
    const serve = (socket: Socket.Socket, netSocket: Duplex, slot: Slot): Effect.Effect<void> =>
      streamSession(socket, netSocket, { ...env, admit: (signed) => settle(slot, signed) }).pipe(
        withSql,
        Effect.ensuring(release(slot)),
      )

    /** A refused connection: upgraded only to be told `too_many_connections` and closed. */
    const refuse = (socket: Socket.Socket, netSocket: Duplex, message: string): Effect.Effect<void> =>
      refuseSession(socket, netSocket, message)

    // This process's slots stay counted while it lives (src/Stream/Connections.ts).
    yield* Effect.forkScoped(StreamConnections.keepAlive.pipe(withSql))

    return {
      admit,
      settle,
      release,
      serve,
      refuse,
      /** This process's figures: connections held, refusals by why, closes by reason, pages by source. */
      stats: StreamConnections.stats,
    } as const
  }),
  dependencies: [JournalTail.Live, CredentialResolverLive],
}) {
  /** The service on a throw-away database (SqlTest); the test gives the AppConfig. */
  static readonly Test = Stream.Default.pipe(Layer.provideMerge(SqlTest))
}
