/**
 * The Info service (src/Info.ts) on its Test layer: the config alone, no HTTP and no database. The routes' own tests
 * (info-route, info-health) cover the wire; this proves the bodies: the precomputed JSON text is exactly what the
 * schema's encoding of the body gives at that time, in the schema's key order, and the values are the config's.
 */
import { describe, expect, layer } from "@effect/vitest"
import { Effect, Layer, Schema, TestClock } from "effect"
import { AppConfig } from "../../src/Config.ts"
import { InfoBody, infoFixed, VenuesBody } from "../../src/Info/Body.ts"
import { Info } from "../../src/Info.ts"
import { testAppConfig, testDeployment } from "../support/TestConfig.ts"

const overrides = {
  limits: { pay_window_seconds: 90, fill_max: "5000000000" },
  access: { mode: "beta", captcha_site_key: "site-key" },
}
const deployment = testDeployment(overrides)

describe("Info service", () => {
  // The test clock: server_time is what the clock says, to the millisecond.
  layer(Info.Test.pipe(Layer.provideMerge(testAppConfig(overrides))), { timeout: 30_000 })((it) => {
    it.effect("GET /v1/info's body: the config's values, server_time from the clock, the schema's bytes", () =>
      Effect.gen(function* () {
        const info = yield* Info
        const fixed = infoFixed(yield* AppConfig)
        for (const at of [Date.parse("2026-03-01T12:34:56.789Z"), Date.parse("2031-12-31T23:59:59.001Z")]) {
          yield* TestClock.setTime(at)
          const body = yield* info.info
          expect(body).toEqual({ ...fixed, server_time: new Date(at).toISOString() })
          // The precomputed text is the framework's encoding of that body, key for key and byte for byte.
          const text = yield* info.infoJson
          expect(text).toBe(JSON.stringify(Schema.encodeSync(InfoBody)(body)))
          expect(Object.keys(JSON.parse(text))).toEqual(["api_version", "server_time", ...Object.keys(fixed).slice(1)])
        }
        const body = yield* info.info
        expect(body.api_version).toBe("v1")
        expect(body.operator).toBe("0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266")
        expect(body.limits.pay_window_seconds).toBe(90)
        expect(body.limits.fill_max).toBe("5000000000")
        expect(body.access).toEqual({ mode: "beta", captcha_site_key: "site-key" })
        expect(body.chains).toEqual(
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
        // The operator's key is never part of it.
        expect(yield* info.infoJson).not.toContain("ac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80")
      }),
    )

    it.effect("GET /v1/venues' body: every configured venue, and its text is the schema's encoding", () =>
      Effect.gen(function* () {
        const info = yield* Info
        const venues = yield* info.venues
        expect(venues).toEqual({
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
        expect(yield* info.venuesJson).toBe(JSON.stringify(Schema.encodeSync(VenuesBody)(venues)))
      }),
    )
  })
})
