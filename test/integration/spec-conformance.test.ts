import { randomBytes } from "node:crypto"
import { connect as tcpConnect } from "node:net"
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import WebSocket from "ws"
import { rawRequest } from "../support/Http.ts"
import { bearer, post, signIn } from "../support/SignIn.ts"
import { baseUrl } from "../support/TestServer.ts"
import { testStackWithChain } from "../support/TestStack.ts"
import { controlAndClose, StreamConn } from "./stream-client.ts"

/**
 * Spec misses a black-box probe found (issue 15, item 3): the stream's 101 carries the headers every
 * response carries; a 429 is retryable; a withdrawal's venue_ref and relayed_at are never null.
 */
const Live = testStackWithChain({ limits: { requests_per_second: 1, request_burst: 3 } })

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/

/** A raw WebSocket handshake: the status line and headers of the server's answer, exactly as sent. */
const upgradeHead = (base: string, extra: Record<string, string> = {}) =>
  Effect.promise(
    () =>
      new Promise<{ status: string; headers: Record<string, Array<string>> }>((resolve, reject) => {
        const socket = tcpConnect(Number(new URL(base).port), "127.0.0.1")
        let buffer = Buffer.alloc(0)
        socket.on("error", reject)
        const lines = Object.entries(extra).map(([k, v]) => `${k}: ${v}\r\n`)
        socket.write(
          `GET /v1/stream HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n` +
            `Sec-WebSocket-Key: ${randomBytes(16).toString("base64")}\r\nSec-WebSocket-Version: 13\r\n${lines.join("")}\r\n`,
        )
        socket.on("data", (data: Buffer) => {
          buffer = Buffer.concat([buffer, data])
          const end = buffer.indexOf("\r\n\r\n")
          if (end < 0) return
          const [status, ...rest] = buffer.subarray(0, end).toString("latin1").split("\r\n")
          const headers: Record<string, Array<string>> = {}
          for (const line of rest) {
            const i = line.indexOf(":")
            const name = line.slice(0, i).trim().toLowerCase()
            headers[name] = [...(headers[name] ?? []), line.slice(i + 1).trim()]
          }
          socket.destroy()
          resolve({ status: status!, headers })
        })
      }),
  )

const envelope = (res: { json: unknown }) =>
  (res.json as { error: { code: string; message: string; request_id: string; retryable: boolean } }).error

layer(Live, { timeout: "120 seconds", excludeTestServices: true })("spec conformance", (it) => {
  it.effect("the stream's 101 Switching Protocols carries x-request-id and x-server-time", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const before = Date.now()
      const plain = yield* upgradeHead(base)
      expect(plain.status).toBe("HTTP/1.1 101 Switching Protocols")
      expect(plain.headers["x-request-id"]).toHaveLength(1)
      expect(plain.headers["x-request-id"]![0]).toMatch(UUID)
      expect(plain.headers["x-server-time"]).toHaveLength(1)
      const t = Number(plain.headers["x-server-time"]![0])
      expect(t).toBeGreaterThanOrEqual(before - 5)
      expect(t).toBeLessThanOrEqual(Date.now() + 5)
      // A valid incoming request id is reused, as on every other route.
      const mine = "3f1c2a9e-8b7d-4c6e-9a5b-1d2e3f4a5b6c"
      const echoed = yield* upgradeHead(base, { "x-request-id": mine })
      expect(echoed.status).toBe("HTTP/1.1 101 Switching Protocols")
      expect(echoed.headers["x-request-id"]).toEqual([mine])
      // The WebSocket behind it still works: a real client subscribes and gets its first page.
      const ws = new WebSocket(`${base.replace(/^http/, "ws")}/v1/stream`, { headers: { "x-request-id": mine } })
      const response = yield* Effect.promise(
        () =>
          new Promise<Record<string, unknown>>((resolve, reject) => {
            ws.once("upgrade", (res) => resolve(res.headers))
            ws.once("error", reject)
          }),
      )
      expect(response["x-request-id"]).toBe(mine)
      const conn = new StreamConn(ws)
      yield* Effect.promise(
        () => new Promise((resolve) => (ws.readyState === WebSocket.OPEN ? resolve(0) : ws.once("open", resolve))),
      )
      conn.send({ type: "subscribe" })
      const first = yield* Effect.promise(() => conn.next(5000))
      expect(first.type).toBe("events")
      // A second frame is a protocol error: the socket's frames are untouched by the header stamp.
      conn.send({ type: "subscribe" })
      const { control } = yield* controlAndClose(conn)
      expect(control.code).toBe("protocol_error")
      // Other answers keep exactly one of each header.
      const info = yield* rawRequest(`${base}/v1/info`, { headers: { upgrade: "websocket" } })
      expect(info.status).toBe(200)
      expect(info.headers["x-request-id"]).toMatch(UUID)
    }),
  )

  it.effect("429 RATE_LIMITED is retryable and carries Retry-After (challenge budget and request budget)", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const address = privateKeyToAccount(generatePrivateKey()).address
      let limited = yield* post(`${base}/v1/auth/challenge`, { address })
      for (let i = 0; i < 10 && limited.status !== 429; i++)
        limited = yield* post(`${base}/v1/auth/challenge`, { address })
      expect(limited.status).toBe(429)
      expect(envelope(limited)).toMatchObject({ code: "RATE_LIMITED", retryable: true })
      expect(Number(limited.headers["retry-after"])).toBeGreaterThanOrEqual(1)

      const token = yield* signIn(base, privateKeyToAccount(generatePrivateKey()))
      let spent = yield* rawRequest(`${base}/v1/me`, { headers: bearer(token) })
      for (let i = 0; i < 10 && spent.status !== 429; i++)
        spent = yield* rawRequest(`${base}/v1/me`, { headers: bearer(token) })
      expect(spent.status).toBe(429)
      expect(envelope(spent)).toMatchObject({ code: "RATE_LIMITED", retryable: true })
      expect(Number(spent.headers["retry-after"])).toBeGreaterThanOrEqual(1)
      // Retrying the same request after Retry-After succeeds (spec Errors 3).
      yield* Effect.sleep(`${Number(spent.headers["retry-after"])} seconds`)
      expect((yield* rawRequest(`${base}/v1/me`, { headers: bearer(token) })).status).toBe(200)
      // Codes that are not retryable stay so.
      const unknown = yield* rawRequest(`${base}/v1/nope`)
      expect(envelope(unknown)).toMatchObject({ code: "NOT_FOUND", retryable: false })
    }),
  )

  it.effect("OpenAPI: a withdrawal's venue_ref and relayed_at are optional, never null; 429 says retryable", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const doc = (yield* rawRequest(`${base}/v1/openapi.json`)).json as {
        components: { schemas: Record<string, { required?: Array<string>; properties: Record<string, unknown> }> }
      }
      const withdrawal = doc.components.schemas.Withdrawal!
      for (const field of ["venue_ref", "relayed_at"]) {
        expect(withdrawal.required).not.toContain(field)
        expect(JSON.stringify(withdrawal.properties[field])).not.toContain(`"type":"null"`)
      }
      expect(withdrawal.properties.venue_ref).toMatchObject({ type: "string" })
      expect(JSON.stringify(withdrawal.properties.relayed_at)).toContain("Timestamp")
      for (const field of ["id", "venue", "amount", "state", "error", "created_at", "revision"]) {
        expect(withdrawal.required).toContain(field)
      }
      const rateLimited = JSON.stringify(doc.components.schemas.RateLimitedError)
      expect(rateLimited).toContain("retryable: true")
    }),
  )
})
