import { existsSync, mkdirSync } from "node:fs"
import { fileURLToPath } from "node:url"
import { expect, layer } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import { type Browser, chromium, type Page } from "playwright-core"
import { runVenueWatcher } from "../../actors/VenueWatcher.ts"
import { ChainClients } from "../../src/Chain/ChainClients.ts"
import { FaultPoint } from "../../src/Chain/FaultPoint.ts"
import { AppConfig } from "../../src/Config.ts"
import { OperatorListener, operatorLayer } from "../../src/Observability/OperatorListener.ts"
import { key, startTestChain, type TestChain, venueEntry } from "../support/ChainDevnet.ts"
import { TestDatabaseLive } from "../support/Database.ts"
import { rawRequest } from "../support/Http.ts"
import { pollUntil } from "../support/Poll.ts"
import { ago, insertRow } from "../support/Rows.ts"
import { testAppConfig } from "../support/TestConfig.ts"
import { baseUrl, TestHttpLive } from "../support/TestServer.ts"

/**
 * Issue 17 item 5: the status page (GET /status on the operator listener) in a real headless Chromium, driven
 * by playwright-core with the system's browser (Debian's `chromium`; CHROMIUM_PATH to name another). It runs
 * against a service with a devnet chain and its watcher, runner status rows, a settled take's rows and a stuck
 * fill; the page must show what the public GET /health says (status, chains' head, finalized, lag and gas,
 * pending transactions, journal, actors, runners, alerts) and the settlement's steps, with no failed request.
 * A screenshot is saved to test-artifacts/status-page.png (gitignored). In CI (CI=true) a missing browser
 * fails the test; elsewhere the test is skipped with a note.
 */

const CANDIDATES = [
  process.env.CHROMIUM_PATH,
  "/usr/bin/chromium",
  "/usr/bin/chromium-browser",
  "/usr/bin/chromium-headless-shell",
  "/usr/bin/google-chrome",
].filter((p): p is string => p !== undefined && p !== "")
const executablePath = CANDIDATES.find((p) => existsSync(p))
if (executablePath === undefined && process.env.CI === "true") {
  throw new Error(
    `status-page test: no Chromium found (looked at ${CANDIDATES.join(", ")}); install Debian's chromium (apt-get install -y chromium, as .ci/run does) or set CHROMIUM_PATH`,
  )
}
const ARTIFACTS = fileURLToPath(new URL("../../test-artifacts/", import.meta.url))

class Env extends Context.Tag("test/StatusPageEnv")<
  Env,
  { readonly hl: TestChain; readonly browser: Browser | undefined }
>() {}

const Live = Layer.unwrapScoped(
  Effect.gen(function* () {
    const hl = yield* Effect.acquireRelease(
      Effect.promise(() => startTestChain({ chainId: 999, kind: "hyperliquid" })),
      (c) => Effect.promise(() => c.anvil.stop()),
    )
    // A fixed chain (no miner): head and finalized stay put, so the page and /health can be compared exactly.
    yield* Effect.promise(() => hl.test.mine({ blocks: 8 }))
    const browser =
      executablePath === undefined
        ? undefined
        : yield* Effect.acquireRelease(
            Effect.promise(() => chromium.launch({ executablePath, headless: true })),
            (b) => Effect.promise(() => b.close()),
          )
    const { legacy_escrow: _legacy, ...venue } = venueEntry(hl, "hyperliquid", {
      watcher: { poll_ms: 100, confirmations: 2, integrity_interval_seconds: 3600 },
    })
    const config = testAppConfig({ venues: [venue], auth: { rpc_urls: [hl.anvil.rpcUrl] }, operator_key: key(9) })
    const base = Layer.mergeAll(TestHttpLive, ChainClients.Live, FaultPoint.Noop).pipe(
      Layer.provideMerge(TestDatabaseLive),
      Layer.provideMerge(config),
    )
    const env = Effect.gen(function* () {
      const { deployment } = yield* AppConfig
      for (const v of deployment.venues) yield* Effect.forkScoped(runVenueWatcher(v))
      return { hl, browser }
    })
    return Layer.scoped(Env, env).pipe(
      Layer.provideMerge(Layer.merge(base, operatorLayer({ host: "127.0.0.1", port: 0 }).pipe(Layer.provide(base)))),
    )
  }),
)

interface Health {
  readonly status: string
  readonly pending_transactions: number
  readonly journal_unpublished: number
  readonly chains: ReadonlyArray<{
    venue: string
    ready: boolean
    block: string
    finalized_block: string
    operator_gas: string
    checked_at: string | null
    error: string
  }>
  readonly cluster: {
    readonly actors: ReadonlyArray<{ kind: string; restarts: number; active: number }>
    readonly runners: ReadonlyArray<{ address: string; alive: boolean; shards: number }>
  }
  readonly alerts: ReadonlyArray<{ kind: string; subject: string }>
}

