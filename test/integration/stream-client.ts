/**
 * A small `ws` client for the stream tests (not a test file): connect, subscribe, read frames in
 * order, wait for the control frame and the close.
 */
import { SqlClient } from "@effect/sql"
import { Effect, Schedule } from "effect"
import WebSocket from "ws"
import { appendJournal, journalStats } from "../../src/Sql/Journal.ts"

export interface StreamEvent {
  readonly cursor: string
  readonly kind: string
  readonly at: string
  // biome-ignore lint/suspicious/noExplicitAny: event data is free-form JSON
  readonly data: any
}
export interface EventFrame {
  readonly type: "events"
  readonly events: ReadonlyArray<StreamEvent>
  readonly next_cursor: string
}
export interface ControlFrame {
  readonly type: "control"
  readonly code: string
  readonly message: string
}
export type Frame = EventFrame | ControlFrame

export interface Closed {
  readonly code: number
  readonly reason: string
  readonly at: number
}

export class StreamConn {
  readonly frames: Array<Frame> = []
  private read = 0
  private wake: Array<() => void> = []
  readonly closed: Promise<Closed>
  readonly openedAt = performance.now()

  constructor(readonly ws: WebSocket) {
    ws.on("message", (data, isBinary) => {
      if (!isBinary) this.frames.push(JSON.parse(data.toString()) as Frame)
      this.notify()
    })
    this.closed = new Promise((resolve) =>
      ws.on("close", (code, reason) => {
        this.notify()
        resolve({ code, reason: reason.toString(), at: performance.now() })
      }),
    )
    ws.on("error", () => {})
  }

  private notify() {
    const waiting = this.wake
    this.wake = []
    for (const w of waiting) w()
  }

  send(frame: unknown) {
    this.ws.send(typeof frame === "string" ? frame : JSON.stringify(frame))
  }

  /** The next unread frame; rejects after `timeoutMs` or when the socket closed with nothing left. */
  async next(timeoutMs = 5000): Promise<Frame> {
    const deadline = performance.now() + timeoutMs
    while (true) {
      const frame = this.frames[this.read]
      if (frame !== undefined) {
        this.read++
        return frame
      }
      if (this.ws.readyState === WebSocket.CLOSED) throw new Error("stream closed")
      const left = deadline - performance.now()
      if (left <= 0) throw new Error(`no frame within ${timeoutMs} ms`)
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, left)
        this.wake.push(() => {
          clearTimeout(t)
          resolve()
        })
      })
    }
  }

  /** Skips event pages until a control frame arrives. */
  async control(timeoutMs = 5000): Promise<ControlFrame> {
    const deadline = performance.now() + timeoutMs
    while (true) {
      const frame = await this.next(Math.max(1, deadline - performance.now()))
      if (frame.type === "control") return frame
    }
  }

  close() {
    this.ws.terminate()
  }
}

export const connect = (base: string, path = "/v1/stream") =>
  new Promise<StreamConn>((resolve, reject) => {
    const ws = new WebSocket(`${base.replace(/^http/, "ws")}${path}`)
    const conn = new StreamConn(ws)
    ws.once("open", () => resolve(conn))
    ws.once("error", reject)
  })

/** Connects, subscribes and returns the connection with its first page (the start cursor). */
export const subscribe = (base: string, subscription: Record<string, unknown>) =>
  Effect.promise(async () => {
    const conn = await connect(base)
    conn.send({ type: "subscribe", ...subscription })
    const first = await conn.next(5000)
    return { conn, first }
  })

/** Connects from `from` (a loopback address: the client) and subscribes; the first frame is a page (admitted) or a control frame (refused). */
export const subscribeFrom = (
  base: string,
  from: string,
  subscription: Record<string, unknown>,
  headers: Record<string, string> = {},
) =>
  Effect.promise(async () => {
    const ws = new WebSocket(`${base.replace(/^http/, "ws")}/v1/stream`, { localAddress: from, headers })
    const conn = new StreamConn(ws)
    await new Promise<void>((resolve, reject) => {
      ws.once("open", () => resolve())
      ws.once("error", reject)
    })
    conn.send({ type: "subscribe", ...subscription })
    const first: Frame = await conn.next(5000)
    return { conn, first }
  })

/** A connection the server refused: its control frame and close code (fails at once when it was admitted). */
export const refusedWith = (opened: { conn: StreamConn; first: Frame }) =>
  Effect.promise(async () => {
    if (opened.first.type !== "control") {
      opened.conn.close()
      throw new Error("admitted, where too_many_connections was expected")
    }
    const closed = await opened.conn.closed
    return { control: opened.first as ControlFrame, code: closed.code }
  })

/** The control frame and the close that follows it. */
export const controlAndClose = (conn: StreamConn, timeoutMs = 8000) =>
  Effect.promise(async () => {
    const control = await conn.control(timeoutMs)
    const closed = await conn.closed
    return { control, closed }
  })

/** Appends one journal row in its own transaction, as a state change would. */
export const append = (kind: string, master: string | null, payload: Record<string, unknown>) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) => sql.withTransaction(appendJournal({ kind, master, payload })))

/** Waits until the publisher gave every committed row a cursor; returns the head. */
export const publishedHead = Effect.gen(function* () {
  yield* journalStats.pipe(
    Effect.repeat({ schedule: Schedule.spaced("20 millis"), until: (s) => s.unpublished === 0 }),
    Effect.timeout("10 seconds"),
  )
  const sql = yield* SqlClient.SqlClient
  const [row] = yield* sql<{ head: string }>`select coalesce(max(cursor), 0)::text as head from journal`
  return BigInt(row?.head ?? "0")
})
