import { createServer } from "node:http"
import { SqlClient } from "@effect/sql"
import { expect, layer } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import type { Hex } from "viem"
import { runTxRelayer } from "../../actors/TxRelayer.ts"
import { runVenueWatcher } from "../../actors/VenueWatcher.ts"
import { ChainClients } from "../../src/Chain/ChainClients.ts"
import { FaultPoint } from "../../src/Chain/FaultPoint.ts"
import { AppConfig } from "../../src/Config.ts"
import { tracingLayer } from "../../src/Observability/Tracing.ts"
import { account, fundOrders, key, startTestChain, type TestChain, venueEntry } from "../support/ChainDevnet.ts"
import { TestDatabaseLive } from "../support/Database.ts"
import { rawRequest } from "../support/Http.ts"
import { pollUntil } from "../support/Poll.ts"
import { bearer, post, signIn } from "../support/SignIn.ts"
import { testAppConfig } from "../support/TestConfig.ts"
import { baseUrl, TestHttpLive } from "../support/TestServer.ts"

/**
 * Issue 17 item 3: one request's trace, exported by the service's real OTLP exporter (OtlpTracer, JSON over
 * HTTP) to an in-memory collector in this test. The request is an owner's signed close (POST /v1/escrow/close)
 * on a devnet chain with the watcher, the CloseQueue (an entity on the test server's cluster) and the TxRelayer running: its trace runs from the route's
 * server span (with the request id) through `relayer.submit` and its SQL transaction, into the TxRelayer's
 * `relayer.sent` (another fiber: parented through the traceparent stored on the relayer row), which carries the
 * transaction's hash. (A take's lock is relayed by the Settlement sweep, which no request's span reaches.)
 */

const OPERATOR = 9
const FUNDER = account(8)
const ELSEWHERE = "0x00000000000000000000000000000000000bee01" as const

interface OtlpAttribute {
  readonly key: string
  readonly value: { readonly stringValue?: string; readonly intValue?: string | number; readonly boolValue?: boolean }
}
interface OtlpSpan {
  readonly traceId: string
  readonly spanId: string
  readonly parentSpanId?: string
  readonly name: string
  readonly kind: number
  readonly attributes: ReadonlyArray<OtlpAttribute>
}

class Env extends Context.Tag("test/TracingEnv")<
  Env,
  { readonly hl: TestChain; readonly spans: Array<OtlpSpan>; readonly bodies: Array<string> }
>() {}

/** An OTLP/HTTP traces endpoint that keeps what it receives. */
const collector = Effect.acquireRelease(
  Effect.async<{ url: string; spans: Array<OtlpSpan>; bodies: Array<string>; close: () => void }>((resume) => {
    const spans: Array<OtlpSpan> = []
    const bodies: Array<string> = []
    const server = createServer((req, res) => {
      let body = ""
      req.on("data", (c: Buffer) => {
        body += c.toString("utf8")
      })
      req.on("end", () => {
        bodies.push(body)
        const data = JSON.parse(body) as {
          resourceSpans: Array<{ scopeSpans: Array<{ spans: Array<OtlpSpan> }> }>
        }
        for (const r of data.resourceSpans) for (const s of r.scopeSpans) spans.push(...s.spans)
        res.writeHead(200, { "content-type": "application/json" }).end("{}")
      })
    })
    server.listen(0, "127.0.0.1", () => {
      const address = server.address()
      const port = typeof address === "object" && address !== null ? address.port : 0
      resume(
        Effect.succeed({
          url: `http://127.0.0.1:${port}/v1/traces`,
          spans,
          bodies,
          close: () => {
            server.closeAllConnections()
            server.close()
          },
        }),
      )
    })
  }),
  (c) => Effect.sync(c.close),
)