interface Shown {
  readonly renders: number
  readonly error: string
  readonly status: string
  readonly pending: string
  readonly journal: string
  readonly chains: ReadonlyArray<Record<"venue" | "ready" | "block" | "finalized" | "lag" | "gas", string>>
  readonly actors: ReadonlyArray<ReadonlyArray<string>>
  readonly runners: ReadonlyArray<ReadonlyArray<string>>
  readonly alerts: ReadonlyArray<ReadonlyArray<string>>
  readonly relayer: ReadonlyArray<ReadonlyArray<string>>
  readonly settlements: ReadonlyArray<{ take: string | null; state: string; fills: ReadonlyArray<string> }>
}

/** What the page shows, read from its DOM (browser-side source: this project's types have no DOM). */
const READ_PAGE = `(() => {
  const k = (root, name) => root.querySelector('[data-k="' + name + '"]')?.textContent ?? ""
  const rows = (table) => [...document.querySelectorAll(table + " tbody tr[data-id]")]
  return {
    renders: window.__status?.renders ?? 0,
    error: k(document, "error"),
    status: k(document, "status"),
    pending: k(document, "pending_transactions"),
    journal: k(document, "journal_unpublished"),
    chains: rows("#chains").map((r) => ({
      venue: k(r, "venue"), ready: k(r, "ready"), block: k(r, "block"), finalized: k(r, "finalized_block"),
      lag: k(r, "lag"), gas: k(r, "operator_gas"),
    })),
    actors: rows("#actors").map((r) => [k(r, "kind"), k(r, "active"), k(r, "restarts")]),
    runners: rows("#runners").map((r) => [k(r, "address"), k(r, "alive"), k(r, "shards")]),
    alerts: rows("#alerts").map((r) => [k(r, "kind"), k(r, "subject")]),
    relayer: rows("#relayer").map((r) => [k(r, "venue"), k(r, "queued"), k(r, "pending"), k(r, "included")]),
    settlements: rows("#settlements").map((r) => ({
      take: r.getAttribute("data-id"),
      state: k(r, "state"),
      fills: [...r.querySelectorAll("[data-fill]")].map((f) => f.textContent ?? ""),
    })),
  }
})()`
const shown = (page: Page) => Effect.promise(() => page.evaluate(READ_PAGE) as Promise<Shown>)

/** The page's values as /health's body says they should be. */
const expected = (h: Health) => ({
  status: h.status,
  pending: String(h.pending_transactions),
  journal: String(h.journal_unpublished),
  chains: h.chains.map((c) => ({
    venue: c.venue,
    ready: c.ready ? "yes" : "no",
    block: c.block,
    finalized: c.finalized_block,
    lag: String(BigInt(c.block) - BigInt(c.finalized_block)),
    gas: c.operator_gas,
  })),
  actors: h.cluster.actors.map((a) => [a.kind, String(a.active), String(a.restarts)]),
  runners: h.cluster.runners.map((r) => [r.address, r.alive ? "yes" : "no", String(r.shards)]),
  alerts: h.alerts.map((a) => [a.kind, a.subject]),
})

