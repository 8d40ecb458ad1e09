import { randomUUID } from "node:crypto"
import type { IncomingMessage, Server, ServerResponse } from "node:http"
import type { ObserveRequest } from "../Observability/HttpObserver.ts"
import { acceptRequestId } from "./RequestId.ts"

/**
 * Public, read-only GET routes whose body is fixed but for the clock, answered before a request
 * enters the framework: GET /v1/info is polled by every client, and one fiber pipeline per poll is
 * most of its cost. A fast route answers exactly what the framework would (same body, the same
 * x-request-id / x-server-time and CORS headers; test/integration/fast-path.test.ts compares the
 * two); anything else (other methods, a query string, a body) goes to the framework untouched.
 */
export interface FastRoute {
  readonly path: string
  readonly render: (nowMs: number) => string
}

export interface FastPathOptions {
  readonly routes: ReadonlyArray<FastRoute>
  /** The app origins, as the framework's CORS middleware is configured. */
  readonly origins: ReadonlyArray<string>
  readonly exposedHeaders: ReadonlyArray<string>
  /** The Effect runtime's clock (never the ambient one). */
  readonly now: () => number
  /** Metrics and the access line of each request answered here (src/Observability/HttpObserver.ts). */
  readonly observe?: ObserveRequest
}

/** The CORS headers Effect's cors middleware adds to a simple (non-preflight) response. */
export const corsHeaders = (origins: ReadonlyArray<string>, exposed: string) => (origin: string | undefined) => {
  const headers: Record<string, string> = {}
  if (origins.length === 1) {
    headers["access-control-allow-origin"] = origins[0]!
    headers.vary = "Origin"
  } else if (origin !== undefined && origins.includes(origin)) {
    headers["access-control-allow-origin"] = origin
    headers.vary = "Origin"
  } else if (origins.length === 0) {
    headers["access-control-allow-origin"] = "*"
  }
  if (exposed.length > 0) headers["access-control-expose-headers"] = exposed
  return headers
}

export const installFastPaths = (server: Server, options: FastPathOptions) => {
  const byPath = new Map(options.routes.map((r) => [r.path, r]))
  const cors = corsHeaders(options.origins, options.exposedHeaders.join(","))
  const emit = server.emit.bind(server) as (event: string, ...args: Array<unknown>) => boolean
  server.emit = ((event: string, ...args: Array<unknown>) => {
    if (event === "request") {
      const req = args[0] as IncomingMessage
      const route = req.method === "GET" ? byPath.get(req.url ?? "") : undefined
      if (route && req.headers["content-length"] === undefined && req.headers["transfer-encoding"] === undefined) {
        const res = args[1] as ServerResponse
        const started = performance.now()
        const now = options.now()
        const body = Buffer.from(route.render(now))
        const id = acceptRequestId(header(req, "x-request-id")) ?? randomUUID()
        res.writeHead(200, {
          "content-type": "application/json",
          "content-length": body.length,
          "x-request-id": id,
          "x-server-time": String(now),
          ...cors(header(req, "origin")),
        })
        res.end(body)
        options.observe?.("GET", route.path, 200, started, id)
        return true
      }
    }
    return emit(event, ...args)
  }) as typeof server.emit
}

const header = (req: IncomingMessage, name: string) => {
  const v = req.headers[name]
  return Array.isArray(v) ? v[0] : v
}