const Live = Layer.unwrapScoped(
  Effect.gen(function* () {
    const hl = yield* Effect.acquireRelease(
      Effect.promise(() => startTestChain({ chainId: 999, kind: "hyperliquid" })),
      (c) => Effect.promise(() => c.anvil.stop()),
    )
    const sink = yield* collector
    const { legacy_escrow: _legacy, ...venue } = venueEntry(hl, "hyperliquid", {
      watcher: { poll_ms: 100, confirmations: 2, integrity_interval_seconds: 3600 },
      relayer: { poll_ms: 100 },
    })
    const config = testAppConfig({
      venues: [venue],
      auth: { rpc_urls: [hl.anvil.rpcUrl] },
      operator_key: key(OPERATOR),
    })
    const base = Layer.mergeAll(TestHttpLive, ChainClients.Live, FaultPoint.Noop).pipe(
      Layer.provideMerge(TestDatabaseLive),
      Layer.provideMerge(config),
    )
    const actors = Effect.gen(function* () {
      const { deployment } = yield* AppConfig
      for (const v of deployment.venues) {
        yield* Effect.forkScoped(runVenueWatcher(v))
        yield* Effect.forkScoped(runTxRelayer(v))
      }
      yield* Effect.forkScoped(
        Effect.promise(() => hl.test.mine({ blocks: 1 })).pipe(
          Effect.zipRight(Effect.sleep("250 millis")),
          Effect.forever,
        ),
      )
      return { hl, spans: sink.spans, bodies: sink.bodies }
    })
    // The tracer is installed first, so the server's and the actors' fibers inherit it (as main.ts does).
    return Layer.scoped(Env, actors).pipe(
      Layer.provideMerge(base),
      Layer.provideMerge(tracingLayer({ url: sink.url, exportInterval: "200 millis" })),
    )
  }),
)

const attr = (span: OtlpSpan, name: string) => {
  const v = span.attributes.find((a) => a.key === name)?.value
  return v?.stringValue ?? (v?.intValue === undefined ? v?.boolValue : Number(v.intValue))
}

