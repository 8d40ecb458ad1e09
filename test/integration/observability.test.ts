import { writeFileSync } from "node:fs"
import { SqlClient } from "@effect/sql"
import { expect, layer } from "@effect/vitest"
import { Context, Effect, Layer, LogLevel } from "effect"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { pendingKeys, SettlementLive } from "../../actors/Settlement.ts"
import { runTxRelayer } from "../../actors/TxRelayer.ts"
import { runVenueWatcher } from "../../actors/VenueWatcher.ts"
import { ChainClients } from "../../src/Chain/ChainClients.ts"
import { FaultPoint } from "../../src/Chain/FaultPoint.ts"
import { AppConfig } from "../../src/Config.ts"
import { loggingLayer } from "../../src/Observability/Log.ts"
import { OperatorListener, operatorLayer } from "../../src/Observability/OperatorListener.ts"
import { Relayer } from "../../src/Relayer.ts"
import { Settlement } from "../../src/Settlement/Entity.ts"
import { account, key, startTestChain, type TestChain, venueEntry } from "../support/ChainDevnet.ts"
import { TestDatabaseLive } from "../support/Database.ts"
import { rawRequest } from "../support/Http.ts"
import { runKeyed } from "../support/KeyedActors.ts"
import { pollUntil } from "../support/Poll.ts"
import {
  histogramCount,
  type PromFamily,
  parsePrometheus,
  sampleOf,
  sampleValuesAreNumbers,
  seriesValue,
} from "../support/PrometheusText.ts"
import { issueCredential, registerIdentity, renew } from "../support/QuoteIdentities.ts"
import { bearer, post } from "../support/SignIn.ts"
import { makerOrder, signedTake } from "../support/Takes.ts"
import { testAppConfig } from "../support/TestConfig.ts"
import { baseUrl, TestHttpLive } from "../support/TestServer.ts"

/**
 * Issue 17 items 1 and 2 on a real flow: the service's own log (src/Observability/Log.ts, JSON, every level)
 * captured whole while a maker signs in, registers a quote identity, gets an `mk_` credential and renews its
 * lease with it, and a take over its funded order settles on two devnet chains (watchers, relayers and the
 * settlement actor running). Then every token, private key, signature and fill secret the run used is searched
 * for in the log: none may appear. The log must also hold the lines an operator needs (access lines with
 * route templates and request ids, fill state changes, relayer submits and finals).
 */

const OPERATOR = 9
const operator = account(OPERATOR).address
const FUNDER = account(8)
const PAYER = account(3)
const OWNER = account(1)
const M = "hyperliquid"
const T = "aster"

class Env extends Context.Tag("test/ObsEnv")<
  Env,
  { readonly hl: TestChain; readonly aster: TestChain; readonly lines: Array<string> }
>() {}

const chainOf = (chainId: number, kind: "hyperliquid" | "aster") =>
  Effect.acquireRelease(
    Effect.promise(() => startTestChain({ chainId, kind })),
    (c) => Effect.promise(() => c.anvil.stop()),
  )

const fast = {
  watcher: { poll_ms: 100, confirmations: 2, integrity_interval_seconds: 3600 },
  relayer: { poll_ms: 100 },
}
const entry = (c: TestChain, id: string) => {
  const { legacy_escrow: _legacy, ...v } = venueEntry(c, id, fast)
  return v
}

const lines: Array<string> = []

