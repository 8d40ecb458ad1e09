/**
 * The lease fast path (src/Http/LeaseFastPath.ts) answers a plain mk_ renewal exactly as the framework
 * does, and hands everything else to the framework with nothing written (one charge, one answer).
 * `content-type: application/json; charset=utf-8` is not the fast path's shape, so the same request
 * with it is the framework's own answer.
 */
import { SqlClient } from "@effect/sql"
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { rawRequest } from "../support/Http.ts"
import { issueCredential, registerIdentity } from "../support/Makers.ts"
import { bearer, signIn } from "../support/SignIn.ts"
import { TEST_ORIGIN } from "../support/TestConfig.ts"
import { baseUrl } from "../support/TestServer.ts"
import { testStackWithChain } from "../support/TestStack.ts"

// A slow refill, so that the stored bucket level shows each charge (one token, never two).
const Live = testStackWithChain({ limits: { requests_per_second: 1, request_burst: 1000 } })

const FAST = "application/json"
const FRAMEWORK = "application/json; charset=utf-8"

const comparable = (headers: Record<string, unknown>) => {
  const {
    date: _d,
    "x-request-id": _r,
    "x-server-time": _t,
    connection: _c,
    "keep-alive": _k,
    "content-length": _l,
    ...rest
  } = headers
  return rest
}

const code = (r: { json: unknown }) => (r.json as { error?: { code: string } }).error?.code

layer(Live, { timeout: "120 seconds", excludeTestServices: true })("lease fast path", (it) => {
  it.effect("a plain mk_ renewal: the framework's body, status and headers; errors are the framework's", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const sql = yield* SqlClient.SqlClient
      const master = yield* signIn(base, privateKeyToAccount(generatePrivateKey()))
      const identity = yield* registerIdentity(base, master, privateKeyToAccount(generatePrivateKey()))
      const other = yield* registerIdentity(base, master, privateKeyToAccount(generatePrivateKey()))
      const quote = yield* issueCredential(base, master, identity.id, ["quote"])
      const read = yield* issueCredential(base, master, other.id, ["read"])
      const put = (token: string, id: string, body: string, contentType = FAST, extra: Record<string, string> = {}) =>
        rawRequest(`${base}/v1/quote-identities/${id}/lease`, {
          method: "PUT",
          headers: { ...bearer(token), "content-type": contentType, ...extra },
          body,
        })
      const charged = (credentialId: string) =>
        Effect.map(
          sql<{ tokens: number }>`select tokens from rate_buckets where key = ${`credential:${credentialId}`}`,
          (rows) => rows[0]?.tokens,
        )

      for (const extra of [{}, { origin: TEST_ORIGIN }, { "x-request-id": "3f1c2a9e-8b7d-4c6e-9a5b-1d2e3f4a5b6c" }]) {
        const a = yield* put(quote.token, identity.id, '{"ttl_seconds":30}', FAST, extra)
        const b = yield* put(quote.token, identity.id, '{"ttl_seconds":30}', FRAMEWORK, extra)
        expect([a.status, b.status]).toEqual([200, 200])
        expect(Object.keys(a.json as object)).toEqual(Object.keys(b.json as object))
        const [ja, jb] = [a.json, b.json] as Array<{ identity_id: string; generation: string; expires_at: string }>
        expect(ja).toMatchObject({ identity_id: identity.id, generation: "1" })
        expect(jb).toMatchObject({ identity_id: identity.id, generation: "1" })
        expect(ja!.expires_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)
        expect(Math.abs(Date.parse(ja!.expires_at) - Date.parse(jb!.expires_at))).toBeLessThan(5000)
        expect(comparable(a.headers)).toEqual(comparable(b.headers))
        expect(a.headers["x-request-id"]).toMatch(/^[0-9a-f-]{36}$/)
        expect(String(a.headers["x-server-time"])).toMatch(/^\d{13}$/)
        if ("x-request-id" in extra) expect(a.headers["x-request-id"]).toBe(extra["x-request-id"])
      }

      // Everything else is the framework's answer, identical on both content types, and charged once.
      const cases: Array<[string, string, string, number, string]> = [
        [quote.token, identity.id, '{"ttl_seconds":4}', 400, "INVALID_REQUEST"],
        [quote.token, identity.id, '{"ttl_seconds":121}', 400, "INVALID_REQUEST"],
        [quote.token, identity.id, '{"ttl_seconds":005}', 400, "INVALID_REQUEST"],
        [quote.token, identity.id, '{"ttl_seconds":30,"x":1}', 400, "INVALID_REQUEST"],
        [quote.token, identity.id, "{", 400, "INVALID_REQUEST"],
        [quote.token, other.id, '{"ttl_seconds":30}', 404, "NOT_FOUND"],
        [read.token, other.id, '{"ttl_seconds":30}', 403, "FORBIDDEN"],
        [`mk_${"z".repeat(40)}`, identity.id, '{"ttl_seconds":30}', 401, "UNAUTHORIZED"],
      ]
      for (const [token, id, body, status, errorCode] of cases) {
        for (const contentType of [FAST, FRAMEWORK]) {
          const credentialId = token === quote.token ? quote.id : read.id
          const before = yield* charged(credentialId)
          const res = yield* put(token, id, body, contentType)
          expect([res.status, code(res)], `${body} ${contentType}`).toEqual([status, errorCode])
          const after = yield* charged(credentialId)
          // An authenticated request costs one token, less what refilled meanwhile (1/s).
          if (status !== 401 && before !== undefined) expect(before - after!).toBeGreaterThan(0.5)
          if (status !== 401 && before !== undefined) expect(before - after!).toBeLessThanOrEqual(1)
        }
      }
      // A revoked credential: 401 on both paths, nothing renewed.
      const [lease] = yield* sql<{
        at: Date
      }>`select lease_expires_at as at from quote_identities where id = ${identity.id}`
      const revoked = yield* rawRequest(`${base}/v1/credentials/${quote.id}`, {
        method: "DELETE",
        headers: bearer(master),
      })
      expect(revoked.status).toBe(200)
      for (const contentType of [FAST, FRAMEWORK]) {
        const res = yield* put(quote.token, identity.id, '{"ttl_seconds":30}', contentType)
        expect([res.status, code(res)]).toEqual([401, "UNAUTHORIZED"])
      }
      const [afterRevoke] = yield* sql<{ at: Date; revoked_at: Date | null }>`
        select lease_expires_at as at, revoked_at from quote_identities where id = ${identity.id}`
      expect(afterRevoke!.revoked_at).not.toBeNull()
      expect(afterRevoke!.at.getTime()).toBeLessThanOrEqual(lease!.at.getTime())
    }),
  )
})
