import { randomUUID } from "node:crypto"
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http"
import type { Duplex } from "node:stream"
import { Effect, Schema } from "effect"
import { InvalidRequest, ServiceUnavailable } from "../Domain/Errors.ts"
import { HealthDegraded } from "../Domain/Health.ts"
import { acceptRequestId, CurrentRequestId } from "../Domain/RequestId.ts"
import { encodeEnvelope } from "./Errors.ts"

/** Seconds a client is asked to wait (Retry-After) when it arrives before the API is attached. */
const RETRY_AFTER_SECONDS = 1

/** Status and body for a request that came before the app: by its path (the query left off). */
const earlyAnswer = (path: string, id: string, now: Date): { readonly status: number; readonly body: unknown } => {
  if (path === "/health/live") return { status: 200, body: { status: "live" } }
  if (path === "/health") {
    const starting = new HealthDegraded({
      status: "degraded",
      ready: false,
      server_time: now.toISOString(),
      pending_transactions: 0,
      chains: [],
      journal_unpublished: 0,
      journal_oldest_unpublished_seconds: 0,
      cluster: { actors: [], mailbox_depth: 0, runners: [] },
      alerts: [],
    })
    return { status: 503, body: Schema.encodeSync(HealthDegraded)(starting) }
  }
  const error = new ServiceUnavailable({ message: "the service is starting; retry in a moment" })
  return {
    status: ServiceUnavailable.status,
    body: Effect.runSync(Effect.locally(encodeEnvelope(error), CurrentRequestId, id)),
  }
}

/**
 * The API's node server. `@effect/platform-node` listens as soon as the server is built and attaches the app's
 * `request` listener only once the API's layers are built (src/Http/Server.ts): node leaves a request that arrives in
 * between unanswered, so its client waits for its own timeout (the devnet's start-up poll, whose timeout is 2 s,
 * lost ~1.5 s of a ~9.5 s start to it). Until another `request` listener is added, each request is answered here
 * with the catalogue's 503 `SERVICE_UNAVAILABLE` (retryable) through the one envelope encoder, with `Retry-After`,
 * `x-request-id` and `x-server-time`; then this listener removes itself and the app answers everything. The spec's
 * two unversioned routes keep their own shapes: `/health` answers 503 with the health body (never the envelope):
 * `degraded`, not ready, no chain checked yet, and 0 for the counts it has not read; `/health/live` answers 200
 * `{"status":"live"}` (the process is alive). No CORS headers: a browser's preflight in that window fails and is
 * retried as any failed request. `early` is told of each such answer (the access line's stand-in: method, status
 * and request id; never the path, which can hold ids).
 */
export const startingServer =
  (
    early: (method: string, status: number, requestId: string) => void = () => undefined,
    // A request node's parser refused (answered here, never seen by the app): its request id and why.
    refused: (requestId: string, reason: string) => void = () => undefined,
  ) =>
  (): Server => {
    // Node's own Host check answers a bare 400 (no envelope, no request id): the framework makes it instead
    // (requireHost, src/Http/GlobalMiddleware.ts).
    const server = createServer({ requireHostHeader: false })
    const answer = (req: IncomingMessage, res: ServerResponse) => {
      const id = acceptRequestId(req.headers["x-request-id"] as string | undefined) ?? randomUUID()
      const now = new Date()
      const { status, body } = earlyAnswer((req.url ?? "/").split("?")[0]!, id, now)
      const text = JSON.stringify(body)
      res.writeHead(status, {
        // The body is not read: the connection closes after the answer (the next one finds the app attached).
        connection: "close",
        "content-type": "application/json",
        "content-length": Buffer.byteLength(text),
        ...(status === 503 ? { "retry-after": String(RETRY_AFTER_SECONDS) } : {}),
        "x-request-id": id,
        "x-server-time": String(now.getTime()),
      })
      res.end(text)
      early(req.method ?? "", status, id)
    }
    server.on("request", answer)
    // Requests node refuses before any app sees them get the envelope (through the one encoder), not node's bare
    // status line: an `Expect` other than 100-continue (node's 417), and what its parser rejects (malformed, headers
    // over its limit). Both are refusals, never answers to a route, and close the connection.
    const refusal = (id: string, message: string) => {
      const text = JSON.stringify(
        Effect.runSync(Effect.locally(encodeEnvelope(new InvalidRequest({ message })), CurrentRequestId, id)),
      )
      const head = {
        connection: "close",
        "content-type": "application/json",
        "content-length": String(Buffer.byteLength(text)),
        "x-request-id": id,
        "x-server-time": String(Date.now()),
      }
      return { text, head }
    }
    server.on("checkExpectation", (_req: IncomingMessage, res: ServerResponse) => {
      const id = randomUUID()
      const { text, head } = refusal(id, "Expect supports only 100-continue")
      res.writeHead(InvalidRequest.status, head).end(text)
      refused(id, "expectation")
    })
    server.on("clientError", (error: NodeJS.ErrnoException, socket: Duplex) => {
      if (!socket.writable || error.code === "ECONNRESET") {
        socket.destroy()
        return
      }
      const id = randomUUID()
      const { text, head } = refusal(
        id,
        error.code === "HPE_HEADER_OVERFLOW"
          ? "the request's headers are too large"
          : error.code === "ERR_HTTP_REQUEST_TIMEOUT"
            ? "the request was not received in time"
            : "malformed HTTP request",
      )
      const lines = Object.entries(head).map(([k, v]) => `${k}: ${v}\r\n`)
      socket.end(`HTTP/1.1 ${InvalidRequest.status} Bad Request\r\n${lines.join("")}\r\n${text}`)
      refused(id, error.code ?? "unknown")
    })
    const attached = (event: string | symbol) => {
      if (event !== "request") return
      server.off("request", answer)
      server.off("newListener", attached)
    }
    server.on("newListener", attached)
    return server
  }