const Live = Layer.unwrapScoped(
  Effect.gen(function* () {
    const [hl, aster] = yield* Effect.all([chainOf(999, "hyperliquid"), chainOf(42161, "aster")], { concurrency: 2 })
    const config = testAppConfig({
      venues: [entry(hl, M), entry(aster, T)],
      auth: { rpc_urls: [hl.anvil.rpcUrl] },
      operator_key: key(OPERATOR),
    })
    const base = Layer.mergeAll(TestHttpLive, ChainClients.Live, FaultPoint.Noop, Relayer.Live).pipe(
      Layer.provideMerge(TestDatabaseLive),
      Layer.provideMerge(config),
    )
    const actors = Effect.gen(function* () {
      const { deployment } = yield* AppConfig
      for (const v of deployment.venues) {
        yield* Effect.forkScoped(runVenueWatcher(v).pipe(Effect.annotateLogs("actor", `venue-watcher:${v.id}`)))
        yield* Effect.forkScoped(runTxRelayer(v).pipe(Effect.annotateLogs("actor", `tx-relayer:${v.id}`)))
      }
      yield* Effect.forkScoped(runKeyed(SettlementLive, Settlement, pendingKeys))
      yield* Effect.forkScoped(
        Effect.promise(() => Promise.all([hl.test.mine({ blocks: 1 }), aster.test.mine({ blocks: 1 })])).pipe(
          Effect.zipRight(Effect.sleep("250 millis")),
          Effect.forever,
        ),
      )
      return { hl, aster, lines }
    })
    // The log is installed first, so the server's and the actors' fibers inherit it.
    return Layer.scoped(Env, actors).pipe(
      Layer.provideMerge(Layer.merge(base, operatorLayer({ host: "127.0.0.1", port: 0 }).pipe(Layer.provide(base)))),
      Layer.provideMerge(loggingLayer({ format: "json", level: LogLevel.All, sink: (l) => lines.push(l) })),
    )
  }),
)

/** Sign-in as the browser does, keeping the signature (to look for it in the log). */
const signInKeeping = (base: string, who: ReturnType<typeof account>) =>
  Effect.gen(function* () {
    const challenge = yield* post(`${base}/v1/auth/challenge`, { address: who.address })
    const { message, nonce } = challenge.json as { message: string; nonce: string }
    const signature = yield* Effect.promise(() => who.signMessage({ message }))
    const verified = yield* post(`${base}/v1/auth/verify`, { nonce, signature })
    expect(verified.status).toBe(200)
    return { token: (verified.json as { token: string }).token, signature }
  })

/** GET /metrics on the operator listener, parsed (the parser throws on anything malformed). */
const scrape = Effect.gen(function* () {
  const { url } = yield* OperatorListener
  const res = yield* rawRequest(`${url}/metrics`)
  expect(res.status).toBe(200)
  expect(res.headers["content-type"]).toMatch(/^text\/plain/)
  if (process.env.OBS_METRICS_OUT) writeFileSync(`${process.env.OBS_METRICS_OUT}.${Date.now()}`, res.text)
  return { families: parsePrometheus(res.text), text: res.text }
})

const parsed = () => lines.map((l) => JSON.parse(l) as Record<string, unknown>)

