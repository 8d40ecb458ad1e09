/**
 * The stream bench's clients (test/bench/stream.ts): WebSocket subscribers in worker threads of this process
 * (so their CPU counts in the bench's process tree), each recording (seq, wall-clock ms) per event received.
 * Every wait is bounded: a client that does not get ready, or a cell that does not drain, fails with a message.
 */
import { createRequire } from "node:module"
import { Worker } from "node:worker_threads"
import { Effect } from "effect"

/** Wall clock with sub-millisecond resolution, comparable across threads and with Postgres now(). */
export const wallMs = () => performance.timeOrigin + performance.now()

/** Client side, plain CommonJS for an eval'd worker: N sockets; (seq, delivered at) per event. */
const CLIENT = `
const { parentPort, workerData } = require("node:worker_threads")
const WebSocket = require(workerData.wsPath)
const wall = () => performance.timeOrigin + performance.now()
const { url, n, subscribe } = workerData
const seqs = []
const times = []
let ready = 0
let error = null
const sockets = []
const fail = (message) => { if (error === null) { error = message; parentPort.postMessage({ type: "error", message }) } }
const isReady = () => { if (++ready === n) parentPort.postMessage({ type: "ready" }) }
for (let i = 0; i < n; i++) {
  const ws = new WebSocket(url)
  sockets.push(ws)
  let first = true
  ws.on("open", () => subscribe ? ws.send(JSON.stringify({ type: "subscribe", channels: ["trades"] })) : isReady())
  ws.on("message", (data) => {
    const t = wall()
    const frame = JSON.parse(data.toString())
    if (frame.type === "control") return fail("control frame " + frame.code + ": " + frame.message)
    if (first && subscribe) { first = false; isReady() }
    for (const e of frame.events) { seqs.push(e.data.seq); times.push(t) }
  })
  ws.on("error", (e) => fail(String(e)))
}
parentPort.on("message", (m) => {
  if (m === "count") return parentPort.postMessage({ type: "count", n: seqs.length, error })
  for (const ws of sockets) ws.terminate()
  parentPort.postMessage({ type: "done", seqs: Int32Array.from(seqs), times: Float64Array.from(times) })
})
`

interface Message {
  readonly type: string
  readonly message?: string
  readonly n?: number
  readonly error?: string | null
  readonly seqs?: Int32Array
  readonly times?: Float64Array
}

/** Every delivery of a phase: seqs[i] arrived at times[i] (wall ms), over all subscribers. */
export interface Deliveries {
  readonly seqs: Int32Array
  readonly times: Float64Array
}

const wsPath = createRequire(import.meta.url).resolve("ws")

/** `subscribers` sockets to `url` over at most 4 worker threads; `subscribe`: send the stream's subscribe frame. */
export const startClients = (url: string, subscribers: number, subscribe: boolean) => {
  const threads = Math.min(4, subscribers)
  const workers = Array.from({ length: threads }, (_, i) => {
    const n = Math.floor(subscribers / threads) + (i < subscribers % threads ? 1 : 0)
    return new Worker(CLIENT, { eval: true, workerData: { url, n, subscribe, wsPath } })
  })
  const reply = (w: Worker, type: string, send?: string) =>
    new Promise<Message>((resolve, reject) => {
      const on = (m: Message) => {
        if (m.type === "error" && type === "ready") reject(new Error(m.message))
        if (m.type === type) {
          w.off("message", on)
          resolve(m)
        }
      }
      w.on("message", on)
      if (send !== undefined) w.postMessage(send)
    })
  const all = (type: string, send?: string) =>
    Effect.promise(() => Promise.all(workers.map((w) => reply(w, type, send))))

  /** All sockets open (and subscribed): bounded by 30 s. */
  const ready = Effect.tryPromise({
    try: () => Promise.all(workers.map((w) => reply(w, "ready"))),
    catch: (e) => new Error(`a client failed before it was ready: ${String(e)}`),
  }).pipe(
    Effect.timeoutFail({
      duration: "30 seconds",
      onTimeout: () => new Error(`${subscribers} clients of ${url} were not ready within 30 s`),
    }),
    Effect.asVoid,
  )

  /** Waits until `expected` deliveries arrived (polled every 50 ms), failing after `boundMs` or on a client error. */
  const drain = (expected: number, boundMs: number) =>
    Effect.gen(function* () {
      const deadline = wallMs() + boundMs
      for (;;) {
        const counts = yield* all("count", "count")
        const error = counts.find((c) => c.error != null)?.error
        if (error != null) return yield* Effect.fail(new Error(`a client failed: ${error}`))
        const n = counts.reduce((s, c) => s + c.n!, 0)
        if (n >= expected) return
        if (wallMs() > deadline) {
          return yield* Effect.fail(new Error(`did not drain: ${n} of ${expected} deliveries after ${boundMs} ms`))
        }
        yield* Effect.sleep("50 millis")
      }
    })

  /** Closes every socket, ends the threads and returns the deliveries. */
  const stop = Effect.gen(function* () {
    const done = yield* all("done", "stop")
    yield* Effect.promise(() => Promise.all(workers.map((w) => w.terminate())))
    const total = done.reduce((s, d) => s + d.seqs!.length, 0)
    const seqs = new Int32Array(total)
    const times = new Float64Array(total)
    let at = 0
    for (const d of done) {
      seqs.set(d.seqs!, at)
      times.set(d.times!, at)
      at += d.seqs!.length
    }
    return { seqs, times } satisfies Deliveries
  })

  /** Ends the threads without collecting (after a failure); their sockets close with them. */
  const kill = Effect.promise(() => Promise.all(workers.map((w) => w.terminate()))).pipe(Effect.asVoid)

  return { ready, drain, stop, kill }
}
