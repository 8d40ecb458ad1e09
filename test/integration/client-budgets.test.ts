/**
 * Per-client budgets (issue 15, item 2): one client flooding the challenge route or the stream never
 * starves another. Clients are told apart by their socket's address: each test binds its sockets to its
 * own loopback address (127.0.x.y, all routed to the loopback interface on Linux), or, on a server that
 * trusts 127.0.0.1 as a proxy, by `X-Forwarded-For`. Nothing here asserts on timing.
 */
import { request } from "node:http"
import { HttpServer } from "@effect/platform"
import { SqlClient } from "@effect/sql"
import { expect, layer } from "@effect/vitest"
import { Context, Effect, Exit, Layer, Option, Schedule, Scope } from "effect"
import { generatePrivateKey, type PrivateKeyAccount, privateKeyToAccount } from "viem/accounts"
import { AppConfig, DeploymentConfig } from "../../src/Config.ts"
import { StreamConnections } from "../../src/Stream/Connections.ts"
import type { RawResponse } from "../support/Http.ts"
import { baseUrl, TestHttpLive } from "../support/TestServer.ts"
import { testStackWithChain } from "../support/TestStack.ts"
import { refusedWith, subscribeFrom } from "./stream-client.ts"

/** Small shares, so that each limit is reached with a handful of requests. */
const LIMITS = {
  client_challenge_burst: 8,
  client_challenges_per_minute: 1,
  stream_connections_per_client: 4,
  stream_anonymous_connections: 6,
}
/** The main server trusts no proxy (the default). */
const Live = testStackWithChain({ limits: LIMITS })

const fresh = () => privateKeyToAccount(generatePrivateKey())

/** An HTTP request from the loopback address `from`, through node:http so nothing rewrites headers. */
const send = (
  from: string,
  url: string,
  options: { method?: string; headers?: Record<string, string>; body?: unknown } = {},
) =>
  Effect.async<RawResponse, Error>((resume) => {
    const body = options.body === undefined ? undefined : JSON.stringify(options.body)
    const req = request(
      url,
      {
        method: options.method ?? "GET",
        localAddress: from,
        headers: {
          ...(body === undefined
            ? {}
            : { "content-type": "application/json", "content-length": String(Buffer.byteLength(body)) }),
          ...options.headers,
        },
      },
      (res) => {
        const chunks: Array<Buffer> = []
        res.on("data", (c: Buffer) => chunks.push(c))
        res.on("end", () => {
          const text = Buffer.concat(chunks).toString("utf8")
          let json: unknown
          try {
            json = JSON.parse(text)
          } catch {
            json = undefined
          }
          resume(Effect.succeed({ status: res.statusCode ?? 0, headers: res.headers, text, json }))
        })
      },
    )
    req.on("error", (e) => resume(Effect.fail(e)))
    req.end(body)
  }).pipe(Effect.orDie)

const code = (res: RawResponse) => (res.json as { error?: { code: string } } | undefined)?.error?.code

const challenge = (base: string, from: string, headers: Record<string, string> = {}, address = fresh().address) =>
  send(from, `${base}/v1/auth/challenge`, { method: "POST", body: { address }, headers })

/** The browser's sign-in, from `from`. */
const signInFrom = (base: string, account: PrivateKeyAccount, from: string) =>
  Effect.gen(function* () {
    const issued = yield* challenge(base, from, {}, account.address)
    if (issued.status !== 200) return yield* Effect.dieMessage(`challenge from ${from}: ${issued.text}`)
    const { message, nonce } = issued.json as { message: string; nonce: string }
    const signature = yield* Effect.promise(() => account.signMessage({ message }))
    const verified = yield* send(from, `${base}/v1/auth/verify`, { method: "POST", body: { nonce, signature } })
    if (verified.status !== 200) return yield* Effect.dieMessage(`verify from ${from}: ${verified.text}`)
    return (verified.json as { token: string }).token
  })

const stats = StreamConnections.stats
const awaitStats = (until: (s: Effect.Effect.Success<typeof stats>) => boolean) =>
  stats.pipe(Effect.repeat({ schedule: Schedule.spaced("20 millis"), until }), Effect.timeout("10 seconds"))

/** A second HTTP server on the same database, whose deployment trusts 127.0.0.1 and 10.0.0.0/8 as proxies. */
const proxiedServer = Effect.gen(function* () {
  const { deployment } = yield* AppConfig
  const config = AppConfig.make(new DeploymentConfig({ ...deployment, trusted_proxies: ["127.0.0.1", "10.0.0.0/8"] }), {
    port: 0,
    databaseUrl: Option.none(),
    source: "test: trusted proxies",
  })
  const scope = yield* Scope.make()
  const context = yield* Layer.buildWithScope(TestHttpLive.pipe(Layer.provide(Layer.succeed(AppConfig, config))), scope)
  const address = Context.get(context, HttpServer.HttpServer).address
  const base = `http://127.0.0.1:${address._tag === "TcpAddress" ? address.port : 0}`
  return { base, close: Scope.close(scope, Exit.void) }
})

