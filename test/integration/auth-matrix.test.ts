import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { Api } from "../../src/Http/Api.ts"
import { RAW_ROUTES, routesOf } from "../../src/Http/RouteTable.ts"
import { rawRequest } from "../support/Http.ts"
import { bearer, signIn } from "../support/SignIn.ts"
import { baseUrl } from "../support/TestServer.ts"
import { testStackWithChain } from "../support/TestStack.ts"

const admin = privateKeyToAccount(generatePrivateKey())
const Live = testStackWithChain({ admins: [admin.address] })

type Kind = "public" | "session" | "admin"
const someone = privateKeyToAccount(generatePrivateKey()).address

/** Every route the API serves, with how it is guarded and a request that is otherwise valid. */
const MATRIX: Record<string, { kind: Kind; path?: string; body?: unknown }> = {
  "GET /health": { kind: "public" },
  "GET /health/live": { kind: "public" },
  "GET /v1/info": { kind: "public" },
  "GET /v1/venues": { kind: "public" },
  "GET /v1/openapi.json": { kind: "public" },
  "GET /v1/docs": { kind: "public" },
  "POST /v1/auth/challenge": { kind: "public", body: { address: someone } },
  "POST /v1/auth/verify": { kind: "public", body: { nonce: "a".repeat(32), signature: `0x${"11".repeat(65)}` } },
  "POST /v1/auth/logout": { kind: "session" },
  "GET /v1/me": { kind: "session" },
  "POST /v1/accounts/challenge": { kind: "session", body: { venue: "aster", address: someone } },
  "POST /v1/accounts": { kind: "session", body: { venue: "aster", address: someone } },
  "DELETE /v1/accounts/:venue": { kind: "session", path: "/v1/accounts/aster" },
  "PUT /v1/admin/access/:address": {
    kind: "admin",
    path: `/v1/admin/access/${someone}`,
    body: { access: "granted" },
  },
}

const code = (res: { json: unknown }) => (res.json as { error?: { code: string } } | undefined)?.error?.code

layer(Live, { timeout: "180 seconds", excludeTestServices: true })("auth matrix", (it) => {
  it.effect("every route is classified", () =>
    Effect.sync(() => {
      const served = [...routesOf(Api), ...RAW_ROUTES].map((r) => `${r.method} ${r.path}`).sort()
      expect(Object.keys(MATRIX).sort()).toEqual(served)
    }),
  )

  it.effect("every route x {no token, bad token, session, admin session} answers per the spec", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      // One admin session (the challenge budget is per address); logout revokes it, so renew then.
      let adminToken = yield* signIn(base, admin)
      for (const [route, spec] of Object.entries(MATRIX)) {
        const [method, template] = route.split(" ") as [string, string]
        const path = spec.path ?? template
        const call = (headers: Record<string, string>) =>
          rawRequest(`${base}${path}`, {
            method,
            headers: { ...headers, ...(spec.body === undefined ? {} : { "content-type": "application/json" }) },
            ...(spec.body === undefined ? {} : { body: JSON.stringify(spec.body) }),
          })
        const none = yield* call({})
        const bad = yield* call(bearer(`st_${"Z".repeat(43)}`))
        const session = yield* call(bearer(yield* signIn(base, privateKeyToAccount(generatePrivateKey()))))
        const asAdmin = yield* call(bearer(adminToken))
        if (route === "POST /v1/auth/logout") adminToken = yield* signIn(base, admin)
        const label = (what: string, res: { status: number }) => `${route} ${what} -> ${res.status}`
        for (const [what, res] of [
          ["none", none],
          ["bad", bad],
          ["session", session],
          ["admin", asAdmin],
        ] as const) {
          expect(res.status, label(what, res)).toBeLessThan(500 + (route === "GET /health" ? 4 : 0))
          if (res.status >= 400 && route !== "GET /health") {
            expect(code(res), label(what, res)).toBeDefined()
          }
        }
        if (spec.kind === "public") {
          for (const res of [none, bad, session, asAdmin]) expect(code(res), route).not.toBe("UNAUTHORIZED")
        } else {
          expect([none.status, code(none)], route).toEqual([401, "UNAUTHORIZED"])
          expect([bad.status, code(bad)], route).toEqual([401, "UNAUTHORIZED"])
          if (spec.kind === "session") {
            // Authenticated and allowed: whatever the route answers next, it is not an auth refusal.
            expect([401, 403], label("session", session)).not.toContain(session.status)
            expect([401, 403], label("admin", asAdmin)).not.toContain(asAdmin.status)
          } else {
            expect([session.status, code(session)], route).toEqual([403, "FORBIDDEN"])
            expect(asAdmin.status, label("admin", asAdmin)).toBe(200)
          }
        }
      }
    }),
  )
})