layer(Live, { timeout: "180 seconds", excludeTestServices: true })("traces over OTLP", (it) => {
  it.effect("a close's trace: route span with the request id → relayer.submit → its SQL → the TxRelayer's send", () =>
    Effect.gen(function* () {
      const { hl, spans, bodies } = yield* Env
      const sql = yield* SqlClient.SqlClient
      const base = yield* baseUrl
      const owner = account(3)
      const token = yield* signIn(base, owner)
      expect(
        (yield* post(`${base}/v1/accounts`, { venue: "hyperliquid", address: owner.address }, bearer(token))).status,
      ).toBe(201)
      const [order] = yield* Effect.promise(() =>
        fundOrders(hl, { owner, relayer: FUNDER, label: "traced", count: 1, amount: 5_000_000n, operator: ELSEWHERE }),
      )
      const orderId = order!.orderId.toLowerCase()
      yield* pollUntil(
        Effect.map(rawRequest(`${base}/v1/escrow`, { headers: bearer(token) }), (r) =>
          JSON.stringify(r.json).includes(orderId),
        ),
        (listed) => listed,
        { every: "200 millis", within: "60 seconds" },
      )
      const prepared = yield* post(
        `${base}/v1/escrow/close/prepare`,
        { venue: "hyperliquid", order_id: orderId },
        bearer(token),
      )
      expect(prepared.status, prepared.text).toBe(200)
      // biome-ignore lint/suspicious/noExplicitAny: wire typed data
      const p = prepared.json as { to_sign: Array<{ typed_data: any }> } & Record<string, unknown>
      const signature = (yield* Effect.promise(() => owner.signTypedData(p.to_sign[0]!.typed_data))) as Hex
      const requestId = "7ace0000-0000-4000-8000-000000000001"
      const closed = yield* post(
        `${base}/v1/escrow/close`,
        {
          venue: p.venue,
          order_id: p.order_id,
          dex: p.dex,
          nonce: p.nonce,
          deadline: p.deadline,
          signature,
          to_margin: p.to_margin,
        },
        { ...bearer(token), "x-request-id": requestId },
      )
      expect(closed.status, closed.text).toBe(200)
      expect(closed.headers["x-request-id"]).toBe(requestId)

      // The route's server span, then everything of its trace, until the TxRelayer's send is exported.
      const route = yield* pollUntil(
        Effect.sync(() => spans.find((s) => attr(s, "request_id") === requestId && s.kind === 2)),
        (s) => s !== undefined,
        { every: "200 millis", within: "30 seconds" },
      )
      expect(route!.name).toBe("POST /v1/escrow/close")
      expect(attr(route!, "http.response.status_code")).toBe(200)
      expect(route!.parentSpanId ?? "").toBe("")
      const trace = () => spans.filter((s) => s.traceId === route!.traceId)
      yield* pollUntil(
        Effect.sync(() => trace().some((s) => s.name === "relayer.sent")),
        (found) => found,
        { every: "200 millis", within: "60 seconds" },
      )
      const byId = new Map(trace().map((s) => [s.spanId, s]))
      const ancestry = (s: OtlpSpan): Array<string> => {
        const chain: Array<string> = []
        for (let at: OtlpSpan | undefined = s; at !== undefined; at = byId.get(at.parentSpanId ?? ""))
          chain.push(at.name)
        return chain
      }

      // relayer.submit under the route span, in the request (request_id on it), with its statement below.
      const submit = trace().find((s) => s.name === "relayer.submit")!
      expect(ancestry(submit).at(-1)).toBe("POST /v1/escrow/close")
      expect(attr(submit, "request_id")).toBe(requestId)
      expect(attr(submit, "venue")).toBe("hyperliquid")
      const key = attr(submit, "tx_key") as string
      const insert = trace().find(
        (s) => s.name === "sql.execute" && String(attr(s, "db.query.text")).includes("insert into relayer_requests"),
      )!
      // The request, its journal row and wake-ups are one statement (no transaction of the submit's own).
      expect(ancestry(insert)).toEqual(["sql.execute", ...ancestry(submit)])

      // The TxRelayer's send: another fiber, the same trace, parented on the submit, with the hash it sent.
      const sent = trace().find((s) => s.name === "relayer.sent")!
      expect(sent.parentSpanId).toBe(submit.spanId)
      expect(attr(sent, "tx_key")).toBe(key)
      expect(attr(sent, "call")).toBe("closeWithSig")
      const [row] = yield* sql<{ tx_hash: string | null; trace_parent: string | null }>`
        select tx_hash, trace_parent from relayer_requests where idempotency_key = ${key}`
      expect(row!.trace_parent).toBe(`00-${route!.traceId}-${submit.spanId}-01`)
      const attempts = yield* sql<{ tx_hash: string }>`
        select a.tx_hash from relayer_attempts a join relayer_requests r on r.id = a.request_id
        where r.idempotency_key = ${key} order by attempt`
      expect(attempts.map((a) => a.tx_hash)).toContain(attr(sent, "tx_hash"))

      // Nothing exported holds the owner's signature or session token (SQL spans carry statements, not values).
      const exported = bodies.join("\n")
      expect(exported).not.toContain(signature.slice(2))
      expect(exported).not.toContain(token)
    }),
  )

  it.effect(
    "a refused request's failed span and a log inside a span are exported as the log shows them: no frames",
    () =>
      Effect.gen(function* () {
        const { spans, bodies } = yield* Env
        const base = yield* baseUrl
        const signature = `0x${"ab".repeat(32)}${"11".repeat(32)}1b`
        // An unknown nonce: the route's handler span (Auth.verify, an Effect.fn) ends failed with CHALLENGE_UNKNOWN.
        const refused = yield* post(`${base}/v1/auth/verify`, { nonce: "n0nexistent1", signature })
        expect(refused.status).toBe(422)
        // And a log line with a cause inside a span (Effect's tracer logger would export Cause.pretty with frames).
        yield* Effect.logWarning("traced failure", { signature }).pipe(
          Effect.annotateLogs("bearer_token", "st_secret"),
          Effect.zipRight(Effect.fail(new Error("boom"))),
          Effect.tapErrorCause((cause) => Effect.logError("traced cause", cause)),
          Effect.withSpan("test.traced-failure"),
          Effect.ignore,
        )
        yield* pollUntil(
          Effect.sync(() => ["Auth.verify", "test.traced-failure"].every((n) => spans.some((s) => s.name === n))),
          (both) => both,
        )
        const exported = bodies.join("\n")
        expect(exported).toContain("ChallengeUnknown")
        // No stack frame (`    at fn (file:line)`), no Effect.fn call-site attribute, no signature or token.
        expect(exported).not.toMatch(/\\n\s+at /)
        expect(exported).not.toContain("code.stacktrace")
        expect(exported).not.toContain(signature.slice(2, 130))
        expect(exported).not.toContain("st_secret")
        expect(exported).toContain('"Error: boom"')
      }),
  )
})
