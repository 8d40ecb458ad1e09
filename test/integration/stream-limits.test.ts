import { randomBytes } from "node:crypto"
import { connect as tcpConnect } from "node:net"
import { HttpServer } from "@effect/platform"
import { SqlClient } from "@effect/sql"
import { expect, layer } from "@effect/vitest"
import { Context, Effect, Exit, Layer, Schedule, Scope } from "effect"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { runJournalPublisher } from "../../actors/JournalPublisher.ts"
import { JOURNAL_PENDING_CHANNEL } from "../../src/Sql/Journal.ts"
import { StreamConnections } from "../../src/Stream/Connections.ts"
import { signIn } from "../support/SignIn.ts"
import { baseUrl, TestHttpLive } from "../support/TestServer.ts"
import { testStackWithChain } from "../support/TestStack.ts"
import { append, connect, controlAndClose, publishedHead, type StreamConn, subscribe } from "./stream-client.ts"

// One client (127.0.0.1) opens all 256 connections here, without a token: the per-client and anonymous
// shares are lifted to the whole limit so that this file tests the limit itself (client-budgets.test.ts
// tests the shares).
const Live = Layer.scopedDiscard(Effect.forkScoped(runJournalPublisher)).pipe(
  Layer.provideMerge(
    testStackWithChain({ limits: { stream_connections_per_client: 256, stream_anonymous_connections: 256 } }),
  ),
)

const stats = StreamConnections.stats

/** Waits until the server holds no stream connection (earlier clients' closes have landed). */
const noConnections = stats.pipe(
  Effect.repeat({ schedule: Schedule.spaced("20 millis"), until: (s) => s.active === 0 }),
  Effect.timeout("5 seconds"),
)

/** Sends `frames` right after the upgrade; returns the control frame, the close and the time taken. */
const refusal = (base: string, frames: ReadonlyArray<string | Buffer>) =>
  Effect.gen(function* () {
    const conn = yield* Effect.promise(() => connect(base))
    const t0 = performance.now()
    for (const frame of frames) conn.ws.send(frame)
    const { control, closed } = yield* controlAndClose(conn, 8000)
    return { control, closed, ms: closed.at - t0 }
  })

/**
 * A hand-made client announcing a 100 MiB text frame and sending only its first bytes: the server
 * must refuse on the frame header (ws maxPayload), not after buffering the message. Returns the
 * server's frames: the control text and the close code.
 */
const announceHugeFrame = (base: string) =>
  Effect.promise(
    () =>
      new Promise<{ texts: Array<string>; closeCode: number | undefined; ms: number }>((resolve, reject) => {
        const socket = tcpConnect(Number(new URL(base).port), "127.0.0.1")
        const key = randomBytes(16).toString("base64")
        let buffer = Buffer.alloc(0)
        let upgraded = false
        let t0 = 0
        socket.on("error", reject)
        socket.write(
          `GET /v1/stream HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n` +
            `Sec-WebSocket-Key: ${key}\r\nSec-WebSocket-Version: 13\r\n\r\n`,
        )
        socket.on("data", (data: Buffer) => {
          buffer = Buffer.concat([buffer, data])
          if (upgraded) return
          const end = buffer.indexOf("\r\n\r\n")
          if (end < 0) return
          upgraded = true
          buffer = buffer.subarray(end + 4)
          const header = Buffer.alloc(14)
          header[0] = 0x81 // FIN + text
          header[1] = 0x80 | 127 // masked, 64-bit length
          header.writeBigUInt64BE(100n * 1024n * 1024n, 2) // mask key: bytes 10..13 stay zero
          t0 = performance.now()
          socket.write(Buffer.concat([header, Buffer.alloc(64, 0x20)]))
        })
        socket.on("close", () => {
          const texts: Array<string> = []
          let closeCode: number | undefined
          for (let at = 0; at + 2 <= buffer.length; ) {
            const opcode = buffer[at]! & 0x0f
            let length = buffer[at + 1]! & 0x7f
            let offset = at + 2
            if (length === 126) {
              length = buffer.readUInt16BE(offset)
              offset += 2
            }
            const payload = buffer.subarray(offset, offset + length)
            if (opcode === 1) texts.push(payload.toString())
            if (opcode === 8 && payload.length >= 2) closeCode = payload.readUInt16BE(0)
            at = offset + length
          }
          resolve({ texts, closeCode, ms: performance.now() - t0 })
        })
      }),
  )

