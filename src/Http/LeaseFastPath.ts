import { randomUUID } from "node:crypto"
import type { IncomingMessage, Server, ServerResponse } from "node:http"
import { Readable } from "node:stream"
import type { ObserveRequest } from "../Observability/HttpObserver.ts"
import { sha256 } from "../SecureRandom.ts"
import type { CredentialRenewOutcome } from "../Store/QuoteIdentities.ts"
import { corsHeaders } from "./FastPath.ts"
import { acceptRequestId } from "./RequestId.ts"

/**
 * `PUT /v1/quote-identities/{id}/lease` by a maker bot's `mk_` credential, answered ahead of the
 * framework in one database round trip (renewLeaseWithCredential: authenticate, scope and binding,
 * request budget, renewal). Bots renew every few seconds, and the framework's pipeline (routing,
 * middleware, schema decoding and encoding, fibers) was most of a renewal's CPU time.
 *
 * Only the plain success is answered here: a request of exactly this shape (lowercase UUID path, no
 * query, `Bearer mk_…`, `content-type: application/json`, a small body with a Content-Length that is
 * exactly `{"ttl_seconds": 5..120}`), whose credential is live, has the quote scope, is bound to the
 * identity and has budget left. Anything else, including every error, goes to the framework with the
 * body replayed, and the statement wrote nothing for it (no token taken, nothing renewed), so the
 * framework answers exactly as it always does. The one answer made here besides success is a
 * revocation that won the row lock after the budget was charged: 409 STATE_CONFLICT, as the
 * framework would say it. test/integration/lease-fast-path.test.ts compares both paths.
 */
export interface LeaseFastPathOptions {
  /** Runs the renewal statement (the Effect runtime's database). */
  readonly renew: (p: { tokenHash: Buffer; id: string; ttlSeconds: number }) => Promise<CredentialRenewOutcome>
  readonly origins: ReadonlyArray<string>
  readonly exposedHeaders: ReadonlyArray<string>
  /** The Effect runtime's clock (never the ambient one). */
  readonly now: () => number
  /** Metrics and the access line of each request answered here (src/Observability/HttpObserver.ts). */
  readonly observe?: ObserveRequest
}

const PATH = /^\/v1\/quote-identities\/([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\/lease$/
const CREDENTIAL = /^Bearer (mk_[A-Za-z0-9_-]{13,253})$/
/** JSON whitespace only, and a JSON integer (no leading zeros): what JSON.parse reads the same way. */
const BODY = /^[ \t\n\r]*\{[ \t\n\r]*"ttl_seconds"[ \t\n\r]*:[ \t\n\r]*(0|[1-9][0-9]{0,2})[ \t\n\r]*\}[ \t\n\r]*$/
/** Larger bodies are not this request's plain shape: the framework (and its body limit) handles them. */
const MAX_BODY = 64

export const installLeaseFastPath = (server: Server, options: LeaseFastPathOptions) => {
  const cors = corsHeaders(options.origins, options.exposedHeaders.join(","))
  const emit = server.emit.bind(server) as (event: string, ...args: Array<unknown>) => boolean

  const started = new WeakMap<IncomingMessage, number>()
  const answer = (req: IncomingMessage, res: ServerResponse, status: number, body: (id: string) => string) => {
    const id = acceptRequestId(header(req, "x-request-id")) ?? randomUUID()
    const bytes = Buffer.from(body(id))
    res.writeHead(status, {
      "content-type": "application/json",
      "content-length": bytes.length,
      "x-request-id": id,
      "x-server-time": String(options.now()),
      ...cors(header(req, "origin")),
    })
    res.end(bytes)
    options.observe?.("PUT", req.url ?? "", status, started.get(req) ?? performance.now(), id)
  }

  const handle = async (req: IncomingMessage, res: ServerResponse, id: string, token: string) => {
    const body = await readAll(req)
    const ttl = BODY.exec(body.toString("utf8"))?.[1]
    const ttlSeconds = ttl === undefined ? Number.NaN : Number(ttl)
    if (!(ttlSeconds >= 5 && ttlSeconds <= 120)) return emit("request", replay(req, body), res)
    const outcome = await options.renew({ tokenHash: sha256(token), id, ttlSeconds }).catch(() => undefined)
    switch (outcome?._tag) {
      case "Renewed": {
        const { generation, lease_expires_at } = outcome
        return answer(req, res, 200, () =>
          JSON.stringify({ identity_id: id, generation, expires_at: lease_expires_at.toISOString() }),
        )
      }
      case "Revoked":
        return answer(req, res, 409, (requestId) =>
          JSON.stringify({
            error: {
              code: "STATE_CONFLICT",
              message: "this quote identity is revoked",
              request_id: requestId,
              retryable: false,
            },
          }),
        )
      default:
        // Skipped (or the statement failed, writing nothing): the framework answers.
        return emit("request", replay(req, body), res)
    }
  }

  server.emit = ((event: string, ...args: Array<unknown>) => {
    if (event === "request") {
      const req = args[0] as IncomingMessage
      const path = req.method === "PUT" ? PATH.exec(req.url ?? "") : null
      const token = path ? CREDENTIAL.exec(header(req, "authorization") ?? "")?.[1] : undefined
      const length = Number(header(req, "content-length") ?? Number.NaN)
      if (
        path &&
        token !== undefined &&
        header(req, "content-type") === "application/json" &&
        req.headers["transfer-encoding"] === undefined &&
        length > 0 &&
        length <= MAX_BODY
      ) {
        const res = args[1] as ServerResponse
        if (options.observe !== undefined) started.set(req, performance.now())
        handle(req, res, path[1]!, token).catch(() => {
          if (!res.headersSent) res.destroy()
        })
        return true
      }
    }
    return emit(event, ...args)
  }) as typeof server.emit
}

const readAll = (req: IncomingMessage) =>
  new Promise<Buffer>((resolve, reject) => {
    const chunks: Array<Buffer> = []
    req.on("data", (c: Buffer) => chunks.push(c))
    req.on("end", () => resolve(Buffer.concat(chunks)))
    req.on("error", reject)
  })

/** The request again, its body already read: what the framework reads is `body`, everything else is `req`'s. */
const replay = (req: IncomingMessage, body: Buffer): IncomingMessage =>
  Object.assign(Readable.from([body]), {
    url: req.url,
    method: req.method,
    headers: req.headers,
    rawHeaders: req.rawHeaders,
    httpVersion: req.httpVersion,
    socket: req.socket,
    connection: req.socket,
  }) as unknown as IncomingMessage

const header = (req: IncomingMessage, name: string) => {
  const v = req.headers[name]
  return Array.isArray(v) ? v[0] : v
}
