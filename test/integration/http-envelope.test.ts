import { connect as tcpConnect } from "node:net"
import { expect, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { TestDatabaseLive } from "../support/Database.ts"
import { rawRequest } from "../support/Http.ts"
import { TEST_ORIGIN, testAppConfig } from "../support/TestConfig.ts"
import { baseUrl, TestHttpLive } from "../support/TestServer.ts"

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/

const Live = TestHttpLive.pipe(Layer.provideMerge(TestDatabaseLive), Layer.provideMerge(testAppConfig()))

const json = { "content-type": "application/json" }

/** Every error must be the envelope, with request_id equal to the header and the standard headers. */
const expectEnvelope = (
  res: { status: number; headers: Record<string, unknown>; json: unknown },
  status: number,
  code: string,
) => {
  expect(res.status).toBe(status)
  const body = res.json as { error: { code: string; message: string; request_id: string; retryable: boolean } }
  expect(Object.keys(body)).toEqual(["error"])
  expect(Object.keys(body.error).sort()).toEqual(["code", "message", "request_id", "retryable"])
  expect(body.error.code).toBe(code)
  expect(typeof body.error.message).toBe("string")
  expect(body.error.request_id).toMatch(UUID)
  expect(body.error.request_id).toBe(res.headers["x-request-id"])
  expect(String(res.headers["x-server-time"])).toMatch(/^\d{13}$/)
  return body.error
}

/**
 * One request written as raw bytes, and the status, headers and body of its answer (read until Content-Length;
 * a 101 has none). Node's client hangs up on a non-101 answer to an upgrade, and refuses to send malformed requests.
 */
const rawExchange = (base: string, request: string) =>
  Effect.promise(
    () =>
      new Promise<{ status: number; headers: Record<string, string>; body: string }>((resolve, reject) => {
        const socket = tcpConnect(Number(new URL(base).port), "127.0.0.1")
        let buffer = Buffer.alloc(0)
        socket.on("error", reject)
        socket.write(request)
        socket.on("data", (data: Buffer) => {
          buffer = Buffer.concat([buffer, data])
          const end = buffer.indexOf("\r\n\r\n")
          if (end < 0) return
          const [statusLine, ...rest] = buffer.subarray(0, end).toString("latin1").split("\r\n")
          const head: Record<string, string> = {}
          for (const line of rest) {
            const i = line.indexOf(":")
            head[line.slice(0, i).trim().toLowerCase()] = line.slice(i + 1).trim()
          }
          const status = Number(statusLine!.split(" ")[1])
          const body = buffer.subarray(end + 4)
          if (status !== 101 && body.length < Number(head["content-length"] ?? 0)) return
          socket.destroy()
          resolve({ status, headers: head, body: body.toString("utf8") })
        })
      }),
  )

/** A raw answer is the envelope's 400 INVALID_REQUEST whose message names `why`, with its request id. */
const expectRefusal = (
  res: { status: number; headers: Record<string, string>; body: string },
  what: string,
  why: string,
) => {
  expect(res.status, `${what}: ${res.body}`).toBe(400)
  expect(res.headers["content-type"], what).toBe("application/json")
  const error = (JSON.parse(res.body) as { error: Record<string, unknown> }).error
  expect(error, what).toMatchObject({ code: "INVALID_REQUEST", retryable: false })
  expect(error.message, what).toContain(why)
  expect(res.headers["x-request-id"], what).toBe(error.request_id)
}

/** One GET /v1/stream handshake with these headers. */
const rawHandshake = (base: string, headers: Record<string, string>) =>
  rawExchange(
    base,
    `GET /v1/stream HTTP/1.1\r\nHost: 127.0.0.1\r\n${Object.entries(headers)
      .map(([k, v]) => `${k}: ${v}\r\n`)
      .join("")}\r\n`,
  )

layer(Live, { timeout: "120 seconds", excludeTestServices: true })("HTTP envelope and wire rules", (it) => {
  it.effect("success responses carry x-request-id (UUID) and x-server-time (Unix ms)", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const before = Date.now()
      const res = yield* rawRequest(`${base}/v1/info`)
      expect(res.status).toBe(200)
      expect(res.headers["x-request-id"]).toMatch(UUID)
      const t = Number(res.headers["x-server-time"])
      expect(t).toBeGreaterThanOrEqual(before - 5)
      expect(t).toBeLessThanOrEqual(Date.now() + 5)
    }),
  )

  it.effect("a valid incoming x-request-id is reused, an invalid one replaced", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const mine = "3f1c2a9e-8b7d-4c6e-9a5b-1d2e3f4a5b6c"
      const ok = yield* rawRequest(`${base}/v1/info`, { headers: { "x-request-id": mine } })
      expect(ok.headers["x-request-id"]).toBe(mine)
      const err = yield* rawRequest(`${base}/v1/nope`, { headers: { "x-request-id": mine } })
      expect(expectEnvelope(err, 404, "NOT_FOUND").request_id).toBe(mine)
      const bad = yield* rawRequest(`${base}/v1/info`, { headers: { "x-request-id": "not-a-uuid" } })
      expect(bad.headers["x-request-id"]).toMatch(UUID)
    }),
  )

  it.effect("a WebSocket handshake ws would refuse answers 400 INVALID_REQUEST in the envelope, not ws's text", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const key = "dGhlIHNhbXBsZSBub25jZQ=="
      const handshake = { Connection: "Upgrade", Upgrade: "websocket", "Sec-WebSocket-Version": "13" }
      const cases: Array<[string, Record<string, string>, string]> = [
        ["no key", handshake, "Sec-WebSocket-Key"],
        ["a short key", { ...handshake, "Sec-WebSocket-Key": "c2hvcnQ=" }, "Sec-WebSocket-Key"],
        ["version 99", { ...handshake, "Sec-WebSocket-Key": key, "Sec-WebSocket-Version": "99" }, "Version"],
        ["no version", { Connection: "Upgrade", Upgrade: "websocket", "Sec-WebSocket-Key": key }, "Version"],
        [
          "a bad protocol list",
          { ...handshake, "Sec-WebSocket-Key": key, "Sec-WebSocket-Protocol": "a b" },
          "Protocol",
        ],
        [
          "a duplicated protocol",
          { ...handshake, "Sec-WebSocket-Key": key, "Sec-WebSocket-Protocol": "a, a" },
          "Protocol",
        ],
      ]
      for (const [what, headers, names] of cases) {
        expectRefusal(yield* rawHandshake(base, headers), what, names)
      }
      // A well-formed one still switches protocols.
      const good = yield* rawHandshake(base, { ...handshake, "Sec-WebSocket-Key": key })
      expect(good.status).toBe(101)
    }),
  )

  it.effect("requests node refuses (its parser, an unknown Expect) answer 400 INVALID_REQUEST in the envelope", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const cases: Array<[string, string, string]> = [
        [
          "headers over node's limit",
          `GET /v1/info HTTP/1.1\r\nHost: x\r\nx-big: ${"a".repeat(20_000)}\r\n\r\n`,
          "headers are too large",
        ],
        ["a control character in a header", "GET /v1/info HTTP/1.1\r\nHost: x\r\nx-bad: a\u0001b\r\n\r\n", "malformed"],
        [
          "Content-Length and Transfer-Encoding",
          "POST /v1/auth/challenge HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
          "malformed",
        ],
      ]
      for (const [what, request, message] of cases) {
        expectRefusal(yield* rawExchange(base, request), what, message)
      }
      // No Host on HTTP/1.1: node's bare 400 before; the envelope now. HTTP/1.0 needs none and is served.
      expectRefusal(yield* rawExchange(base, "GET /v1/info HTTP/1.1\r\n\r\n"), "no Host", "Host header")
      expect((yield* rawExchange(base, "GET /v1/info HTTP/1.0\r\n\r\n")).status).toBe(200)
      // An Expect other than 100-continue: node's bare 417 before; the envelope now.
      const expecting = yield* rawExchange(base, "GET /v1/info HTTP/1.1\r\nHost: x\r\nExpect: bogus\r\n\r\n")
      expect(expecting.status, expecting.body).toBe(400)
      expect(JSON.parse(expecting.body)).toMatchObject({ error: { code: "INVALID_REQUEST", retryable: false } })
      expect(expecting.headers["x-request-id"]).toBe(JSON.parse(expecting.body).error.request_id)
    }),
  )

  it.effect("unknown fields are rejected, at the top level and nested", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const ok = yield* rawRequest(`${base}/v1/probe/echo`, {
        method: "POST",
        headers: json,
        body: JSON.stringify({ name: "x", nested: { n: 1 }, items: [{ v: "a" }] }),
      })
      expect(ok.status).toBe(200)
      for (const body of [
        { name: "x", nested: { n: 1 }, evil: 1 },
        { name: "x", nested: { n: 1, evil: 1 } },
        { name: "x", nested: { n: 1 }, items: [{ v: "a", evil: true }] },
      ]) {
        const res = yield* rawRequest(`${base}/v1/probe/echo`, {
          method: "POST",
          headers: json,
          body: JSON.stringify(body),
        })
        const error = expectEnvelope(res, 400, "INVALID_REQUEST")
        expect(error.message).toContain("evil")
        expect(error.retryable).toBe(false)
      }
    }),
  )

  it.effect("malformed JSON, a wrong type and a missing body are 400 INVALID_REQUEST", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const post = (body: string | undefined, headers: Record<string, string> = json) =>
        rawRequest(`${base}/v1/probe/echo`, { method: "POST", headers, ...(body === undefined ? {} : { body }) })
      expectEnvelope(yield* post('{"name": "x", '), 400, "INVALID_REQUEST")
      expectEnvelope(yield* post('{"name": 5, "nested": {"n": 1}}'), 400, "INVALID_REQUEST")
      expectEnvelope(yield* post(undefined), 400, "INVALID_REQUEST")
      expectEnvelope(yield* post("name=x", { "content-type": "text/plain" }), 400, "INVALID_REQUEST")
    }),
  )

  it.effect("65 KiB bodies answer 413 with and without Content-Length, and the connection answers", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const big = JSON.stringify({ name: "x".repeat(65 * 1024), nested: { n: 1 } })
      const declared = yield* rawRequest(`${base}/v1/probe/echo`, { method: "POST", headers: json, body: big })
      expectEnvelope(declared, 413, "PAYLOAD_TOO_LARGE")
      const chunked = yield* rawRequest(`${base}/v1/probe/echo`, {
        method: "POST",
        headers: json,
        body: big,
        chunked: true,
      })
      expectEnvelope(chunked, 413, "PAYLOAD_TOO_LARGE")
      // A chunked body under the limit still reaches the handler intact.
      const small = yield* rawRequest(`${base}/v1/probe/echo`, {
        method: "POST",
        headers: json,
        body: JSON.stringify({ name: "y".repeat(60 * 1024), nested: { n: 1 } }),
        chunked: true,
      })
      expect(small.status).toBe(200)
      expect((small.json as { name: string }).name.length).toBe(60 * 1024)
    }),
  )

  it.effect("unknown route is 404, wrong method is 405 with Allow", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      expectEnvelope(yield* rawRequest(`${base}/v1/does-not-exist`), 404, "NOT_FOUND")
      expectEnvelope(yield* rawRequest(`${base}/`), 404, "NOT_FOUND")
      const wrong = yield* rawRequest(`${base}/v1/info`, { method: "DELETE" })
      expectEnvelope(wrong, 405, "METHOD_NOT_ALLOWED")
      expect(wrong.headers.allow).toBe("GET")
      expectEnvelope(yield* rawRequest(`${base}/v1/probe/echo`), 405, "METHOD_NOT_ALLOWED")
    }),
  )

  it.effect("a defect is 500 INTERNAL, retryable, with no internals", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const res = yield* rawRequest(`${base}/v1/probe/defect`)
      const error = expectEnvelope(res, 500, "INTERNAL")
      expect(error.retryable).toBe(true)
      expect(res.text).not.toContain("secret")
      expect(res.text).not.toContain("/srv/")
      expect(res.text).not.toContain("at ")
    }),
  )

  it.effect("CORS: preflight for the app origin, exposed headers, nothing for other origins", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const preflight = yield* rawRequest(`${base}/v1/probe/echo`, {
        method: "OPTIONS",
        headers: {
          origin: TEST_ORIGIN,
          "access-control-request-method": "POST",
          "access-control-request-headers": "authorization,content-type",
        },
      })
      expect(preflight.status).toBe(204)
      expect(preflight.headers["access-control-allow-origin"]).toBe(TEST_ORIGIN)
      expect(String(preflight.headers["access-control-allow-headers"])).toContain("authorization")
      expect(preflight.headers["x-request-id"]).toMatch(UUID)
      expect(String(preflight.headers["x-server-time"])).toMatch(/^\d{13}$/)
      for (const path of ["/v1/info", "/v1/nope"]) {
        const res = yield* rawRequest(`${base}${path}`, { headers: { origin: TEST_ORIGIN } })
        expect(res.headers["access-control-allow-origin"]).toBe(TEST_ORIGIN)
        const exposed = String(res.headers["access-control-expose-headers"]).toLowerCase().split(",")
        expect(exposed).toEqual(expect.arrayContaining(["x-request-id", "x-server-time", "retry-after"]))
      }
      const big = yield* rawRequest(`${base}/v1/probe/echo`, {
        method: "POST",
        headers: { ...json, origin: TEST_ORIGIN },
        body: "x".repeat(70_000),
      })
      expect(big.status).toBe(413)
      expect(big.headers["access-control-allow-origin"]).toBe(TEST_ORIGIN)
      const other = yield* rawRequest(`${base}/v1/info`, { headers: { origin: "https://evil.example" } })
      expect(other.headers["access-control-allow-origin"]).not.toBe("https://evil.example")
    }),
  )
})