layer(Live, { timeout: "300 seconds", excludeTestServices: true })("operators' log and metrics on devnet", (it) => {
  it.effect("a full flow logs every step with ids and no token, key, signature or secret", () =>
    Effect.gen(function* () {
      const { hl, aster } = yield* Env
      const base = yield* baseUrl
      const sql = yield* SqlClient.SqlClient
      const secrets: Array<string> = []

      // Sign-in, identity, credential, a lease renewal with the credential (its one-statement renewal), reads.
      const owner = yield* signInKeeping(base, OWNER)
      const payer = yield* signInKeeping(base, PAYER)
      secrets.push(owner.token, owner.signature, payer.token, payer.signature)
      const signerKey = generatePrivateKey()
      const signer = privateKeyToAccount(signerKey)
      const identity = yield* registerIdentity(base, owner.token, signer)
      const credential = yield* issueCredential(base, owner.token, identity.id, ["quote", "read"])
      secrets.push(credential.token)
      expect((yield* renew(base, credential.token, identity.id, 60)).status).toBe(200)
      expect((yield* rawRequest(`${base}/v1/me`, { headers: bearer(owner.token) })).status).toBe(200)
      expect((yield* rawRequest(`${base}/v1/credentials`, { headers: bearer(credential.token) })).status).not.toBe(500)
      // A refused bearer: the token it carried must not be logged either.
      const bogus = `st_${"x".repeat(43)}`
      secrets.push(bogus)
      expect((yield* rawRequest(`${base}/v1/me`, { headers: bearer(bogus) })).status).toBe(401)

      const beforeScrape = yield* scrape
      const before = beforeScrape.families
      // A take over a funded maker order, settled by the actors.
      const makerSignerKey = generatePrivateKey()
      const makerSigner = privateKeyToAccount(makerSignerKey)
      const order = yield* makerOrder(hl, aster, {
        owner: account(2),
        signer: makerSigner,
        relayer: FUNDER,
        operator,
        payee: privateKeyToAccount(generatePrivateKey()).address,
        amount: 3_000_000n,
        makerVenue: M,
        takerVenue: T,
      })
      const take = yield* signedTake(hl, aster, {
        payer: PAYER,
        recipient: privateKeyToAccount(generatePrivateKey()).address,
        parts: [{ order, amountIn: 1_000_000n, amountOut: 1_000_000n }],
        makerVenue: M,
        takerVenue: T,
      })
      yield* pollUntil(
        Effect.map(sql<{ state: string }>`select state from takes where id = ${take.takeId}`, (r) => r[0]?.state),
        (state) => state === "settled",
        { every: "250 millis", within: "150 seconds" },
      )

      // Every secret the run used: tokens and sign-in signatures above; private keys; stored signatures; fill secrets.
      for (const i of [1, 2, 3, 8, OPERATOR]) secrets.push(key(i))
      secrets.push(signerKey, makerSignerKey)
      for (const f of take.fills) secrets.push(f.secret)
      const stored = yield* sql<{ s: string | null }>`
        select signature as s from fills where take_id = ${take.takeId}
        union all select permit_signature from takes where id = ${take.takeId}
        union all select signature from quote_sets where order_id = ${order.orderId}
        union all select signature from closes
        union all select signature from withdrawals`
      for (const r of stored) if (r.s !== null) secrets.push(r.s)

      const log = lines.join("\n")
      // OBS_LOG_OUT=<file> keeps the run's whole log for reading.
      if (process.env.OBS_LOG_OUT) writeFileSync(process.env.OBS_LOG_OUT, log)
      const needles = [...new Set(secrets.filter((s) => typeof s === "string" && s.length >= 20))]
      expect(needles.length).toBeGreaterThanOrEqual(14)
      for (const s of needles) {
        // Hex values in any case, and without their 0x (a value embedded in calldata or text).
        const bare = s.startsWith("0x") ? s.slice(2).toLowerCase() : s
        expect(log.toLowerCase().includes(bare.toLowerCase()), `the log holds a secret (${s.slice(0, 8)}…)`).toBe(false)
      }

      // What the operator needs is there: JSON lines with level and time, access lines with templates and ids.
      const records = parsed()
      for (const r of records) {
        expect(typeof r.level).toBe("string")
        expect(Number.isNaN(Date.parse(String(r.time)))).toBe(false)
      }
      const access = records.filter((r) => r.message === "request")
      expect(access.map((r) => r.route)).toEqual(
        expect.arrayContaining(["/v1/auth/challenge", "/v1/auth/verify", "/v1/me", "/v1/quote-identities/{id}/lease"]),
      )
      for (const r of access) {
        expect(r.request_id).toMatch(/^[0-9a-f-]{36}$/)
        expect(typeof r.duration_ms).toBe("number")
        expect(String(r.route)).not.toMatch(/[0-9a-f]{8}-[0-9a-f]{4}/)
      }
      expect(access.some((r) => r.route === "/v1/me" && r.status === 401)).toBe(true)
      const fillLines = records.filter((r) => r.fill_id === take.fills[0]!.id && String(r.message).startsWith("fill "))
      expect(fillLines.map((r) => r.state)).toEqual(expect.arrayContaining(["locking", "locked", "settled"]))
      for (const r of fillLines) expect(r.take_id).toBe(take.takeId)
      const relayer = records.filter((r) => String(r.message).startsWith("relayer "))
      expect(relayer.map((r) => r.message)).toEqual(expect.arrayContaining(["relayer pending", "relayer final"]))
      for (const r of relayer) {
        expect(r.tx_key).toBeTypeOf("string")
        expect(r.venue).toBeTypeOf("string")
      }
      expect(log).not.toContain("[object Object]")

      // Metrics moved with the flow: relayer submits and finals, fill transitions and step latency.
      const afterScrape = yield* scrape
      const after = afterScrape.families
      const moved = (family: string, labels: Record<string, string>) =>
        seriesValue(after, family, labels) - seriesValue(before, family, labels)
      expect(moved("relayer_submitted_total", { venue: M })).toBeGreaterThanOrEqual(2) // lock, claim
      expect(moved("relayer_submitted_total", { venue: T })).toBeGreaterThanOrEqual(2) // pay, claimPayment
      expect(moved("relayer_final_total", { venue: M })).toBeGreaterThanOrEqual(1)
      expect(moved("settlement_fill_transitions_total", { state: "settled" })).toBe(1)
      expect(
        histogramCount(afterScrape.text, "settlement_fill_step_seconds", { state: "settled" }) -
          histogramCount(beforeScrape.text, "settlement_fill_step_seconds", { state: "settled" }),
      ).toBe(1)
      expect(seriesValue(after, "relayer_gas_balance_wei", { venue: M })).toBeGreaterThan(0)
      expect(sampleOf(after, "watcher_head_lag_blocks", { venue: T })).toBeDefined()
      expect(sampleOf(after, "relayer_pending", { venue: M, status: "queued" })?.value).toBe("0")
      expect(sampleOf(after, "settlement_fills", { state: "locking" })?.value).toBe("0")
    }),
  )

  it.effect(
    "GET /metrics: Prometheus text a real parser reads, request counters that move, only on the operator port",
    () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const first = yield* scrape
        // Every family typed and documented; the families an operator alerts on are there.
        for (const f of first.families.values()) {
          expect(["COUNTER", "GAUGE", "HISTOGRAM", "SUMMARY", "UNTYPED"]).toContain(f.type)
        }
        const types = (name: string) => (first.families.get(name) as PromFamily | undefined)?.type
        expect(types("http_requests_total")).toBe("COUNTER")
        expect(types("http_request_duration_seconds")).toBe("HISTOGRAM")
        for (const name of [
          "relayer_pending",
          "relayer_gas_balance_wei",
          "watcher_head_lag_blocks",
          "watcher_finalized_lag_blocks",
          "watcher_ready",
          "settlement_fills",
          "closes",
          "withdrawals",
          "journal_unpublished_rows",
          "journal_oldest_unpublished_seconds",
          "stream_connections",
        ]) {
          expect(types(name), name).toBe("GAUGE")
        }

        const info = { method: "GET", route: "/v1/info", status: "200" }
        const me = { method: "GET", route: "/v1/me", status: "401" }
        const n0 = seriesValue(first.families, "http_requests_total", info)
        const m0 = seriesValue(first.families, "http_requests_total", me)
        expect(sampleValuesAreNumbers(first.text)).toBe(true)
        const h0 = histogramCount(first.text, "http_request_duration_seconds", { method: "GET", route: "/v1/me" })
        for (let i = 0; i < 3; i++) expect((yield* rawRequest(`${base}/v1/info`)).status).toBe(200)
        for (let i = 0; i < 2; i++)
          expect((yield* rawRequest(`${base}/v1/me`, { headers: bearer(`st_${"y".repeat(43)}`) })).status).toBe(401)
        const secondScrape = yield* scrape
        const second = secondScrape.families
        expect(seriesValue(second, "http_requests_total", info) - n0).toBe(3)
        expect(seriesValue(second, "http_requests_total", me) - m0).toBe(2)
        expect(
          histogramCount(secondScrape.text, "http_request_duration_seconds", { method: "GET", route: "/v1/me" }) - h0,
        ).toBe(2)
        expect(secondScrape.text).toMatch(/^http_request_duration_seconds_bucket\{.*le="\+Inf".*\} \d+$/m)
        // Route templates only: no raw id ever becomes a label.
        for (const m of second.get("http_requests_total")?.metrics ?? []) {
          expect(m.labels?.route ?? "").not.toMatch(/[0-9a-f]{8}-[0-9a-f]{4}|0x[0-9a-f]{16}/)
        }

        // The public API does not serve /metrics; the operator listener serves nothing else.
        expect((yield* rawRequest(`${base}/metrics`)).status).toBe(404)
        const { url } = yield* OperatorListener
        expect((yield* rawRequest(`${url}/v1/info`)).status).toBe(404)
      }),
  )
})
