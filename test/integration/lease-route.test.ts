/**
 * PUT /v1/quote-identities/{id}/lease through the framework (it once had a raw fast path ahead of it). An mk_
 * bearer is resolved, charged, checked for its scope and binding and renewed in one statement, run by the
 * identity's lease entity (actors/QuoteIdentityLease.ts), whose answer is the reply; a request whose body or path
 * fails to decode is authenticated and charged before its 400 (src/Http/Security.ts DeferredAuthentication). On every answer: the same body, status and headers on both JSON content types, CORS and the
 * request id on every answer (request_id in an envelope equal to x-request-id), one charge per authenticated
 * request, the bearer checked before the body.
 */
import { SqlClient } from "@effect/sql"
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { Supervision } from "../../src/Cluster/Supervision.ts"
import { type RawResponse, rawRequest } from "../support/Http.ts"
import { pollUntil } from "../support/Poll.ts"
import { issueCredential, registerIdentity } from "../support/QuoteIdentities.ts"
import { bearer, signIn } from "../support/SignIn.ts"
import { TEST_ORIGIN } from "../support/TestConfig.ts"
import { baseUrl } from "../support/TestServer.ts"
import { testStackWithChain } from "../support/TestStack.ts"

// A slow refill, so that the stored bucket level shows each charge (one token, never two).
const Live = testStackWithChain({ limits: { requests_per_second: 1, request_burst: 1000 } })

const PLAIN = "application/json"
const CHARSET = "application/json; charset=utf-8"
const EXPOSED = "x-request-id,x-server-time,retry-after,x-event-cursor"

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

/** What every answer carries: CORS (one app origin configured), the request id and server time. */
const expectStandardHeaders = (r: RawResponse) => {
  expect(r.headers["access-control-allow-origin"]).toBe(TEST_ORIGIN)
  expect(r.headers["access-control-expose-headers"]).toBe(EXPOSED)
  expect(r.headers["x-request-id"]).toMatch(/^[0-9a-f-]{36}$/)
  expect(String(r.headers["x-server-time"])).toMatch(/^\d{13}$/)
  const error = (r.json as { error?: { request_id: string; retryable: boolean } }).error
  if (error !== undefined) {
    expect(error.request_id).toBe(r.headers["x-request-id"])
    expect(error.retryable).toBe(false)
  }
}