layer(Live, { timeout: "120 seconds", excludeTestServices: true })("stream: limits", (it) => {
  it.effect("late, oversized, extra, binary and malformed frames, and a reader that stops reading", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const sql = yield* SqlClient.SqlClient
      const sub = JSON.stringify({ type: "subscribe" })

      // No subscription within 5 s.
      const late = Effect.gen(function* () {
        const conn = yield* Effect.promise(() => connect(base))
        const { control, closed } = yield* controlAndClose(conn, 8000)
        expect(control).toMatchObject({ type: "control", code: "subscribe_timeout" })
        expect(closed.code).toBe(4408)
        expect(closed.at - conn.openedAt).toBeGreaterThan(4800)
        expect(closed.at - conn.openedAt).toBeLessThan(6500)
      })

      // Inbound messages over 4096 bytes, first or later, small or huge; exactly 4096 is fine.
      const padded = (bytes: number) => {
        const head = '{"type":"subscribe","channels":["trades"]}'
        return `${head.slice(0, -1)}${" ".repeat(bytes - head.length)}}`
      }
      const oversized = Effect.gen(function* () {
        for (const frames of [[padded(4097)], [sub, padded(5000)], ["x".repeat(1024 * 1024)]]) {
          const r = yield* refusal(base, frames)
          expect(r.control, `${frames.length} frames`).toMatchObject({ code: "message_too_large" })
          expect(r.closed.code).toBe(1009)
          expect(r.ms).toBeLessThan(1500)
        }
        const huge = yield* announceHugeFrame(base)
        expect(huge.texts.map((t) => JSON.parse(t))).toEqual([
          { type: "control", code: "message_too_large", message: "inbound messages are at most 4096 bytes" },
        ])
        expect(huge.closeCode).toBe(1009)
        expect(huge.ms).toBeLessThan(1500)
        const { conn, first } = yield* subscribe(base, JSON.parse(padded(4096)))
        expect(first.type).toBe("events")
        conn.close()
      })

      // One subscription per connection; text only; valid JSON of the right shape.
      const protocol = Effect.gen(function* () {
        const cases: Array<[ReadonlyArray<string | Buffer>, RegExp]> = [
          [[sub, sub], /after the subscription/],
          [[sub, "hello"], /after the subscription/],
          [["{not json"], /not valid JSON/],
          [[JSON.stringify({ type: "subscribe", evil: 1 })], /evil/],
          [[JSON.stringify({ type: "hello" })], /type/],
          [[JSON.stringify({ type: "subscribe", channels: ["orders"] })], /channels/],
          [[JSON.stringify({ type: "subscribe", pairs: [{ a: "aster", b: "nowhere" }] })], /unknown venue nowhere/],
          [
            [JSON.stringify({ type: "subscribe", channels: ["account"], pairs: [{ a: "aster", b: "hyperliquid" }] })],
            /pairs/,
          ],
          [[JSON.stringify({ type: "subscribe", token: 987654321 })], /token/],
          [[Buffer.from(sub)], /binary/],
        ]
        for (const [frames, message] of cases) {
          const r = yield* refusal(base, frames)
          const label = frames.map(String).join(" | ")
          expect(r.control.code, label).toBe("protocol_error")
          expect(r.control.message, label).toMatch(message)
          expect(r.control.message, label).not.toContain("987654321")
          expect(r.closed.code, label).toBe(1008)
        }
      })

      // A reader that stops reading while events flow: the server stops reading pages for it, holds
      // at most one page, and closes it about 5 s after its send blocked.
      const slow = Effect.gen(function* () {
        const { conn } = yield* subscribe(base, { channels: ["trades"] })
        const before = (yield* stats).closed.slow_consumer ?? 0
        conn.ws.pause()
        const t0 = performance.now()
        const rows = 3000
        yield* sql`
          insert into journal (kind, master, payload)
          select 'trade.settled', null,
                 jsonb_build_object('from', 'aster', 'to', 'hyperliquid', 'n', g, 'blob', repeat('x', 8000))
          from generate_series(1, ${rows}) g`
        yield* sql`select pg_notify(${JOURNAL_PENDING_CHANNEL}, '1')`
        yield* stats.pipe(
          Effect.repeat({
            schedule: Schedule.spaced("50 millis"),
            until: (s) => (s.closed.slow_consumer ?? 0) > before,
          }),
          Effect.timeout("15 seconds"),
        )
        const closedAfter = performance.now() - t0
        expect(closedAfter).toBeGreaterThan(4500)
        expect(closedAfter).toBeLessThan(9000)
        // Bounded: one page (256 KiB) plus the low-water mark, never the 24 MB produced.
        expect((yield* stats).maxQueuedBytes).toBeLessThan(512 * 1024)
        conn.ws.resume()
        const closed = yield* Effect.promise(() => conn.closed)
        expect(closed.at - t0).toBeLessThan(12_000)
        const delivered = conn.frames.flatMap((f) => (f.type === "events" ? f.events : [])).length
        expect(delivered).toBeLessThan(rows)
      })

      // The flood of `slow` goes to every trades subscriber: it starts once the refusals (timed, and subscribed to
      // trades too) are done, else their closes queue behind its pages (a near miss under load, found by audit).
      const refusals = Effect.all([oversized, protocol], { concurrency: "unbounded", discard: true })
      yield* Effect.all([late, Effect.zipRight(refusals, slow)], { concurrency: "unbounded", discard: true })
    }),
  )

  it.effect("at most 256 connections: the 257th gets too_many_connections, a freed slot is reused", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      yield* noConnections
      const before = yield* stats
      const open = yield* Effect.forEach(
        Array.from({ length: 256 }, (_, i) => i),
        () => subscribe(base, { channels: ["trades"] }),
        { concurrency: 32 },
      )
      expect(open.every((o) => o.first.type === "events")).toBe(true)
      expect((yield* stats).active).toBe(256)
      const { conn, first } = yield* subscribe(base, {})
      expect(first).toMatchObject({ type: "control", code: "too_many_connections" })
      expect((yield* Effect.promise(() => conn.closed)).code).toBe(1013)
      expect((yield* stats).refused).toBe(before.refused + 1)
      // Every subscriber still streams.
      yield* append("trade.settled", null, { from: "aster", to: "hyperliquid", crowd: true })
      yield* Effect.forEach(
        open,
        ({ conn }) =>
          Effect.promise(async () => {
            while (true) {
              const f = await conn.next(3000)
              if (f.type === "events" && f.events.some((e) => e.data.crowd)) return
            }
          }),
        { concurrency: "unbounded", discard: true },
      )
      open[0]!.conn.close()
      yield* stats.pipe(
        Effect.repeat({ schedule: Schedule.spaced("20 millis"), until: (s) => s.active === 255 }),
        Effect.timeout("5 seconds"),
      )
      const again = yield* subscribe(base, {})
      expect(again.first.type).toBe("events")
      again.conn.close()
      for (const o of open) o.conn.close()
      yield* noConnections
    }),
  )

  it.effect("server shutdown sends shutdown to every client, subscribed or not, then closes", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const token = yield* signIn(base, privateKeyToAccount(generatePrivateKey()))
      // A second server on the same database, stopped by closing its scope.
      const scope = yield* Scope.make()
      const context = yield* Layer.buildWithScope(TestHttpLive, scope)
      const address = Context.get(context, HttpServer.HttpServer).address
      const base2 = `http://127.0.0.1:${address._tag === "TcpAddress" ? address.port : 0}`
      const clients: Array<StreamConn> = [
        (yield* subscribe(base2, {})).conn,
        (yield* subscribe(base2, { token, cursor: (yield* publishedHead).toString() })).conn,
        yield* Effect.promise(() => connect(base2)),
      ]
      yield* Scope.close(scope, Exit.void)
      for (const conn of clients) {
        const { control, closed } = yield* controlAndClose(conn, 5000)
        expect(control).toMatchObject({ type: "control", code: "shutdown" })
        expect(closed.code).toBe(1001)
      }
    }),
  )
})
