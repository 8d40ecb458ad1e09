import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { rawRequest } from "../support/Http.ts"
import { bearer, signIn } from "../support/SignIn.ts"
import { baseUrl } from "../support/TestServer.ts"
import { testStackWithChain } from "../support/TestStack.ts"

const Live = testStackWithChain({ limits: { requests_per_second: 1, request_burst: 3 } })

layer(Live, { timeout: "120 seconds", excludeTestServices: true })("request budgets", (it) => {
  it.effect("a session spends its burst, then gets 429 with Retry-After; public data is not charged", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const token = yield* signIn(base, privateKeyToAccount(generatePrivateKey()))
      const other = yield* signIn(base, privateKeyToAccount(generatePrivateKey()))
      const me = (t: string) => rawRequest(`${base}/v1/me`, { headers: bearer(t) })
      for (let i = 0; i < 3; i++) expect((yield* me(token)).status).toBe(200)
      const limited = yield* me(token)
      expect(limited.status).toBe(429)
      expect((limited.json as { error: { code: string } }).error.code).toBe("RATE_LIMITED")
      expect(Number(limited.headers["retry-after"])).toBeGreaterThanOrEqual(1)
      // Budgets are per session.
      expect((yield* me(other)).status).toBe(200)
      // Public routes are free, with or without a token.
      for (let i = 0; i < 10; i++) {
        expect((yield* rawRequest(`${base}/v1/info`, { headers: bearer(token) })).status).toBe(200)
      }
      // The bucket refills at the configured rate.
      yield* Effect.sleep("1100 millis")
      expect((yield* me(token)).status).toBe(200)
    }),
  )
})
