/**
 * The request budget of an `mk_` credential, taken in the same statement that authenticates it
 * (chargeLiveCredential): a burst, then 429 with Retry-After and
 * nothing renewed; budgets per credential; an unknown or revoked bearer is refused without being charged; the
 * bucket refills. Each refusal is the framework's envelope: request_id equal to x-request-id, CORS headers.
 */
import { SqlClient } from "@effect/sql"
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { type RawResponse, rawRequest } from "../support/Http.ts"
import { issueCredential, registerIdentity, renew } from "../support/QuoteIdentities.ts"
import { bearer, signIn } from "../support/SignIn.ts"
import { TEST_ORIGIN } from "../support/TestConfig.ts"
import { baseUrl } from "../support/TestServer.ts"
import { testStackWithChain } from "../support/TestStack.ts"

const Live = testStackWithChain({ limits: { requests_per_second: 1, request_burst: 8 } })

const code = (r: { json: unknown }) => (r.json as { error?: { code: string } }).error?.code

const expectEnvelope = (r: RawResponse, retryable: boolean) => {
  const error = (r.json as { error: { request_id: string; retryable: boolean } }).error
  expect(error.request_id).toBe(r.headers["x-request-id"])
  expect(error.retryable).toBe(retryable)
  expect(r.headers["access-control-allow-origin"]).toBe(TEST_ORIGIN)
  expect(r.headers["access-control-expose-headers"]).toBe("x-request-id,x-server-time,retry-after,x-event-cursor")
}

layer(Live, { timeout: "120 seconds", excludeTestServices: true })("lease renewals and the credential budget", (it) => {
  it.effect("a credential spends its burst, then 429 with Retry-After and no renewal; budgets are per credential", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const sql = yield* SqlClient.SqlClient
      const master = yield* signIn(base, privateKeyToAccount(generatePrivateKey()))
      const a = yield* registerIdentity(base, master, privateKeyToAccount(generatePrivateKey()))
      const b = yield* registerIdentity(base, master, privateKeyToAccount(generatePrivateKey()))
      const ca = yield* issueCredential(base, master, a.id, ["quote"])
      const cb = yield* issueCredential(base, master, b.id, ["quote"])
      // The session spends 6 of its own 8 on the setup; the credential has 8 of its own (plus what refills
      // meanwhile at 1/s on a slow machine).
      let renewed = 0
      let limited = yield* renew(base, ca.token, a.id, 30)
      let before = yield* sql<{ at: Date }>`select lease_expires_at as at from quote_identities where id = ${a.id}`
      while (limited.status === 200 && renewed < 20) {
        expect(limited.json).toMatchObject({ identity_id: a.id, generation: "1" })
        renewed++
        before = yield* sql<{ at: Date }>`select lease_expires_at as at from quote_identities where id = ${a.id}`
        limited = yield* renew(base, ca.token, a.id, 120)
      }
      expect(renewed).toBeGreaterThanOrEqual(8)
      expect([limited.status, code(limited)]).toEqual([429, "RATE_LIMITED"])
      expect(Number(limited.headers["retry-after"])).toBeGreaterThanOrEqual(1)
      expectEnvelope(limited, true)
      const [after] = yield* sql<{ at: Date }>`select lease_expires_at as at from quote_identities where id = ${a.id}`
      expect(after!.at.getTime()).toBe(before[0]!.at.getTime())
      // Another credential has its own budget.
      expect((yield* renew(base, cb.token, b.id, 30)).status).toBe(200)
      // Unknown bearers are 401 and charge nothing.
      const unknown = yield* renew(base, `mk_${"x".repeat(40)}`, a.id, 30)
      expect([unknown.status, code(unknown)]).toEqual([401, "UNAUTHORIZED"])
      expectEnvelope(unknown, false)
      const buckets = yield* sql<{
        n: string
      }>`select count(*)::text as n from rate_buckets where key like 'credential:%'`
      expect(buckets[0]!.n).toBe("2")
      // A credential for the wrong identity: 404 (still charged: it authenticated).
      yield* Effect.sleep("1100 millis")
      const other = yield* renew(base, ca.token, b.id, 30)
      expect([other.status, code(other)]).toEqual([404, "NOT_FOUND"])
      expectEnvelope(other, false)
      // The bucket refills at the configured rate.
      yield* Effect.sleep("1100 millis")
      expect((yield* renew(base, ca.token, a.id, 30)).status).toBe(200)
      // A revoked credential is refused at once.
      const revoked = yield* rawRequest(`${base}/v1/credentials/${cb.id}`, {
        method: "DELETE",
        headers: bearer(master),
      })
      expect(revoked.status).toBe(200)
      const gone = yield* renew(base, cb.token, b.id, 30)
      expect([gone.status, code(gone)]).toEqual([401, "UNAUTHORIZED"])
      expectEnvelope(gone, false)
    }),
  )
})
