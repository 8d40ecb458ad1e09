import { SqlClient } from "@effect/sql"
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { MAX_JSON_DEPTH } from "../../src/Domain/JsonDepth.ts"
import { rawRequest } from "../support/Http.ts"
import { registerIdentity } from "../support/QuoteIdentities.ts"
import { bearer, json, post, signIn } from "../support/SignIn.ts"
import { baseUrl } from "../support/TestServer.ts"
import { testStackWithChain } from "../support/TestStack.ts"
import { connect, controlAndClose } from "./stream-client.ts"

/**
 * Hostile input (issue 15, item 1): JSON nested far deeper than any request needs. JSON.parse copes
 * with 30,000 levels, but what walks the value afterwards (schema decoding, error formatting) recurses
 * and overflowed the stack: 500 INTERNAL. Such a body is refused before it is parsed, on every route
 * with a body and on the stream's subscription frame, as 400 INVALID_REQUEST, changing nothing.
 */
const Live = testStackWithChain()

/** The repro: 30,000 nested arrays, 60 KB, under the 64 KiB body limit. */
const DEEP = `${"[".repeat(30_000)}${"]".repeat(30_000)}`

/** Row counts of the tables these routes write (and the journal): compared before and after. */
const counts = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const [row] = yield* sql<Record<string, string>>`
    select (select count(*) from auth_challenges)::text as auth_challenges,
           (select count(*) from link_challenges)::text as link_challenges,
           (select count(*) from orders)::text as orders,
           (select count(*) from takes)::text as takes,
           (select count(*) from withdrawals)::text as withdrawals,
           (select count(*) from withdrawal_preparations)::text as withdrawal_preparations,
           (select count(*) from transfers)::text as transfers,
           (select count(*) from credentials)::text as credentials,
           (select count(*) from journal)::text as journal`
  return row
})

const expectDepthRefusal = (res: { status: number; headers: Record<string, unknown>; json: unknown; text: string }) => {
  expect(res.status, res.text.slice(0, 300)).toBe(400)
  const body = res.json as { error: { code: string; message: string; request_id: string; retryable: boolean } }
  expect(body.error.code).toBe("INVALID_REQUEST")
  expect(body.error.retryable).toBe(false)
  expect(body.error.message).toContain(`nested deeper than ${MAX_JSON_DEPTH}`)
  expect(body.error.request_id).toBe(res.headers["x-request-id"])
  expect(String(res.headers["x-server-time"])).toMatch(/^\d{13}$/)
}