layer(Live, { timeout: "120 seconds", excludeTestServices: true })("lease route", (it) => {
  it.effect("renewals and errors: body, status and headers, one charge, the bearer before the body", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const sql = yield* SqlClient.SqlClient
      const master = yield* signIn(base, privateKeyToAccount(generatePrivateKey()))
      const stranger = yield* signIn(base, privateKeyToAccount(generatePrivateKey()))
      const identity = yield* registerIdentity(base, master, privateKeyToAccount(generatePrivateKey()))
      const other = yield* registerIdentity(base, master, privateKeyToAccount(generatePrivateKey()))
      const quote = yield* issueCredential(base, master, identity.id, ["quote"])
      const read = yield* issueCredential(base, master, other.id, ["read"])
      const put = (token: string, id: string, body: string, contentType = PLAIN, extra: Record<string, string> = {}) =>
        rawRequest(`${base}/v1/quote-identities/${id}/lease`, {
          method: "PUT",
          headers: { ...bearer(token), "content-type": contentType, origin: TEST_ORIGIN, ...extra },
          body,
        })
      // The bucket as stored: tokens at `at` (database seconds). Between two reads, the tokens spent are the
      // refill at 1/s over the stored times (capped at the burst, 1000) minus what is left: exact whatever the
      // machine's load, so each check below is about the charge, not about how fast the request was.
      const charged = (credentialId: string) =>
        Effect.map(
          sql<{ tokens: number; at: number }>`select tokens, extract(epoch from updated_at)::float8 as at
            from rate_buckets where key = ${`credential:${credentialId}`}`,
          (rows) => rows[0],
        )
      const spent = (before: { tokens: number; at: number }, after: { tokens: number; at: number }) =>
        Math.min(1000, before.tokens + (after.at - before.at) * 1) - after.tokens

      for (const extra of [{}, { "x-request-id": "3f1c2a9e-8b7d-4c6e-9a5b-1d2e3f4a5b6c" }]) {
        const before = yield* charged(quote.id)
        const a = yield* put(quote.token, identity.id, '{"ttl_seconds":30}', PLAIN, extra)
        const b = yield* put(quote.token, identity.id, '{"ttl_seconds":30}', CHARSET, extra)
        const after = yield* charged(quote.id)
        expect([a.status, b.status]).toEqual([200, 200])
        // Two renewals, two tokens; the first request creates the bucket.
        if (before !== undefined) expect(spent(before, after!)).toBeCloseTo(2, 3)
        expect(Object.keys(a.json as object)).toEqual(["identity_id", "generation", "expires_at"])
        expect(Object.keys(a.json as object)).toEqual(Object.keys(b.json as object))
        const [ja, jb] = [a.json, b.json] as Array<{ identity_id: string; generation: string; expires_at: string }>
        expect(ja).toMatchObject({ identity_id: identity.id, generation: "1" })
        expect(jb).toMatchObject({ identity_id: identity.id, generation: "1" })
        expect(ja!.expires_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/)
        expect(Math.abs(Date.parse(ja!.expires_at) - Date.parse(jb!.expires_at))).toBeLessThan(5000)
        expect(comparable(a.headers)).toEqual(comparable(b.headers))
        expect(a.headers["content-type"]).toBe("application/json")
        expectStandardHeaders(a)
        expectStandardHeaders(b)
        if ("x-request-id" in extra) expect(a.headers["x-request-id"]).toBe(extra["x-request-id"])
      }
      // The path's UUID in capitals names the same identity.
      const upper = yield* put(quote.token, identity.id.toUpperCase(), '{"ttl_seconds":30}')
      expect([upper.status, upper.json]).toEqual([200, expect.objectContaining({ identity_id: identity.id })])

      // Every error: the same answer on both content types, charged once when the bearer authenticated.
      const cases: Array<[string, string, string, number, string]> = [
        [quote.token, identity.id, '{"ttl_seconds":4}', 400, "INVALID_REQUEST"],
        [quote.token, identity.id, '{"ttl_seconds":121}', 400, "INVALID_REQUEST"],
        [quote.token, identity.id, '{"ttl_seconds":005}', 400, "INVALID_REQUEST"],
        [quote.token, identity.id, '{"ttl_seconds":30,"x":1}', 400, "INVALID_REQUEST"],
        [quote.token, identity.id, "{", 400, "INVALID_REQUEST"],
        [quote.token, "not-a-uuid", '{"ttl_seconds":30}', 400, "INVALID_REQUEST"],
        [quote.token, other.id, '{"ttl_seconds":30}', 404, "NOT_FOUND"],
        [read.token, other.id, '{"ttl_seconds":30}', 403, "FORBIDDEN"],
        [`mk_${"z".repeat(40)}`, identity.id, '{"ttl_seconds":30}', 401, "UNAUTHORIZED"],
        // The bearer is checked before the body.
        [`mk_${"z".repeat(40)}`, identity.id, "{", 401, "UNAUTHORIZED"],
      ]
      for (const [token, id, body, status, errorCode] of cases) {
        const answers: Array<RawResponse> = []
        for (const contentType of [PLAIN, CHARSET]) {
          const credentialId = token === quote.token ? quote.id : read.id
          const before = yield* charged(credentialId)
          const res = yield* put(token, id, body, contentType)
          expect([res.status, code(res)], `${body} ${contentType}`).toEqual([status, errorCode])
          expectStandardHeaders(res)
          answers.push(res)
          const after = yield* charged(credentialId)
          // An authenticated request costs one token; an unauthenticated one none.
          if (before !== undefined) expect(spent(before, after!)).toBeCloseTo(status === 401 ? 0 : 1, 3)
        }
        expect(comparable(answers[0]!.headers)).toEqual(comparable(answers[1]!.headers))
        const messages = answers.map((r) => (r.json as { error: { message: string } }).error.message)
        expect(messages[0]).toBe(messages[1])
      }
      // A body that is not JSON by its content type: 400, charged once.
      const beforeText = yield* charged(quote.id)
      const text = yield* put(quote.token, identity.id, '{"ttl_seconds":30}', "text/plain")
      expect([text.status, code(text)]).toEqual([400, "INVALID_REQUEST"])
      expectStandardHeaders(text)
      expect(spent(beforeText!, (yield* charged(quote.id))!)).toBeCloseTo(1, 3)

      // Sessions renew through the same route: their master's identity, 404 for another master's.
      const own = yield* put(master, identity.id, '{"ttl_seconds":30}')
      expect([own.status, own.json]).toEqual([200, expect.objectContaining({ identity_id: identity.id })])
      expectStandardHeaders(own)
      const foreign = yield* put(stranger, identity.id, '{"ttl_seconds":30}')
      expect([foreign.status, code(foreign)]).toEqual([404, "NOT_FOUND"])
      expectStandardHeaders(foreign)

      // A revoked credential: 401 on both content types, nothing renewed.
      const [lease] = yield* sql<{
        at: Date
      }>`select lease_expires_at as at from quote_identities where id = ${identity.id}`
      const revoked = yield* rawRequest(`${base}/v1/credentials/${quote.id}`, {
        method: "DELETE",
        headers: bearer(master),
      })
      expect(revoked.status).toBe(200)
      for (const contentType of [PLAIN, CHARSET]) {
        const res = yield* put(quote.token, identity.id, '{"ttl_seconds":30}', contentType)
        expect([res.status, code(res)]).toEqual([401, "UNAUTHORIZED"])
        expectStandardHeaders(res)
      }
      const [afterRevoke] = yield* sql<{ at: Date; revoked_at: Date | null }>`
        select lease_expires_at as at, revoked_at from quote_identities where id = ${identity.id}`
      expect(afterRevoke!.revoked_at).not.toBeNull()
      expect(afterRevoke!.at.getTime()).toBeLessThanOrEqual(lease!.at.getTime())
      // The master's session on the revoked identity: 409 STATE_CONFLICT, as the spec says.
      const conflict = yield* put(master, identity.id, '{"ttl_seconds":30}')
      expect([conflict.status, code(conflict)]).toEqual([409, "STATE_CONFLICT"])
      expectStandardHeaders(conflict)
    }),
  )

  // The lease entity keeps one timer per identity and a renewal only moves its deadline; a renewal that brings the end
  // nearer must restart it, or the lease would be expired at the longer ttl's time.
  it.effect("an id that is no quote identity: answered as the entity would be, and no lease entity is started", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const board = yield* Supervision
      const leases = Effect.map(
        board.snapshot,
        (records) => records.find((r) => r.name === "quote-identity-lease")?.instances ?? 0,
      )
      const master = yield* signIn(base, privateKeyToAccount(generatePrivateKey()))
      const identity = yield* registerIdentity(base, master, privateKeyToAccount(generatePrivateKey()))
      const other = yield* registerIdentity(base, master, privateKeyToAccount(generatePrivateKey()))
      const quote = yield* issueCredential(base, master, identity.id, ["quote"])
      const read = yield* issueCredential(base, master, other.id, ["read"])
      const put = (token: string, id: string) =>
        rawRequest(`${base}/v1/quote-identities/${id}/lease`, {
          method: "PUT",
          headers: { ...bearer(token), "content-type": PLAIN },
          body: JSON.stringify({ ttl_seconds: 30 }),
        })
      const before = yield* leases
      // Made-up ids with a made-up token, this identity's credentials and its master's session: the same answers as
      // for an id that is an identity (unknown token first, then scope, then binding), and no entity for any of them.
      const cases = [
        [`mk_${"x".repeat(43)}`, 401, "UNAUTHORIZED"],
        [read.token, 403, "FORBIDDEN"],
        [quote.token, 404, "NOT_FOUND"],
        [master, 404, "NOT_FOUND"],
      ] as const
      for (const [token, status, c] of cases) {
        for (let i = 0; i < 5; i++) {
          const res = yield* put(token, crypto.randomUUID())
          expect([res.status, code(res)]).toEqual([status, c])
          expectStandardHeaders(res)
        }
      }
      expect(yield* leases).toBe(before)
      // The identity itself: its own entity renews it.
      const renewed = yield* put(quote.token, identity.id)
      expect(renewed.status).toBe(200)
      expect(yield* leases).toBe(before + 1)
    }),
  )

  it.effect("a shorter renewal brings the expiry forward: the expiry event comes at the new end", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const sql = yield* SqlClient.SqlClient
      const master = yield* signIn(base, privateKeyToAccount(generatePrivateKey()))
      const identity = yield* registerIdentity(base, master, privateKeyToAccount(generatePrivateKey()))
      const quote = yield* issueCredential(base, master, identity.id, ["quote"])
      const put = (ttl: number) =>
        rawRequest(`${base}/v1/quote-identities/${identity.id}/lease`, {
          method: "PUT",
          headers: { ...bearer(quote.token), "content-type": PLAIN },
          body: JSON.stringify({ ttl_seconds: ttl }),
        })
      expect((yield* put(120)).status).toBe(200)
      const short = yield* put(5)
      expect(short.status).toBe(200)
      const generation = (short.json as { generation: string }).generation
      const [row] = yield* pollUntil(
        sql<{ late_ms: number }>`
          select (extract(epoch from j.created_at - (j.payload->>'expires_at')::timestamptz) * 1000)::float8 as late_ms
          from journal j where j.kind = 'quote_identity.lease_expired'
            and j.payload->>'identity_id' = ${identity.id} and j.payload->>'generation' = ${generation}`,
        (rows) => rows.length > 0,
        { every: "200 millis", within: "60 seconds" },
      )
      // Written at the 5 s end (within the watchers' 1.5 s bound), not at the 120 s one.
      expect(row!.late_ms).toBeGreaterThanOrEqual(0)
      expect(row!.late_ms).toBeLessThan(1500)
    }),
  )
})