layer(Live, { timeout: "180 seconds", excludeTestServices: true })("per-client budgets", (it) => {
  it.effect("a client flooding challenges from random addresses spends its own budget; others still sign in", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const sql = yield* SqlClient.SqlClient
      const flooder = "127.0.3.1"
      const started = Date.now()
      // The flooder's burst, then its first refusal.
      let admitted = 0
      while (true) {
        const res = yield* challenge(base, flooder)
        if (res.status !== 200) {
          expect([res.status, code(res)]).toEqual([429, "RATE_LIMITED"])
          break
        }
        admitted++
        expect(admitted).toBeLessThanOrEqual(LIMITS.client_challenge_burst + 1)
      }
      expect(admitted).toBeGreaterThanOrEqual(LIMITS.client_challenge_burst)
      // It keeps flooding (600 more, 16 at a time, each for a new address) while three other
      // clients sign in.
      const flood = Effect.forEach(
        Array.from({ length: 600 }, (_, i) => i),
        () => challenge(base, flooder),
        { concurrency: 16 },
      )
      const others = Effect.forEach(
        ["127.0.3.2", "127.0.3.3", "127.0.3.4"],
        (from) => signInFrom(base, fresh(), from),
        {
          concurrency: "unbounded",
        },
      )
      const [flooded, tokens] = yield* Effect.all([flood, others], { concurrency: "unbounded" })
      expect(tokens).toHaveLength(3)
      const limited = flooded.filter((r) => r.status === 429)
      for (const r of flooded.filter((r) => r.status !== 200)) {
        expect([r.status, code(r)]).toEqual([429, "RATE_LIMITED"])
        expect(Number(r.headers["retry-after"])).toBeGreaterThanOrEqual(1)
      }
      // At most the burst plus what its bucket refilled (1 per minute) since it started.
      const floodAdmitted = admitted + flooded.length - limited.length
      const refill = Math.floor(((Date.now() - started) / 60_000) * LIMITS.client_challenges_per_minute) + 1
      expect(floodAdmitted).toBeLessThanOrEqual(LIMITS.client_challenge_burst + refill)
      // The global bucket (burst 120) paid only for challenges that were issued: never drained by the flood.
      const [global] = yield* sql<{ tokens: number }>`select tokens from rate_buckets where key = 'challenge:global'`
      expect(global!.tokens).toBeGreaterThanOrEqual(120 - floodAdmitted - 3)
      // Every refusal came from the flooder's own bucket, which is empty.
      const [own] = yield* sql<{ tokens: number }>`
        select tokens from rate_buckets where key = ${`challenge:client:${flooder}`}`
      expect(own!.tokens).toBeLessThan(1)
    }),
  )

  it.effect("a client's stream share and the anonymous share leave slots for other clients and for tokens", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      yield* awaitStats((s) => s.active === 0)
      const before = yield* stats
      const anonymous = { channels: ["trades"] }
      const [a, b, c, d, e] = ["127.0.1.1", "127.0.1.2", "127.0.1.3", "127.0.1.4", "127.0.1.5"] as const
      // One client holds its share (4) with token-less subscriptions; its 5th is refused.
      const held = yield* Effect.forEach([1, 2, 3, 4], () => subscribeFrom(base, a, anonymous))
      expect(held.map((h) => h.first.type)).toEqual(["events", "events", "events", "events"])
      const fifth = yield* refusedWith(yield* subscribeFrom(base, a, anonymous))
      expect(fifth.control).toMatchObject({ type: "control", code: "too_many_connections" })
      expect(fifth.control.message).toMatch(/this client already holds 4 stream connections/)
      expect(fifth.code).toBe(1013)
      // Other clients still subscribe, without a token, up to the anonymous share (6).
      const other = yield* subscribeFrom(base, b, anonymous)
      const third = yield* subscribeFrom(base, c, anonymous)
      expect([other.first.type, third.first.type]).toEqual(["events", "events"])
      expect((yield* stats).anonymous).toBe(6)
      // The anonymous share is full: one more token-less subscription, from a fresh client, is refused...
      const beyond = yield* refusedWith(yield* subscribeFrom(base, d, anonymous))
      expect(beyond.control).toMatchObject({ type: "control", code: "too_many_connections" })
      expect(beyond.control.message).toMatch(/without a token/)
      expect(beyond.code).toBe(1013)
      // ...while signed-in users still get slots, from that client and another, on either channel.
      const tokenD = yield* signInFrom(base, fresh(), d)
      const tokenE = yield* signInFrom(base, fresh(), e)
      const signedD = yield* subscribeFrom(base, d, { token: tokenD })
      const signedE = yield* subscribeFrom(base, e, { token: tokenE, channels: ["trades"] })
      expect([signedD.first.type, signedE.first.type]).toEqual(["events", "events"])
      // The client share counts every connection of the client, with a token or not.
      const signedA = yield* refusedWith(yield* subscribeFrom(base, a, { token: tokenE }))
      expect(signedA.control.code).toBe("too_many_connections")
      const after = yield* stats
      expect(after.refusedBy.client - before.refusedBy.client).toBe(2)
      expect(after.refusedBy.anonymous - before.refusedBy.anonymous).toBe(1)
      expect(after.refusedBy.full).toBe(before.refusedBy.full)
      // A closed connection gives its slot back to its client.
      held[0]!.conn.close()
      yield* awaitStats((s) => s.anonymous === 5)
      const again = yield* subscribeFrom(base, a, anonymous)
      expect(again.first.type).toBe("events")
      for (const conn of [...held, other, third, signedD, signedE, again].map((o) => o.conn)) conn.close()
      yield* awaitStats((s) => s.active === 0)
    }),
  )

  it.effect("X-Forwarded-For is ignored unless the peer is a configured trusted proxy", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const burst = LIMITS.client_challenge_burst
      const xff = (value: string) => ({ "x-forwarded-for": value })
      // No trusted proxy configured (the default): the header changes nothing; the peer is the client.
      for (let i = 1; i <= burst; i++) {
        expect((yield* challenge(base, "127.0.0.1", xff(`203.0.113.${i}`))).status).toBe(200)
      }
      expect(code(yield* challenge(base, "127.0.0.1", xff("203.0.113.9")))).toBe("RATE_LIMITED")

      const proxied = yield* proxiedServer
      // From a trusted proxy (127.0.0.1, whose own budget is now spent): the header names the client.
      for (let i = 0; i < burst; i++) {
        expect((yield* challenge(proxied.base, "127.0.0.1", xff("203.0.113.10"))).status).toBe(200)
      }
      const spent = yield* challenge(proxied.base, "127.0.0.1", xff("203.0.113.10"))
      expect([spent.status, code(spent)]).toEqual([429, "RATE_LIMITED"])
      // The rightmost hop that is not a trusted proxy: hops the client wrote itself on the left are
      // ignored, trusted proxies (10.0.0.0/8) on the right are skipped.
      expect(code(yield* challenge(proxied.base, "127.0.0.1", xff("198.51.100.77, 203.0.113.10")))).toBe("RATE_LIMITED")
      expect(code(yield* challenge(proxied.base, "127.0.0.1", xff("203.0.113.10, 10.0.0.7")))).toBe("RATE_LIMITED")
      expect((yield* challenge(proxied.base, "127.0.0.1", xff("203.0.113.10, 203.0.113.11"))).status).toBe(200)
      // From a peer that is not a trusted proxy, the header is ignored on that server too.
      for (let i = 0; i < burst; i++) {
        expect((yield* challenge(proxied.base, "127.0.2.1", xff(`198.51.100.${i + 1}`))).status).toBe(200)
      }
      expect(code(yield* challenge(proxied.base, "127.0.2.1", xff("198.51.100.99")))).toBe("RATE_LIMITED")

      // The stream takes the same identity: per forwarded client behind the proxy...
      yield* awaitStats((s) => s.active === 0)
      const anonymous = { channels: ["trades"] }
      const behind = yield* Effect.forEach([1, 2, 3, 4], () =>
        subscribeFrom(proxied.base, "127.0.0.1", anonymous, xff("198.51.100.1")),
      )
      expect(behind.every((o) => o.first.type === "events")).toBe(true)
      const overShare = yield* refusedWith(
        yield* subscribeFrom(proxied.base, "127.0.0.1", anonymous, xff("198.51.100.1")),
      )
      expect(overShare.control.code).toBe("too_many_connections")
      const neighbour = yield* subscribeFrom(proxied.base, "127.0.0.1", anonymous, xff("198.51.100.2"))
      expect(neighbour.first.type).toBe("events")
      for (const o of [...behind, neighbour]) o.conn.close()
      yield* awaitStats((s) => s.active === 0)
      // ...and per peer on the server that trusts no proxy, whatever the header says.
      const direct = yield* Effect.forEach([1, 2, 3, 4], (i) =>
        subscribeFrom(base, "127.0.0.1", anonymous, xff(`198.51.100.${10 + i}`)),
      )
      expect(direct.every((o) => o.first.type === "events")).toBe(true)
      const spoofed = yield* refusedWith(yield* subscribeFrom(base, "127.0.0.1", anonymous, xff("198.51.100.20")))
      expect(spoofed.control.code).toBe("too_many_connections")
      for (const o of direct) o.conn.close()
      yield* awaitStats((s) => s.active === 0)
      yield* proxied.close
    }),
  )
})
