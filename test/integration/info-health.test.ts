import { SqlClient } from "@effect/sql"
import { expect, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { appendJournal } from "../../src/Sql/Journal.ts"
import { TestDatabaseLive } from "../support/Database.ts"
import { rawRequest } from "../support/Http.ts"
import { testAppConfig, testDeployment } from "../support/TestConfig.ts"
import { baseUrl, TestHttpLive } from "../support/TestServer.ts"

const overrides = {
  limits: { pay_window_seconds: 90, fill_max: "5000000000" },
  settlement: { lock_cutoff_seconds: 45, claim_window_seconds: 900 },
  access: { mode: "beta", captcha_site_key: "site-key" },
}
const deployment = testDeployment(overrides)
const Live = TestHttpLive.pipe(Layer.provideMerge(TestDatabaseLive), Layer.provideMerge(testAppConfig(overrides)))

layer(Live, { timeout: "120 seconds", excludeTestServices: true })("public info routes", (it) => {
  it.effect("GET /v1/info reports the config's own values", () =>
    Effect.gen(function* () {
      const res = yield* rawRequest(`${yield* baseUrl}/v1/info`)
      expect(res.status).toBe(200)
      const info = res.json as Record<string, unknown>
      expect(info.api_version).toBe("v1")
      expect(info.operator).toBe("0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266")
      expect(Date.parse(info.server_time as string)).toBeGreaterThan(0)
      expect(info.limits).toEqual({
        requests_per_second: 60,
        request_burst: 120,
        body_bytes: 65536,
        batch_orders: 20,
        lease_seconds_min: 5,
        lease_seconds_max: 120,
        quote_validity_seconds_max: 300,
        take_parts_max: 8,
        pay_window_seconds: 90,
        fill_max: "5000000000",
      })
      expect(info.settlement).toEqual({
        maker_timeout_seconds: 1800,
        taker_timeout_seconds: 3600,
        lock_cutoff_seconds: 45,
        reveal_cutoff_seconds: 600,
        // Settlement v2 (DESIGN §6), from the config.
        claim_window_seconds: 900,
        pay_by_max_seconds: 120,
        max_lock_seconds: 7200,
        max_quote_life_seconds: 300,
        taker_timeout_min_seconds: 900,
      })
      expect(info.access).toEqual({ mode: "beta", captcha_site_key: "site-key" })
      expect(info.chains).toEqual(
        deployment.venues.map((v) => ({
          venue: v.id,
          chain_id: v.chain_id,
          token: v.token.toLowerCase(),
          symbol: v.symbol,
          decimals: v.decimals,
          escrow: v.escrow.toLowerCase(),
          deployment_block: String(v.deployment_block),
        })),
      )
      expect(JSON.stringify(info)).not.toContain("ac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80")
    }),
  )

  it.effect("GET /v1/venues lists every configured venue", () =>
    Effect.gen(function* () {
      const res = yield* rawRequest(`${yield* baseUrl}/v1/venues`)
      expect(res.status).toBe(200)
      expect(res.json).toEqual({
        data: deployment.venues.map((v) => ({
          id: v.id,
          name: v.name,
          kind: v.kind,
          chain_id: v.chain_id,
          token: v.token.toLowerCase(),
          symbol: v.symbol,
          decimals: v.decimals,
          escrow: v.escrow.toLowerCase(),
          deployment_block: String(v.deployment_block),
        })),
      })
    }),
  )

  it.effect("GET /health is 503 with the spec's body and real journal figures; /health/live is 200", () =>
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      yield* appendJournal({ kind: "probe", master: null, payload: {} })
      yield* sql`update journal set created_at = now() - interval '7 seconds' where cursor is null`
      const res = yield* rawRequest(`${yield* baseUrl}/health`)
      expect(res.status).toBe(503)
      const body = res.json as Record<string, unknown>
      expect(Object.keys(body).sort()).toEqual(
        [
          "status",
          "ready",
          "server_time",
          "pending_transactions",
          "chains",
          "journal_unpublished",
          "journal_oldest_unpublished_seconds",
          // Supervision beside the spec's fields (no cluster runs in this test: empty, and no 500).
          "cluster",
          // What waits for a person (src/Domain/Alerts.ts): nothing here (no chain checked yet, no rows).
          "alerts",
        ].sort(),
      )
      expect(body.cluster).toEqual({ actors: [], mailbox_depth: 0, runners: [] })
      expect(body.alerts).toEqual([])
      expect(body.status).toBe("degraded")
      expect(body.ready).toBe(false)
      expect(body.pending_transactions).toBe(0)
      expect(body.journal_unpublished).toBe(1)
      expect(body.journal_oldest_unpublished_seconds).toBeGreaterThanOrEqual(7)
      const chains = body.chains as Array<Record<string, unknown>>
      expect(chains.map((c) => [c.venue, c.chain_id, c.ready])).toEqual(
        deployment.venues.map((v) => [v.id, v.chain_id, false]),
      )
      expect(Object.keys(chains[0]!).sort()).toEqual(
        [
          "venue",
          "chain_id",
          "ready",
          "block",
          "finalized_block",
          "checked_at",
          "finalized_at",
          "error",
          "operator_gas",
          "integrity_checked_at",
          "integrity_completed_at",
          "integrity_error",
          "integrity_mismatch",
        ].sort(),
      )
      expect(res.headers["x-request-id"]).toBeDefined()
      const live = yield* rawRequest(`${yield* baseUrl}/health/live`)
      expect(live.status).toBe(200)
    }),
  )

  it.effect("GET /v1/openapi.json documents the envelope and codes per route; /v1/docs serves a page", () =>
    Effect.gen(function* () {
      const res = yield* rawRequest(`${yield* baseUrl}/v1/openapi.json`)
      expect(res.status).toBe(200)
      const spec = res.json as {
        paths: Record<string, Record<string, { responses: Record<string, unknown> }>>
        components: { schemas: Record<string, unknown> }
      }
      expect(Object.keys(spec.paths)).toEqual(
        expect.arrayContaining(["/health", "/health/live", "/v1/info", "/v1/venues"]),
      )
      const info = spec.paths["/v1/info"]!.get!
      expect(Object.keys(info.responses)).toEqual(expect.arrayContaining(["200", "400", "404", "405", "413", "500"]))
      expect(spec.paths["/health"]!.get!.responses["503"]).toBeDefined()
      const text = JSON.stringify(spec)
      expect(text).not.toContain("HttpApiDecodeError")
      // Info's settlement object: the spec's four values and the v2 ones.
      const settlement = (spec.components.schemas.Info as { properties: Record<string, { properties?: object }> })
        .properties.settlement
      const v2 = ["claim_window_seconds", "pay_by_max_seconds", "max_lock_seconds", "max_quote_life_seconds"]
      for (const k of ["reveal_cutoff_seconds", ...v2, "taker_timeout_min_seconds"]) {
        expect(Object.keys(settlement?.properties ?? {})).toContain(k)
      }
      expect(text).toContain("INVALID_REQUEST")
      expect(text).toContain("request_id")
      const docs = yield* rawRequest(`${yield* baseUrl}/v1/docs`)
      expect(docs.status).toBe(200)
      expect(String(docs.headers["content-type"])).toContain("text/html")
    }),
  )
})
