/**
 * The stream's limits hold across runners on one database (spec Limits: 256 stream connections; issue 22
 * item 3): this process serves one HTTP server (A) and `src/main.ts` runs as a second service process (B)
 * on the same PostgreSQL. A client's share, the token-less share and the 256 are counted over both; when B
 * is SIGKILLed, its slots stop counting within the slot lifetime and A admits again. And both runners deliver the
 * same events: B's stream reader takes what its journal publisher hands over (JournalFeed), A's reads them.
 */
import { SqlClient } from "@effect/sql"
import { expect, layer } from "@effect/vitest"
import { Context, Effect, Layer, Redacted } from "effect"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { DevelopmentConfig } from "../../src/DevelopmentConfig.ts"
import { freePorts } from "../../src/FreePort.ts"
import { databaseLayer } from "../../src/Sql/Database.ts"
import { SLOT_LIFETIME_SECONDS } from "../../src/Stream/Slots.ts"
import { scopedConfigFile } from "../support/ConfigFile.ts"
import { testDatabaseUrl } from "../support/Database.ts"
import { pollUntil } from "../support/Poll.ts"
import { startService } from "../support/Process.ts"
import { signIn } from "../support/SignIn.ts"
import { startSiweAnvil } from "../support/SiweAnvil.ts"
import { TEST_ORIGIN, testAppConfig } from "../support/TestConfig.ts"
import { baseUrl, TestHttpLive } from "../support/TestServer.ts"
import { append, type EventFrame, refusedWith, type StreamConn, subscribeFrom } from "./stream-client.ts"

const LIMITS = { stream_connections_per_client: 4, stream_anonymous_connections: 6 }

class Env extends Context.Tag("test/RunnersEnv")<Env, { readonly url: string }>() {}

const Live = Layer.unwrapScoped(
  Effect.gen(function* () {
    const url = yield* testDatabaseUrl
    const anvil = yield* Effect.acquireRelease(
      Effect.promise(() => startSiweAnvil(999)),
      (a) => Effect.promise(() => a.stop()),
    )
    return TestHttpLive.pipe(
      Layer.provideMerge(databaseLayer(url)),
      Layer.provideMerge(
        testAppConfig({
          venues: DevelopmentConfig.venues.map((v) => ({ ...v, rpc_urls: [anvil.url] })),
          auth: { rpc_urls: [anvil.url] },
          limits: LIMITS,
        }),
      ),
      Layer.provideMerge(Layer.succeed(Env, { url: Redacted.value(url) })),
    )
  }),
)

const anonymous = { channels: ["trades"] }

/** `src/main.ts` as runner B on the test's database (its own cluster: it runs the journal publisher); its base URL. */
const startRunnerB = (prefix: string, config: Record<string, unknown> = {}) =>
  Effect.gen(function* () {
    const { url } = yield* Env
    const configFile = yield* scopedConfigFile(prefix, { ...DevelopmentConfig, app_origins: [TEST_ORIGIN], ...config })
    const [port, runnerPort] = yield* freePorts(2)
    const service = yield* startService({
      DATABASE_URL: url,
      SETTLEMENT_CONFIG: configFile,
      PORT: String(port),
      RUNNER_PORT: String(runnerPort),
    })
    return { service, b: `http://127.0.0.1:${port}` }
  })

/** Live rows of stream_slots (every runner's open connections). */
const liveSlots = Effect.flatMap(SqlClient.SqlClient, (sql) =>
  Effect.map(
    sql<{ n: number }>`select count(*)::int as n from stream_slots
      where heartbeat_at > now() - make_interval(secs => ${SLOT_LIFETIME_SECONDS})`,
    (rows) => rows[0]!.n,
  ),
)