layer(Live, { timeout: "180 seconds", excludeTestServices: true })("deeply nested JSON", (it) => {
  it.effect("30,000 nested arrays answer 400 INVALID_REQUEST on every kind of route, and change nothing", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const token = yield* signIn(base, privateKeyToAccount(generatePrivateKey()))
      const before = yield* counts
      const routes: ReadonlyArray<readonly [string, string, Record<string, string>]> = [
        ["POST", "/v1/auth/challenge", {}],
        ["POST", "/v1/auth/verify", {}],
        ["POST", "/v1/takes/preview", {}],
        ["POST", "/v1/takes", bearer(token)],
        ["POST", "/v1/orders", bearer(token)],
        ["POST", "/v1/withdrawals", bearer(token)],
        ["POST", "/v1/withdrawals/prepare", bearer(token)],
        ["POST", "/v1/transfers", bearer(token)],
        ["POST", "/v1/accounts/challenge", bearer(token)],
        ["POST", "/v1/credentials", bearer(token)],
        ["PUT", "/v1/quote-identities/7d4f2a3e-1b2c-4d5e-8f90-123456789abc/lease", bearer(token)],
      ]
      for (const [method, path, headers] of routes) {
        const res = yield* rawRequest(`${base}${path}`, { method, headers: { ...json, ...headers }, body: DEEP })
        expectDepthRefusal(res)
      }
      // Without Content-Length (chunked), without a content type (the framework reads JSON then), and
      // deep objects rather than arrays.
      const chunked = yield* rawRequest(`${base}/v1/auth/challenge`, {
        method: "POST",
        headers: json,
        body: DEEP,
        chunked: true,
      })
      expectDepthRefusal(chunked)
      const untyped = yield* rawRequest(`${base}/v1/auth/challenge`, { method: "POST", body: DEEP })
      expectDepthRefusal(untyped)
      const objects = `${'{"a":'.repeat(10_000)}1${"}".repeat(10_000)}`
      expectDepthRefusal(
        yield* rawRequest(`${base}/v1/orders`, {
          method: "POST",
          headers: { ...json, ...bearer(token) },
          body: objects,
        }),
      )
      expect(yield* counts).toEqual(before)
      // The session still works, and was not charged into a refusal.
      const me = yield* rawRequest(`${base}/v1/me`, { headers: bearer(token) })
      expect(me.status).toBe(200)
    }),
  )

  it.effect("the limit counts brackets outside strings only; legitimate nested bodies still work", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const address = privateKeyToAccount(generatePrivateKey()).address
      // Brackets and escaped quotes inside strings are not nesting: a field value full of them is
      // judged by the schema (here: not an address), not by the depth limit.
      const bracketsInString = yield* rawRequest(`${base}/v1/auth/challenge`, {
        method: "POST",
        headers: json,
        body: `{"address":"\\"${"[".repeat(200)}\\\\"}`,
      })
      expect(bracketsInString.status).toBe(400)
      expect((bracketsInString.json as { error: { message: string } }).error.message).not.toContain("nested deeper")
      // A body nested exactly to the limit is decoded (and refused by its schema), one level more is not.
      const atLimit = `{"address":${"[".repeat(MAX_JSON_DEPTH - 1)}${"]".repeat(MAX_JSON_DEPTH - 1)}}`
      const res = yield* rawRequest(`${base}/v1/auth/challenge`, { method: "POST", headers: json, body: atLimit })
      expect(res.status).toBe(400)
      expect((res.json as { error: { message: string } }).error.message).not.toContain("nested deeper")
      const overLimit = `{"address":${"[".repeat(MAX_JSON_DEPTH)}${"]".repeat(MAX_JSON_DEPTH)}}`
      expectDepthRefusal(
        yield* rawRequest(`${base}/v1/auth/challenge`, { method: "POST", headers: json, body: overLimit }),
      )
      // Ordinary bodies: a challenge, and a sign-in whose session then takes a typed-data-sized body.
      const ok = yield* post(`${base}/v1/auth/challenge`, { address })
      expect(ok.status).toBe(200)
      const token = yield* signIn(base, privateKeyToAccount(generatePrivateKey()))
      const preview = yield* post(
        `${base}/v1/takes/preview`,
        { from: "hyperliquid", to: "aster", amount_in: "1000000", max_parts: 2 },
        bearer(token),
      )
      expect(preview.status, preview.text).toBe(200)
    }),
  )

  it.effect(
    "a NUL in a string, a malformed multipart body, a GET with a chunked body, a chunked challenge: never 5xx",
    () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const token = yield* signIn(base, privateKeyToAccount(generatePrivateKey()))
        const refusal = (res: { status: number; text: string; json: unknown }, message: string) => {
          expect(res.status, res.text.slice(0, 300)).toBe(400)
          const body = res.json as { error: { code: string; message: string; retryable: boolean } }
          expect(body.error).toMatchObject({ code: "INVALID_REQUEST", retryable: false })
          expect(body.error.message).toContain(message)
        }
        // PostgreSQL refuses U+0000 in text: a credential label holding it was a failed insert, 500 INTERNAL.
        const identity = yield* registerIdentity(base, token, privateKeyToAccount(generatePrivateKey()))
        const before = yield* counts
        const nul = JSON.stringify({ quote_identity_id: identity.id, scopes: ["quote"], label: "a\u0000b" })
        expect(nul).toContain("\\u0000")
        for (const chunked of [false, true]) {
          const res = yield* rawRequest(`${base}/v1/credentials`, {
            method: "POST",
            headers: { ...json, ...bearer(token) },
            body: nul,
            chunked,
          })
          refusal(res, "U+0000")
        }
        // A literal backslash before "u0000" is no NUL: the schema judges that body (not an address), not this rule.
        const backslash = yield* post(`${base}/v1/auth/challenge`, { address: "\\u0000" })
        expect(backslash.status).toBe(400)
        expect((backslash.json as { error: { message: string } }).error.message).not.toContain("U+0000")
        // Multipart without a boundary was a defect in the platform's parser (500). Every payload is JSON: any
        // multipart body is refused before it is parsed (and, like a too deep one, before its bearer is checked).
        const multipart = "--x\r\ncontent-disposition: form-data; name=a\r\n\r\n1\r\n--x--\r\n"
        for (const [path, headers] of [
          ["/v1/auth/challenge", {}],
          ["/v1/orders", bearer(token)],
          ["/v1/orders", bearer("not-a-session")],
        ] as const) {
          for (const type of ["multipart/form-data", "multipart/form-data; boundary=x", "Multipart/Mixed"]) {
            for (const body of [multipart, ""]) {
              const res = yield* rawRequest(`${base}${path}`, {
                method: "POST",
                headers: { ...headers, "content-type": type },
                body,
              })
              refusal(res, "multipart bodies are not accepted")
            }
          }
        }
        // A GET with a chunked body: the Request the body limit rebuilt refused a body on GET (500). It is ignored.
        const get = yield* rawRequest(`${base}/v1/info`, {
          headers: { "transfer-encoding": "chunked" },
          body: "{}",
          chunked: true,
        })
        expect(get.status, get.text.slice(0, 300)).toBe(200)
        expect(get.json).toHaveProperty("settlement")
        expect(yield* counts).toEqual(before)
        // A well-formed chunked body on a route that budgets by client address: the rebuilt request has no socket,
        // and reading its peer address was a defect (500). It carries the socket's address instead.
        const address = privateKeyToAccount(generatePrivateKey()).address
        const challenge = yield* rawRequest(`${base}/v1/auth/challenge`, {
          method: "POST",
          headers: json,
          body: JSON.stringify({ address }),
          chunked: true,
        })
        expect(challenge.status, challenge.text.slice(0, 300)).toBe(200)
        expect((challenge.json as { message: string }).message).toContain(address)
      }),
  )

  it.effect("a route that takes no body refuses one with anything in it, changing nothing; none and {} pass", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const token = yield* signIn(base, privateKeyToAccount(generatePrivateKey()))
      const me = rawRequest(`${base}/v1/me`, { headers: bearer(token) })
      const logout = (body: string | undefined, chunked = false) =>
        rawRequest(`${base}/v1/auth/logout`, {
          method: "POST",
          headers: { ...json, ...bearer(token) },
          ...(body === undefined ? {} : { body }),
          chunked,
        })
      // Spec, Wire conventions 1: unknown fields in a request body are rejected, on a route without fields too.
      for (const [body, chunked] of [
        ['{"everywhere":true}', false],
        ['{"everywhere":true}', true],
        ["[]", false],
        ["null", false],
        ["not json", false],
      ] as const) {
        const res = yield* logout(body, chunked)
        expect(res.status, `${body}: ${res.text.slice(0, 300)}`).toBe(400)
        expect((res.json as { error: { code: string; message: string } }).error).toMatchObject({
          code: "INVALID_REQUEST",
          message: "this route takes no request body (send none, or {})",
        })
        expect((yield* me).status).toBe(200)
      }
      expect((yield* logout("{}")).status).toBe(204)
      expect((yield* me).status).toBe(401)
      // No body at all: the session it names is signed out as before.
      const other = yield* signIn(base, privateKeyToAccount(generatePrivateKey()))
      const plain = yield* rawRequest(`${base}/v1/auth/logout`, { method: "POST", headers: bearer(other) })
      expect(plain.status).toBe(204)
    }),
  )

  it.effect("a deeply nested subscription frame is a protocol_error on the stream", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const conn = yield* Effect.promise(() => connect(base))
      // 2,000 levels: the most a 4096-byte frame holds.
      conn.send(`{"type":"subscribe","pairs":${"[".repeat(2000)}${"]".repeat(2000)}}`)
      const { control, closed } = yield* controlAndClose(conn)
      expect(control.code).toBe("protocol_error")
      expect(control.message).toContain(`nested deeper than ${MAX_JSON_DEPTH}`)
      expect(closed.code).toBe(1008)
    }),
  )
})
