import { SqlClient } from "@effect/sql"
import { expect, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { runJournalPublisher } from "../../actors/JournalPublisher.ts"
import { appendJournal } from "../../src/Sql/Journal.ts"
import { StreamConnections } from "../../src/Stream/Connections.ts"
import { pruneJournalThrough } from "../../src/Stream/JournalReader.ts"
import { JournalTailWindow } from "../../src/Stream/JournalTail.ts"
import { rawRequest } from "../support/Http.ts"
import { bearer, post, signIn } from "../support/SignIn.ts"
import { baseUrl } from "../support/TestServer.ts"
import { testStackWithChain } from "../support/TestStack.ts"
import { append, connect, publishedHead, type StreamEvent, subscribe } from "./stream-client.ts"

/**
 * The HTTP stack, its database, and the JournalPublisher assigning cursors as in production. The
 * shared window of recent rows is kept tiny, so resuming clients also read the journal themselves.
 */
const Live = Layer.scopedDiscard(Effect.forkScoped(runJournalPublisher)).pipe(
  Layer.provideMerge(testStackWithChain()),
  Layer.provide(Layer.succeed(JournalTailWindow, { rows: 24, bytes: 1024 * 1024 })),
)

const fresh = () => privateKeyToAccount(generatePrivateKey())

/** mulberry32: a seeded generator, so a failing run can be replayed with STREAM_SEED. */
const seeded = (seed: number) => () => {
  seed = (seed + 0x6d2b79f5) | 0
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed)
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296
}

interface JournalRow {
  readonly cursor: string
  readonly kind: string
  readonly master: string | null
  // biome-ignore lint/suspicious/noExplicitAny: journal payloads are free-form JSON
  readonly payload: any
}

const rowsAfter = (cursor: string) =>
  Effect.flatMap(
    SqlClient.SqlClient,
    (sql) => sql<JournalRow>`
      select j.cursor::text as cursor, j.kind, j.master, j.payload from journal j
      where j.cursor > ${cursor} order by j.cursor`,
  )