layer(Live, { timeout: "240 seconds", excludeTestServices: true })("stream limits across runners", (it) => {
  it.scoped("client share, token-less share and the 256 over two processes; a killed runner's slots free", () =>
    Effect.gen(function* () {
      const a = yield* baseUrl
      const { service, b } = yield* startRunnerB("stream-runners-", { limits: LIMITS })
      const open: Array<StreamConn> = []
      const admitted = (base: string, from: string, subscription: Record<string, unknown>) =>
        Effect.tap(subscribeFrom(base, from, subscription), (o) => {
          expect(o.first.type, `${from} on ${base === a ? "A" : "B"}`).toBe("events")
          open.push(o.conn)
        })

      // One client's share (4): two connections on each runner; a fifth is refused on either.
      for (const base of [a, b, a, b]) yield* admitted(base, "127.0.4.1", anonymous)
      for (const base of [a, b]) {
        const fifth = yield* refusedWith(yield* subscribeFrom(base, "127.0.4.1", anonymous))
        expect(fifth.control).toMatchObject({ type: "control", code: "too_many_connections" })
        expect(fifth.control.message).toMatch(/this client already holds 4 stream connections/)
        expect(fifth.code).toBe(1013)
      }

      // The token-less share (6): two more, one per runner, then none on either; a token still gets in.
      yield* admitted(a, "127.0.4.2", anonymous)
      yield* admitted(b, "127.0.4.3", anonymous)
      for (const base of [a, b]) {
        const beyond = yield* refusedWith(yield* subscribeFrom(base, "127.0.4.4", anonymous))
        expect(beyond.control).toMatchObject({ type: "control", code: "too_many_connections" })
        expect(beyond.control.message).toMatch(/without a token/)
      }
      const token = yield* signIn(a, privateKeyToAccount(generatePrivateKey()))
      yield* admitted(b, "127.0.4.4", { token })
      yield* admitted(a, "127.0.4.4", { token })

      // The 256: signed connections from more clients (4 each), alternating runners, up to 256 in all.
      expect(yield* liveSlots).toBe(8)
      const rest = Array.from({ length: 248 }, (_, i) => ({
        from: `127.0.5.${Math.floor(i / 4) + 1}`,
        base: i % 2 === 0 ? a : b,
      }))
      yield* Effect.forEach(rest, ({ from, base }) => admitted(base, from, { token }), { concurrency: 16 })
      expect(yield* liveSlots).toBe(256)
      for (const base of [a, b]) {
        const full = yield* refusedWith(yield* subscribeFrom(base, "127.0.6.1", { token }))
        expect(full.control).toMatchObject({ type: "control", code: "too_many_connections" })
        expect(full.control.message).toMatch(/256 stream connections are open/)
      }

      // B dies without closing anything: its slots stop counting within the slot lifetime, and A admits again.
      service.child.kill("SIGKILL")
      yield* pollUntil(liveSlots, (n) => n < 256, {
        every: "500 millis",
        within: `${SLOT_LIFETIME_SECONDS + 10} seconds`,
      })
      yield* admitted(a, "127.0.6.1", { token })
      for (const conn of open) conn.close()
      yield* pollUntil(liveSlots, (n) => n === 0, { within: "10 seconds" })
    }),
  )

  it.scoped("the publisher's runner (its hand-over) and another runner (its reads) deliver the same events", () =>
    Effect.gen(function* () {
      const a = yield* baseUrl
      // B's cluster runs the journal publisher; this process (A) runs none.
      const { b } = yield* startRunnerB("stream-handover-")
      const subscribers = yield* Effect.forEach([a, b], (base) => subscribeFrom(base, "127.0.7.1", anonymous))
      const N = 60
      // One at a time, then four at once: publications of one row and of several.
      for (let i = 0; i < N / 2; i++) yield* append("trade.settled", null, { from: "aster", to: "hyperliquid", i })
      yield* Effect.forEach(
        Array.from({ length: N / 2 }, (_, i) => N / 2 + i),
        (i) => append("trade.settled", null, { from: "hyperliquid", to: "aster", i }),
        { concurrency: 4, discard: true },
      )
      const delivered = yield* Effect.forEach(subscribers, ({ conn }) =>
        Effect.promise(async () => {
          const events: Array<unknown> = []
          while (events.length < N) {
            const frame = await conn.next(15_000)
            if (frame.type === "events") events.push(...(frame as EventFrame).events)
          }
          conn.close()
          return events
        }),
      )
      expect(delivered[0]).toHaveLength(N)
      const cursors = delivered[0]!.map((e) => BigInt((e as { cursor: string }).cursor))
      expect(cursors.every((c, i) => i === 0 || c === cursors[i - 1]! + 1n)).toBe(true)
      expect(delivered[1]).toEqual(delivered[0])
    }),
  )
})
