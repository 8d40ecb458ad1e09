import { HttpServer } from "@effect/platform"
import { expect, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { TestDatabaseLive } from "../support/Database.ts"
import { rawRequest } from "../support/Http.ts"
import { testAppConfig } from "../support/TestConfig.ts"
import { TestHttpLive } from "../support/TestServer.ts"

const origins = ["https://app.example.com", "https://admin.example.com"]
const Live = TestHttpLive.pipe(
  Layer.provideMerge(TestDatabaseLive),
  Layer.provideMerge(testAppConfig({ app_origins: origins })),
)

const comparable = (headers: Record<string, unknown>) => {
  const { date: _d, "x-request-id": _r, "x-server-time": _t, connection: _c, "keep-alive": _k, ...rest } = headers
  return rest
}

layer(Live, { timeout: "120 seconds", excludeTestServices: true })("fast path for GET /v1/info", (it) => {
  it.effect("answers what the framework answers: body, status, CORS, request id and time headers", () =>
    Effect.gen(function* () {
      const server = yield* HttpServer.HttpServer
      const fast = `http://127.0.0.1:${(server.address as { port: number }).port}`
      for (const headers of [
        {},
        { origin: origins[0]! },
        { origin: origins[1]! },
        { origin: "https://evil.example" },
        { "x-request-id": "3f1c2a9e-8b7d-4c6e-9a5b-1d2e3f4a5b6c" },
      ]) {
        const a = yield* rawRequest(`${fast}/v1/info`, { headers })
        // The framework's own answer for the same request (a query string bypasses the fast path).
        const b = yield* rawRequest(`${fast}/v1/info?`, { headers })
        expect(a.status).toBe(200)
        expect(b.status).toBe(200)
        const { server_time: ta, ...bodyA } = a.json as Record<string, unknown>
        const { server_time: tb, ...bodyB } = b.json as Record<string, unknown>
        expect(bodyA).toEqual(bodyB)
        expect(Object.keys(a.json as object)).toEqual(Object.keys(b.json as object))
        expect(Math.abs(Date.parse(ta as string) - Date.parse(tb as string))).toBeLessThan(5000)
        expect(comparable(a.headers)).toEqual(comparable(b.headers))
        expect(a.headers["x-request-id"]).toMatch(/^[0-9a-f-]{36}$/)
        expect(String(a.headers["x-server-time"])).toMatch(/^\d{13}$/)
        if ("x-request-id" in headers) expect(a.headers["x-request-id"]).toBe(headers["x-request-id"])
      }
      // Other methods and bodies still reach the framework (405 envelope).
      const post = yield* rawRequest(`${fast}/v1/info`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: "{}",
      })
      expect(post.status).toBe(405)
    }),
  )
})
