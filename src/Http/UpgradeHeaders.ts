import type { Duplex } from "node:stream"

/**
 * Adds headers to the handshake answer of an HTTP upgrade (the `101 Switching Protocols` of
 * `GET /v1/stream`, or a refusal `ws` writes itself), which is written straight to the socket by `ws`
 * inside the platform's upgrade handler and so never passes the response headers every other answer
 * gets (spec: every response carries x-request-id and x-server-time).
 *
 * The socket's next `write`/`end` that starts a raw HTTP response head without an `x-request-id` gets
 * the headers inserted before the head's blank line; a head that already has one (a response the
 * framework rendered through node's ServerResponse) is left alone. Either way the socket's own
 * methods are restored on that first write, so the WebSocket's frames are never looked at.
 *
 * Why the socket and not a hook: ws's own way to add handshake headers is its WebSocketServer's `headers`
 * event, but @effect/platform-node 0.108.2 (NodeHttpServer.make) creates that server privately
 * (`noServer: true`) and calls `handleUpgrade` from its own `upgrade` listener, exposing neither; the app
 * only sees the request. Reaching that instance would mean serving upgrades ourselves beside the platform,
 * the kind of shadow server issue 22 removed. So the first write is the one place left; it is scoped to
 * one upgrade request's socket and undone at once.
 */
export const stampUpgradeAnswer = (socket: Duplex, headers: () => Record<string, string>): void => {
  const target = socket as Duplex & { write: Duplex["write"]; end: Duplex["end"] }
  const originals = { write: target.write, end: target.end }
  const restore = () => {
    target.write = originals.write
    target.end = originals.end
  }
  const stamp = (chunk: unknown): unknown => {
    restore()
    const text = typeof chunk === "string" ? chunk : Buffer.isBuffer(chunk) ? chunk.toString("latin1") : undefined
    if (text === undefined || !text.startsWith("HTTP/1.1 ")) return chunk
    const end = text.indexOf("\r\n\r\n")
    if (end < 0 || /\r\nx-request-id:/i.test(text.slice(0, end))) return chunk
    const extra = Object.entries(headers())
      .map(([name, value]) => `\r\n${name}: ${value}`)
      .join("")
    const stamped = `${text.slice(0, end)}${extra}${text.slice(end)}`
    return typeof chunk === "string" ? stamped : Buffer.from(stamped, "latin1")
  }
  target.write = function (this: Duplex, chunk: unknown, ...rest: Array<unknown>) {
    return (originals.write as (...args: Array<unknown>) => boolean).call(this, stamp(chunk), ...rest)
  } as Duplex["write"]
  target.end = function (this: Duplex, chunk?: unknown, ...rest: Array<unknown>) {
    const args = chunk === undefined || typeof chunk === "function" ? [chunk, ...rest] : [stamp(chunk), ...rest]
    if (chunk === undefined || typeof chunk === "function") restore()
    return (originals.end as (...args: Array<unknown>) => Duplex).call(this, ...args)
  } as Duplex["end"]
}
