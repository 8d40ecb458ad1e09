import { describe, expect, it } from "@effect/vitest"
import { Effect, Either, Option, Redacted } from "effect"
import { AppConfig, decodeDeploymentConfig } from "../../src/Config.ts"
import { DevelopmentConfig } from "../../src/DevelopmentConfig.ts"

const SECRET = "0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d"
const base = { ...DevelopmentConfig, operator_key: SECRET }

const decode = (input: unknown) => decodeDeploymentConfig(input, "test.json").pipe(Effect.either)

describe("deployment config", () => {
  it.effect("accepts the development config and fills defaults", () =>
    Effect.gen(function* () {
      const result = yield* decode(base)
      expect(Either.isRight(result)).toBe(true)
      const config = Either.getOrThrow(result)
      expect(config.limits.body_bytes).toBe(65536)
      expect(config.access.mode).toBe("open")
      expect(Redacted.value(config.operator_key)).toBe(SECRET)
      const app = AppConfig.make(config, { port: 1, databaseUrl: Option.none(), source: "x" })
      expect(app.operator).toBe("0x70997970c51812dc3a010c7d01b50e0d17dc79c8")
    }),
  )

  it.effect("names the offending field", () =>
    Effect.gen(function* () {
      const cases: Array<[unknown, string]> = [
        [{ ...base, venues: [{ ...base.venues[0], chain_id: "999" }] }, "venues.0.chain_id"],
        [{ ...base, venues: [{ ...base.venues[0], escrow: "0x12" }] }, "venues.0.escrow"],
        [{ ...base, app_origins: ["https://app.example.com/path"] }, "app_origins.0"],
        [{ ...base, limits: { take_parts_max: 9 } }, "limits.take_parts_max"],
        // The spec fixes a lease at 5–120 s and the route applies that: another value would be advertised, not applied.
        [{ ...base, limits: { lease_seconds_min: 1 } }, "limits.lease_seconds_min"],
        [{ ...base, limits: { lease_seconds_max: 300 } }, "limits.lease_seconds_max"],
        // The spec caps a request body at 64 KiB: a deployment may lower the limit, not raise it.
        [{ ...base, limits: { body_bytes: 65537 } }, "limits.body_bytes"],
        [{ ...base, surprise: true }, "surprise"],
        [{ ...base, venues: [base.venues[0], base.venues[0]] }, "venues"],
      ]
      for (const [input, field] of cases) {
        const result = yield* decode(input)
        expect(Either.isLeft(result)).toBe(true)
        if (Either.isLeft(result)) {
          expect(result.left.message).toContain("test.json")
          expect(result.left.message).toContain(field)
        }
      }
    }),
  )

  it.effect("never echoes the operator key, valid or not", () =>
    Effect.gen(function* () {
      const bad = `${SECRET.slice(0, 60)}zz`
      const result = yield* decode({ ...base, operator_key: bad, venues: [] })
      expect(Either.isLeft(result)).toBe(true)
      if (Either.isLeft(result)) {
        expect(result.left.message).toContain("operator_key")
        expect(result.left.message).not.toContain(bad.slice(2, 40))
      }
      const ok = Either.getOrThrow(yield* decode(base))
      expect(JSON.stringify(ok)).not.toContain(SECRET.slice(2))
      expect(String(ok.operator_key)).not.toContain(SECRET.slice(2))
    }),
  )
})
