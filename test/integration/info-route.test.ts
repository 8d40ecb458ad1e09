/**
 * GET /v1/info goes through the framework like every route (it once had a raw fast path ahead of it): the
 * body, the CORS headers for each kind of origin, the request id (a valid one echoed, else a fresh UUID) and
 * the server time; a query string changes nothing; other methods get the framework's 405 envelope.
 */
import { HttpServer } from "@effect/platform"
import { expect, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { AppConfig } from "../../src/Config.ts"
import { infoFixed } from "../../src/Info/Body.ts"
import { TestDatabaseLive } from "../support/Database.ts"
import { rawRequest } from "../support/Http.ts"
import { testAppConfig } from "../support/TestConfig.ts"
import { TestHttpLive } from "../support/TestServer.ts"

const origins = ["https://app.example.com", "https://admin.example.com"]
const Live = TestHttpLive.pipe(
  Layer.provideMerge(TestDatabaseLive),
  Layer.provideMerge(testAppConfig({ app_origins: origins })),
)

const EXPOSED = "x-request-id,x-server-time,retry-after,x-event-cursor"

const comparable = (headers: Record<string, unknown>) => {
  const { date: _d, "x-request-id": _r, "x-server-time": _t, connection: _c, "keep-alive": _k, ...rest } = headers
  return rest
}

layer(Live, { timeout: "120 seconds", excludeTestServices: true })("GET /v1/info through the framework", (it) => {
  it.effect("body, status, CORS, request id and time headers; a query string answers the same", () =>
    Effect.gen(function* () {
      const server = yield* HttpServer.HttpServer
      const base = `http://127.0.0.1:${(server.address as { port: number }).port}`
      const { api_version, ...fixed } = infoFixed(yield* AppConfig)
      const cases: Array<[Record<string, string>, string | undefined]> = [
        [{}, undefined],
        [{ origin: origins[0]! }, origins[0]],
        [{ origin: origins[1]! }, origins[1]],
        [{ origin: "https://evil.example" }, undefined],
        [{ "x-request-id": "3f1c2a9e-8b7d-4c6e-9a5b-1d2e3f4a5b6c" }, undefined],
      ]
      for (const [headers, allowed] of cases) {
        const a = yield* rawRequest(`${base}/v1/info`, { headers })
        // A query the route ignores (a bare `?` would not do: node's client sends `/v1/info` for it).
        const b = yield* rawRequest(`${base}/v1/info?probe=1`, { headers })
        expect(a.status).toBe(200)
        expect(b.status).toBe(200)
        const { server_time: ta, ...bodyA } = a.json as Record<string, unknown>
        const { server_time: tb, ...bodyB } = b.json as Record<string, unknown>
        expect(bodyA).toEqual(bodyB)
        expect(bodyA).toEqual(JSON.parse(JSON.stringify({ api_version, ...fixed })))
        // The schema's order: api_version, server_time, then the rest.
        expect(Object.keys(a.json as object)).toEqual(["api_version", "server_time", ...Object.keys(fixed)])
        expect(Object.keys(a.json as object)).toEqual(Object.keys(b.json as object))
        expect(Math.abs(Date.parse(ta as string) - Date.parse(tb as string))).toBeLessThan(5000)
        expect(comparable(a.headers)).toEqual(comparable(b.headers))
        expect(a.headers["content-type"]).toBe("application/json")
        expect(a.headers["access-control-allow-origin"]).toBe(allowed)
        expect(a.headers["access-control-expose-headers"]).toBe(EXPOSED)
        if (allowed !== undefined) expect(a.headers.vary).toBe("Origin")
        expect(a.headers["x-request-id"]).toMatch(/^[0-9a-f-]{36}$/)
        expect(String(a.headers["x-server-time"])).toMatch(/^\d{13}$/)
        if ("x-request-id" in headers) {
          expect(a.headers["x-request-id"]).toBe(headers["x-request-id"])
          expect(b.headers["x-request-id"]).toBe(headers["x-request-id"])
        } else expect(a.headers["x-request-id"]).not.toBe(b.headers["x-request-id"])
      }
      // Other methods get the framework's 405 envelope, with the request id in the body and the CORS headers.
      const post = yield* rawRequest(`${base}/v1/info`, {
        method: "POST",
        headers: { "content-type": "application/json", origin: origins[0]! },
        body: "{}",
      })
      expect(post.status).toBe(405)
      const error = (post.json as { error: { code: string; request_id: string; retryable: boolean } }).error
      expect(error).toMatchObject({ code: "METHOD_NOT_ALLOWED", retryable: false })
      expect(error.request_id).toBe(post.headers["x-request-id"])
      expect(post.headers["access-control-allow-origin"]).toBe(origins[0])
      expect(post.headers["access-control-expose-headers"]).toBe(EXPOSED)
    }),
  )
})