layer(Live, { timeout: "120 seconds", excludeTestServices: true })("stream: resume, snapshot, retention", (it) => {
  it.effect("a client dropping at random points and resuming from next_cursor gets every event once, in order", () =>
    Effect.gen(function* () {
      const seed = Number(process.env.STREAM_SEED ?? Math.floor(Math.random() * 2 ** 31))
      const random = seeded(seed)
      // Printed so a failure can be replayed with STREAM_SEED.
      yield* Effect.sync(() => process.stderr.write(`stream-resume seed ${seed}\n`))
      const base = yield* baseUrl
      const sql = yield* SqlClient.SqlClient
      const me = fresh()
      const other = fresh()
      const token = yield* signIn(base, me)
      yield* signIn(base, other)
      const master = me.address.toLowerCase()
      // Snapshot first: its cursor is where the replay starts.
      const snapshot = yield* rawRequest(`${base}/v1/me`, { headers: bearer(token) })
      const start = snapshot.headers["x-event-cursor"] as string
      expect(start).toMatch(/^[0-9]+$/)

      // Producer: concurrent transactions that stay open for random times, so rows commit out of
      // id order; the JournalPublisher gives them cursors in commit order meanwhile.
      const N = 360
      const entries = Array.from({ length: N }, (_, i) => {
        const r = random()
        const venues = random() < 0.5 ? ["aster", "hyperliquid"] : ["hyperliquid", "aster"]
        if (r < 0.35) return { kind: "trade.settled", master: null, payload: { i, from: venues[0], to: venues[1] } }
        if (r < 0.65) return { kind: "order.updated", master, payload: { i, identity_id: null } }
        if (r < 0.9) return { kind: "order.updated", master: other.address.toLowerCase(), payload: { i } }
        return { kind: "chain.indexed", master: null, payload: { i } }
      })
      const delays = entries.map(() => [Math.floor(random() * 12), Math.floor(random() * 25)] as const)
      const pagesBefore = (yield* StreamConnections.stats).pages
      let finalHead: bigint | undefined
      let produced = 0
      let sessions = 0
      /** The client drops and resumes at least this often before the stream ends (asserted below). */
      const MIN_SESSIONS = 6
      const producer = Effect.forEach(
        entries,
        (entry, i) =>
          sql.withTransaction(appendJournal(entry).pipe(Effect.zipRight(Effect.sleep(`${delays[i]![0]} millis`)))).pipe(
            Effect.tap(() => Effect.sync(() => produced++)),
            Effect.zipRight(Effect.sleep(`${delays[i]![1]} millis`)),
          ),
        { concurrency: 6, discard: true },
      ).pipe(
        // The end waits for the client's sixth connection: on a fast machine the rows could all be written while
        // the client had held only five (seed 2091644043 did), and the resumes are what this test is about.
        Effect.zipRight(
          Effect.promise(async () => {
            while (sessions < MIN_SESSIONS) await new Promise((r) => setTimeout(r, 20))
          }),
        ),
        // Always end on rows this client may not see, published in a batch of their own: the client
        // learns it reached the head only from an idle page (the edge behind an old rare timeout).
        Effect.zipRight(publishedHead),
        Effect.zipRight(Effect.sleep("100 millis")),
        Effect.zipRight(
          sql.withTransaction(
            Effect.forEach([0, 1, 2], (i) =>
              appendJournal({ kind: "order.updated", master: other.address.toLowerCase(), payload: { tail: i } }),
            ),
          ),
        ),
        Effect.zipRight(publishedHead),
        Effect.tap((head) => Effect.sync(() => (finalHead = head))),
      )

      // Consumer: connects, reads for a random while, drops the socket (mid-page at times), stays
      // offline for a random while, resumes.
      const received: Array<StreamEvent> = []
      const consumer = Effect.promise(async () => {
        let cursor = start
        while (finalHead === undefined || BigInt(cursor) < finalHead) {
          const conn = await connect(base)
          sessions++
          conn.send({ type: "subscribe", token, cursor })
          // Rows this client may not see move next_cursor only with the next page that carries an
          // event, or with the idle page (500 ms without a send). Once the producer is done, the
          // last rows may all be invisible: stay long enough for an idle page, else the client
          // would never learn that it reached the head (the cause of this test's rare 60 s timeout).
          const span = finalHead === undefined ? 20 + random() * 250 : 1_500
          const until = performance.now() + span
          try {
            while (performance.now() < until) {
              const frame = await conn.next(Math.max(1, until - performance.now()))
              if (frame.type === "control") throw new Error(`unexpected control ${frame.code}: ${frame.message}`)
              expect(BigInt(frame.next_cursor) >= BigInt(cursor)).toBe(true)
              received.push(...frame.events)
              cursor = frame.next_cursor
            }
          } catch (e) {
            if (!(e instanceof Error) || !e.message.startsWith("no frame")) throw e
          }
          if (random() < 0.5) conn.close()
          else conn.ws.close(1000)
          // Offline for a while at times: the stream moves on and the client resumes from further back.
          if (random() < 0.4) await new Promise((resolve) => setTimeout(resolve, random() * 400))
          // Once, after the first session, stay offline until the stream has moved well past the shared window
          // (24 rows, trimmed at 30): the resume must then read the journal itself, whatever the seed and the
          // machine's speed (a run with few, short gaps never needed that path and failed the last check).
          if (sessions === 1) {
            const mark = produced
            while (finalHead === undefined && produced < Math.min(mark + 60, N))
              await new Promise((r) => setTimeout(r, 20))
          }
        }
        return cursor
      })
      const [, last] = yield* Effect.all([producer, consumer], { concurrency: 2 })

      const expected = (yield* rowsAfter(start)).filter(
        (r) => r.master === master || (r.master === null && r.kind.startsWith("trade.")),
      )
      const label = `seed ${seed}, ${sessions} connections`
      expect(BigInt(last), label).toBe(finalHead)
      expect(sessions, label).toBeGreaterThanOrEqual(MIN_SESSIONS)
      expect(
        received.map((e) => e.cursor),
        label,
      ).toEqual(expected.map((r) => r.cursor))
      expect(
        received.map((e) => [e.kind, e.data]),
        label,
      ).toEqual(expected.map((r) => [r.kind, r.payload]))
      expect(received.every((e) => !Number.isNaN(Date.parse(e.at)))).toBe(true)
      // Every read path served this client: the shared window, the journal itself, the tail's pushes.
      const pages = (yield* StreamConnections.stats).pages
      expect(pages.window - pagesBefore.window, label).toBeGreaterThan(0)
      expect(pages.journal - pagesBefore.journal, label).toBeGreaterThan(0)
      expect(pages.pushed - pagesBefore.pushed, label).toBeGreaterThan(0)
    }),
  )

  it.effect("a client far behind replays the journal itself, in cursor order across digit boundaries", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const head = yield* publishedHead
      const expected = (yield* rowsAfter("1")).filter((r) => r.master === null && r.kind.startsWith("trade."))
      const before = (yield* StreamConnections.stats).pages.journal
      const { conn } = yield* subscribe(base, { channels: ["trades"], cursor: "1" })
      const cursors = yield* Effect.promise(async () => {
        const got: Array<string> = []
        while (true) {
          const f = await conn.next(3000)
          if (f.type !== "events") throw new Error(`${f.code}: ${f.message}`)
          got.push(...f.events.map((e) => e.cursor))
          if (BigInt(f.next_cursor) >= head) return got
        }
      })
      conn.close()
      expect(head).toBeGreaterThan(300n)
      expect(cursors).toEqual(expected.map((r) => r.cursor))
      expect((yield* StreamConnections.stats).pages.journal - before).toBeGreaterThan(1)
    }),
  )

  it.effect("without a cursor the stream starts at the head; new events arrive at once, idle pages every 500 ms", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      yield* append("trade.settled", null, { from: "aster", to: "hyperliquid", old: true })
      const head = yield* publishedHead
      const { conn, first } = yield* subscribe(base, {})
      expect(first).toEqual({ type: "events", events: [], next_cursor: head.toString() })
      const t0 = performance.now()
      yield* append("trade.settled", null, { from: "hyperliquid", to: "aster", fresh: true })
      const page = yield* Effect.promise(() => conn.next(2000))
      expect(performance.now() - t0).toBeLessThan(500)
      expect(page.type === "events" && page.events.map((e) => e.data)).toEqual([
        { from: "hyperliquid", to: "aster", fresh: true },
      ])
      // Idle: empty pages about every 500 ms, all at the same cursor.
      const idle = yield* Effect.promise(async () => {
        const at: Array<number> = []
        for (let i = 0; i < 3; i++) {
          const f = await conn.next(1500)
          if (f.type === "events" && f.events.length === 0) at.push(performance.now())
        }
        return at
      })
      expect(idle.length).toBe(3)
      for (let i = 1; i < idle.length; i++) {
        expect(idle[i]! - idle[i - 1]!).toBeGreaterThan(350)
        expect(idle[i]! - idle[i - 1]!).toBeLessThan(800)
      }
      conn.close()
    }),
  )

  it.effect("pairs filter public trades in either direction; internal public rows never stream", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const { conn: paired } = yield* subscribe(base, { pairs: [{ a: "aster", b: "hyperliquid" }] })
      const { conn: all } = yield* subscribe(base, { channels: ["trades"] })
      yield* append("trade.settled", null, { from: "aster", to: "hyperliquid", n: 1 })
      yield* append("trade.settled", null, { from: "hyperliquid", to: "aster", n: 2 })
      yield* append("trade.settled", null, { from: "aster", to: "aster", n: 3 })
      yield* append("trade.settled", null, { n: 4 })
      yield* append("chain.indexed", null, { n: 5 })
      yield* append("trade.refunded", null, { from: "hyperliquid", to: "aster", n: 6 })
      const head = yield* publishedHead
      const collect = (conn: typeof paired) =>
        Effect.promise(async () => {
          const ns: Array<number> = []
          while (true) {
            const f = await conn.next(3000)
            if (f.type !== "events") throw new Error(f.code)
            ns.push(...f.events.map((e) => e.data.n as number))
            if (BigInt(f.next_cursor) >= head) return ns
          }
        })
      expect(yield* collect(paired)).toEqual([1, 2, 6])
      expect(yield* collect(all)).toEqual([1, 2, 3, 4, 6])
      paired.close()
      all.close()
    }),
  )

  it.effect("snapshot + replay: private GETs answer x-event-cursor; changes after it are replayed", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const account = fresh()
      const token = yield* signIn(base, account)
      const head = yield* publishedHead
      const me = yield* rawRequest(`${base}/v1/me`, { headers: bearer(token) })
      const credentials = yield* rawRequest(`${base}/v1/credentials`, { headers: bearer(token) })
      expect(me.status).toBe(200)
      expect(me.headers["x-event-cursor"]).toBe(head.toString())
      expect(credentials.headers["x-event-cursor"]).toBe(head.toString())
      expect((me.json as { accounts: Array<unknown> }).accounts).toEqual([])
      // A change after the snapshot: the master links itself on a venue.
      const linked = yield* post(`${base}/v1/accounts`, { venue: "aster", address: account.address }, bearer(token))
      expect(linked.status).toBe(201)
      const { conn, first } = yield* subscribe(base, { token, cursor: me.headers["x-event-cursor"] })
      expect(first.type).toBe("events")
      const events = yield* Effect.promise(async () => {
        const got: Array<StreamEvent> = first.type === "events" ? [...first.events] : []
        while (got.length === 0) {
          const f = await conn.next(3000)
          if (f.type === "events") got.push(...f.events)
        }
        return got
      })
      expect(events.map((e) => [e.kind, e.data])).toEqual([
        ["account.linked", { venue: "aster", address: account.address.toLowerCase() }],
      ])
      conn.close()
    }),
  )

  it.effect("a cursor older than the retained journal, or ahead of it, answers cursor_expired", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      for (let i = 0; i < 5; i++) yield* append("trade.settled", null, { from: "aster", to: "hyperliquid", i })
      const head = yield* publishedHead
      expect(yield* pruneJournalThrough(head - 2n)).toBeGreaterThan(0)
      // Oldest retained is head-1: resuming after head-2 is complete, after head-3 is not.
      const ok = yield* subscribe(base, { cursor: (head - 2n).toString() })
      const replayed = yield* Effect.promise(async () => {
        const cursors: Array<string> = []
        while (cursors.length < 2) {
          const f = await ok.conn.next(3000)
          if (f.type === "events") cursors.push(...f.events.map((e) => e.cursor))
        }
        return cursors
      })
      expect(replayed).toEqual([(head - 1n).toString(), head.toString()])
      ok.conn.close()
      for (const cursor of [(head - 3n).toString(), "0", (head + 1000n).toString()]) {
        const { conn, first } = yield* subscribe(base, { cursor })
        expect(first).toMatchObject({ type: "control", code: "cursor_expired" })
        const closed = yield* Effect.promise(() => conn.closed)
        expect(closed.code).toBe(4410)
      }
      // A cursor that is not a decimal string is a protocol error.
      const { first: bad } = yield* subscribe(base, { cursor: "-1" })
      expect(bad).toMatchObject({ type: "control", code: "protocol_error" })
      const { conn: c2, first: bad2 } = yield* subscribe(base, { cursor: 5 })
      expect(bad2).toMatchObject({ type: "control", code: "protocol_error" })
      expect((yield* Effect.promise(() => c2.closed)).code).toBe(1008)
    }),
  )
})