layer(Live, { timeout: "180 seconds", excludeTestServices: true })("status page", (it) => {
  it.effect.skipIf(executablePath === undefined)(
    "renders /health's values, relayer queues and a settlement's steps in Chromium; refreshes itself",
    () =>
      Effect.gen(function* () {
        const browser = (yield* Env).browser!
        const api = yield* baseUrl
        const { url } = yield* OperatorListener
        const publicHealth = Effect.map(rawRequest(`${api}/health`), (r) => r.json as Health)
        // The watcher has indexed the fixed chain to its finalized head.
        yield* pollUntil(
          publicHealth,
          (h) =>
            h.chains.every(
              (c) => c.finalized_block !== "0" && c.operator_gas !== "0" && c.checked_at !== null && c.error === "",
            ),
          { every: "200 millis", within: "30 seconds" },
        )

        // A settled take (lock, pay, claim final), a fill past every timeout, an open relayer request, two runners.
        const take = crypto.randomUUID()
        const fill = crypto.randomUUID()
        const stuck = crypto.randomUUID()
        const stuckTake = crypto.randomUUID()
        yield* insertRow("takes", {
          id: take,
          state: "settled",
          from_venue: "hyperliquid",
          to_venue: "aster",
          created_at: ago(30),
        })
        yield* insertRow("takes", {
          id: stuckTake,
          state: "signed",
          from_venue: "hyperliquid",
          to_venue: "aster",
          created_at: ago(9000),
        })
        yield* insertRow("fills", { id: fill, take_id: take, state: "settled", final: true, created_at: ago(30) })
        yield* insertRow("fills", { id: stuck, take_id: stuckTake, state: "paid", final: false, created_at: ago(9000) })
        for (const [call, status] of [
          ["lock", "final"],
          ["pay", "final"],
          ["claim", "final"],
        ] as const)
          yield* insertRow("relayer_requests", {
            idempotency_key: `settle:${fill}:${call}`,
            venue: "hyperliquid",
            status,
            tx_hash: `0x${"ab".repeat(32)}`,
          })
        yield* insertRow("relayer_requests", {
          idempotency_key: "fund:queued-1",
          venue: "hyperliquid",
          status: "queued",
        })
        const runner = (address: string, shards: number, actors: ReadonlyArray<Record<string, unknown>>) =>
          insertRow("runner_status", {
            address,
            heartbeat_at: new Date(),
            shards,
            singletons: actors.filter((a) => a.active).map((a) => a.name as string),
            actors: JSON.stringify(actors),
          })
        yield* runner("10.0.0.1:34431", 150, [
          { name: "venue-watcher:hyperliquid", kind: "venue-watcher", active: true, restarts: 1, last_failure: null },
        ])
        yield* runner("10.0.0.2:34431", 150, [
          { name: "settlement", kind: "settlement", active: true, restarts: 0, last_failure: null },
        ])

        const page = yield* Effect.acquireRelease(
          Effect.promise(() => browser.newPage({ viewport: { width: 1280, height: 1000 } })),
          (p) => Effect.promise(() => p.close()),
        )
        const failures: Array<string> = []
        page.on("requestfailed", (r) => failures.push(`${r.url()}: ${r.failure()?.errorText}`))
        page.on("response", (r) => {
          if (r.status() >= 400 && !r.url().endsWith("/health")) failures.push(`${r.url()}: ${r.status()}`)
        })
        page.on("pageerror", (e) => failures.push(`page error: ${e.message}`))
        const response = yield* Effect.promise(() => page.goto(`${url}/status?refresh=1`))
        expect(response?.status()).toBe(200)
        expect(response?.headers()["content-type"]).toBe("text/html; charset=utf-8")

        // Eventually (a render racing a change is redrawn a second later) the page shows exactly /health's values.
        const first = yield* pollUntil(
          Effect.all([shown(page), publicHealth]),
          ([page, health]) => {
            const { renders: _r, error: _e, relayer: _q, settlements: _s, ...values } = page
            return page.renders > 0 && JSON.stringify(values) === JSON.stringify(expected(health))
          },
          { every: "250 millis", within: "30 seconds" },
        )
        const [view, health] = first
        expect(view.error).toBe("")
        expect(health.chains.map((c) => c.venue)).toEqual(["hyperliquid"])
        expect(view.chains[0]).toMatchObject({ venue: "hyperliquid", lag: "2" })
        expect(BigInt(view.chains[0]!.gas)).toBeGreaterThan(0n)
        expect(view.runners.map((r) => r[0])).toEqual(["10.0.0.1:34431", "10.0.0.2:34431"])
        expect(view.actors).toEqual([
          ["settlement", "1", "0"],
          ["venue-watcher", "1", "1"],
        ])
        expect(view.alerts).toContainEqual(["fill_stuck", stuck])
        expect(view.relayer).toEqual([["hyperliquid", "1", "0", "0"]])
        // The settlement's fill with each call's status, newest take first.
        expect(view.settlements.map((s) => s.take)).toEqual([take, stuckTake])
        expect(view.settlements[0]!.state).toBe("settled")
        expect(view.settlements[0]!.fills).toEqual([`${fill.slice(0, 8)} settledlock: finalpay: finalclaim: final`])

        // It refreshes itself: a new runner appears without reloading.
        const renders = view.renders
        yield* runner("10.0.0.3:34431", 0, [])
        yield* pollUntil(shown(page), (v) => v.renders > renders && v.runners.some((r) => r[0] === "10.0.0.3:34431"), {
          every: "250 millis",
          within: "15 seconds",
        })
        expect(failures).toEqual([])

        // The operator routes take no input: another method is 405, another path 404; /health there answers
        // with the public route's status.
        expect((yield* rawRequest(`${url}/status`, { method: "POST", body: "{}" })).status).toBe(405)
        expect((yield* rawRequest(`${url}/status/nope`)).status).toBe(404)
        const [mine, theirs] = yield* Effect.all([rawRequest(`${url}/health`), rawRequest(`${api}/health`)])
        expect(mine.status).toBe(theirs.status)
        expect(Object.keys(mine.json as object).sort()).toEqual(Object.keys(theirs.json as object).sort())
        mkdirSync(ARTIFACTS, { recursive: true })
        yield* Effect.promise(() => page.screenshot({ path: `${ARTIFACTS}status-page.png`, fullPage: true }))
        expect(existsSync(`${ARTIFACTS}status-page.png`)).toBe(true)
      }).pipe(Effect.scoped),
  )
})
