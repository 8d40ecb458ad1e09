import { connect as tcpConnect } from "node:net"
import { expect, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { StreamConnections } from "../../src/Stream/Connections.ts"
import { StreamHeartbeat } from "../../src/Stream.ts"
import { TestDatabaseLive } from "../support/Database.ts"
import { testAppConfig } from "../support/TestConfig.ts"
import { baseUrl, TestHttpLive } from "../support/TestServer.ts"
import { subscribe } from "./stream-client.ts"

/** The stack with a 200 ms ping interval (15 s in production). */
const Live = TestHttpLive.pipe(
  Layer.provideMerge(TestDatabaseLive),
  Layer.provideMerge(testAppConfig()),
  Layer.provide(Layer.succeed(StreamHeartbeat, "200 millis")),
)

/**
 * A hand-made client that subscribes and then never answers a ping; resolves when the server drops it, with its
 * last text frame (frames under 126 bytes: empty pages and control frames).
 */
const deafClient = (base: string) =>
  Effect.promise(
    () =>
      new Promise<{ pings: number; ms: number; lastText: string }>((resolve, reject) => {
        const socket = tcpConnect(Number(new URL(base).port), "127.0.0.1")
        const t0 = performance.now()
        let buffer = Buffer.alloc(0)
        let upgraded = false
        let pings = 0
        let lastText = ""
        socket.on("error", reject)
        socket.write(
          "GET /v1/stream HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
            "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n",
        )
        socket.on("data", (data: Buffer) => {
          buffer = Buffer.concat([buffer, data])
          if (!upgraded) {
            const end = buffer.indexOf("\r\n\r\n")
            if (end < 0) return
            upgraded = true
            buffer = buffer.subarray(end + 4)
            const payload = Buffer.from(JSON.stringify({ type: "subscribe" }))
            // FIN + text, masked with a zero key (the payload goes as is).
            socket.write(Buffer.concat([Buffer.from([0x81, 0x80 | payload.length, 0, 0, 0, 0]), payload]))
          }
          for (let at = 0; at + 2 <= buffer.length; ) {
            const length = buffer[at + 1]! & 0x7f
            if (length >= 126 || at + 2 + length > buffer.length) break
            if ((buffer[at]! & 0x0f) === 9) pings++
            if ((buffer[at]! & 0x0f) === 1) lastText = buffer.subarray(at + 2, at + 2 + length).toString()
            at += 2 + length
            buffer = buffer.subarray(at)
            at = 0
          }
        })
        socket.on("close", () => resolve({ pings, ms: performance.now() - t0, lastText }))
      }),
  )

layer(Live, { timeout: "120 seconds", excludeTestServices: true })("stream: heartbeat", (it) => {
  it.effect("a peer that answers no ping is dropped; one that answers stays", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const before = (yield* StreamConnections.stats).closed.unresponsive ?? 0
      const { conn } = yield* subscribe(base, {})
      const deaf = yield* deafClient(base)
      expect(deaf.pings).toBeGreaterThanOrEqual(1)
      expect(deaf.ms).toBeGreaterThan(300)
      expect(deaf.ms).toBeLessThan(2000)
      // Its last text frame is the control frame the spec asks for before any close (Events 3).
      expect(JSON.parse(deaf.lastText)).toMatchObject({ type: "control", code: "unresponsive" })
      expect((yield* StreamConnections.stats).closed.unresponsive).toBe(before + 1)
      // The ws client answers pings by itself: still streaming (idle pages) after many intervals.
      expect(conn.ws.readyState).toBe(conn.ws.OPEN)
      const frame = yield* Effect.promise(() => conn.next(1500))
      expect(frame.type).toBe("events")
      conn.close()
    }),
  )
})
