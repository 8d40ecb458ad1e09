import { OpenApi } from "@effect/platform"
import { describe, expect, it, layer } from "@effect/vitest"
import { Effect } from "effect"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { Api } from "../../src/Http/Api.ts"
import { RAW_ROUTES, routesOf } from "../../src/Http/RouteTable.ts"
import { rawRequest } from "../support/Http.ts"
import { issueCredential, registerIdentity } from "../support/QuoteIdentities.ts"
import { bearer, signIn } from "../support/SignIn.ts"
import { baseUrl } from "../support/TestServer.ts"
import { testStackWithChain } from "../support/TestStack.ts"

const admin = privateKeyToAccount(generatePrivateKey())
const Live = testStackWithChain({ admins: [admin.address] })

/**
 * public: anyone; session: a master session only (credentials are refused with 403); admin: an
 * admin session; lease: a session or a `quote` credential bound to the identity; identity: a
 * session or any credential, each seeing only what it may see; reader: a session or a `read` credential.
 */
type Kind = "public" | "session" | "admin" | "lease" | "identity" | "quoting" | "reader"
const someone = privateKeyToAccount(generatePrivateKey()).address
const ID = ":identity"
const anyUuid = "7d4f2a3e-1b2c-4d5e-8f90-123456789abc"
const anyOrder = `0x${"ab".repeat(32)}`

const MATRIX: Record<string, { kind: Kind; path?: string; body?: unknown }> = {
  "GET /health": { kind: "public" },
  "GET /health/live": { kind: "public" },
  "GET /v1/info": { kind: "public" },
  "GET /v1/venues": { kind: "public" },
  "GET /v1/openapi.json": { kind: "public" },
  "GET /v1/asyncapi.json": { kind: "public" },
  "GET /v1/docs": { kind: "public" },
  // A plain GET (no Upgrade) answers 426 UPGRADE_REQUIRED; the WebSocket authenticates in its first frame.
  "GET /v1/stream": { kind: "public" },
  "POST /v1/auth/challenge": { kind: "public", body: { address: someone } },
  "POST /v1/auth/verify": { kind: "public", body: { nonce: "a".repeat(32), signature: `0x${"11".repeat(65)}` } },
  "POST /v1/auth/logout": { kind: "session" },
  "GET /v1/me": { kind: "session" },
  "POST /v1/accounts/challenge": { kind: "session", body: { venue: "aster", address: someone } },
  "POST /v1/accounts": { kind: "session", body: { venue: "aster", address: someone } },
  "DELETE /v1/accounts/:venue": { kind: "session", path: "/v1/accounts/aster" },
  "PUT /v1/admin/access/:address": { kind: "admin", path: `/v1/admin/access/${someone}`, body: { access: "granted" } },
  "POST /v1/quote-identities/prepare": { kind: "session", body: { signer: someone } },
  "POST /v1/quote-identities": { kind: "session", body: { signer: someone, signature: `0x${"11".repeat(65)}` } },
  "GET /v1/quote-identities/:id": { kind: "identity", path: `/v1/quote-identities/${ID}` },
  "PUT /v1/quote-identities/:id/lease": {
    kind: "lease",
    path: `/v1/quote-identities/${ID}/lease`,
    body: { ttl_seconds: 30 },
  },
  "POST /v1/quote-identities/:id/resume": { kind: "session", path: `/v1/quote-identities/${ID}/resume` },
  "POST /v1/credentials": { kind: "session", body: { quote_identity_id: anyUuid, scopes: ["quote"] } },
  "GET /v1/credentials": { kind: "session" },
  "POST /v1/credentials/:id/rotate": { kind: "session", path: `/v1/credentials/${anyUuid}/rotate` },
  "DELETE /v1/credentials/:id": { kind: "session", path: `/v1/credentials/${anyUuid}` },
  "POST /v1/orders": {
    kind: "session",
    body: {
      client_order_id: "matrix-1",
      venue: "hyperliquid",
      receive_venue: "aster",
      owner_address: someone,
      amount: "1000000",
      quote_identity_id: anyUuid,
    },
  },
  "POST /v1/orders/:id/signatures": {
    kind: "session",
    path: `/v1/orders/${anyOrder}/signatures`,
    body: { fund_order: `0x${"11".repeat(65)}`, permit: `0x${"11".repeat(65)}` },
  },
  "GET /v1/orders": { kind: "session", path: "/v1/orders?client_order_id=matrix-1" },
  "GET /v1/orders/:id": { kind: "session", path: `/v1/orders/${anyOrder}` },
  "GET /v1/orders/:id/preparation": { kind: "session", path: `/v1/orders/${anyOrder}/preparation` },
  // Quoting routes also take a quote credential bound to the order's identity: for an unknown order
  // every principal gets 404, never an auth refusal.
  "PUT /v1/orders/:id/quotes": {
    kind: "quoting",
    path: `/v1/orders/${anyOrder}/quotes`,
    body: {
      sequence: 1,
      valid_until: 4102444800,
      quote_size: "1",
      identity_generation: "1",
      quotes: [
        {
          venue: "aster",
          chain_id: 42161,
          token: someone,
          recipient: someone,
          supply: "1",
          receive: "1",
          min_fill: "1",
        },
      ],
      signature: `0x${"11".repeat(65)}`,
    },
  },
  "DELETE /v1/orders/:id/quotes": { kind: "quoting", path: `/v1/orders/${anyOrder}/quotes` },
  "POST /v1/withdrawals/prepare": { kind: "session", body: { venue: "aster", amount: "1000000", to: "signer" } },
  "POST /v1/withdrawals": {
    kind: "session",
    body: {
      venue: "aster",
      amount: "1000000",
      to: "signer",
      typed_data: { types: {}, primaryType: "Action", domain: {}, message: {} },
      signature: `0x${"11".repeat(65)}`,
    },
  },
  "GET /v1/withdrawals/history": { kind: "session" },
  "GET /v1/withdrawals/:id": { kind: "session", path: `/v1/withdrawals/${anyUuid}` },
  "GET /v1/escrow": { kind: "session" },
  "GET /v1/escrow/legacy": { kind: "reader" },
  "POST /v1/escrow/close/prepare": { kind: "session", body: { venue: "hyperliquid", order_id: anyOrder } },
  "POST /v1/escrow/close": {
    kind: "session",
    body: {
      venue: "hyperliquid",
      order_id: anyOrder,
      dex: 0,
      nonce: "1",
      deadline: 4102444800,
      signature: `0x${"11".repeat(65)}`,
      to_margin: true,
    },
  },
  "POST /v1/closes": { kind: "session", body: { venue: "hyperliquid", order_id: anyOrder } },
  "POST /v1/takes/preview": { kind: "public", body: { from: "aster", to: "hyperliquid", amount_in: "1000000" } },
  "POST /v1/takes": {
    kind: "session",
    body: {
      client_take_id: "matrix-1",
      from: "aster",
      to: "hyperliquid",
      amount_in: "1000000",
      min_out: "1",
      payer: someone,
      recipient: someone,
      max_parts: 8,
    },
  },
  "POST /v1/takes/:id/signatures": {
    kind: "session",
    path: `/v1/takes/${anyUuid}/signatures`,
    body: { permit: `0x${"11".repeat(65)}`, fills: [{ fill_id: anyUuid, signature: `0x${"11".repeat(65)}` }] },
  },
  "GET /v1/takes/:id": { kind: "session", path: `/v1/takes/${anyUuid}` },
  "POST /v1/transfers": {
    kind: "session",
    body: {
      from: "aster",
      to: "hyperliquid",
      amount_in: "1000000",
      min_out: "1",
      payer: someone,
      recipient: someone,
    },
  },
  "GET /v1/transfers": { kind: "session" },
  "POST /v1/transfers/:id/cancel": { kind: "session", path: `/v1/transfers/${anyUuid}/cancel` },
  "PUT /v1/transfers/:id/take/pay-key": {
    kind: "session",
    path: `/v1/transfers/${anyUuid}/take/pay-key`,
    body: { pay_key: someone },
  },
  "GET /v1/trades": { kind: "public", path: "/v1/trades?a=aster&b=hyperliquid" },
  // scope=all (the default) is public and ignores any bearer; scope=mine (session only) is covered in trades.test.ts.
  "GET /v1/trades/history": { kind: "public" },
}

/** What the OpenAPI document must declare for each kind (src/Http/ApiDocs.ts): as the route behaves. */
const SECURITY: Record<Kind, ReadonlyArray<Record<string, ReadonlyArray<string>>> | "public"> = {
  public: "public",
  session: [{ session: [] }],
  admin: [{ session: [] }],
  lease: [{ session: [] }, { credential: ["quote"] }],
  quoting: [{ session: [] }, { credential: ["quote"] }],
  identity: [{ session: [] }, { credential: [] }],
  reader: [{ session: [] }, { credential: ["read"] }],
}

const code = (res: { json: unknown }) => (res.json as { error?: { code: string } } | undefined)?.error?.code

describe("auth matrix in the OpenAPI document", () => {
  it("each route names the schemes it accepts: none when public, a session, a credential with its scopes", () => {
    const spec = OpenApi.fromApi(Api) as unknown as {
      paths: Record<string, Record<string, { security?: ReadonlyArray<Record<string, ReadonlyArray<string>>> }>>
    }
    const wrong = Object.entries(MATRIX).flatMap(([route, { kind }]) => {
      const [method, path] = route.split(" ") as [string, string]
      const operation = spec.paths[path.replace(/:([a-z_]+)/g, "{$1}")]?.[method.toLowerCase()]
      if (operation === undefined) return [] // served outside the contract (documents, the stream)
      const declared = operation.security ?? []
      const expected = SECURITY[kind]
      const ok =
        expected === "public"
          ? declared.length === 0 || declared.some((r) => Object.keys(r).length === 0)
          : JSON.stringify(declared) === JSON.stringify(expected)
      return ok ? [] : [`${route} (${kind}): ${JSON.stringify(declared)}`]
    })
    expect(wrong).toEqual([])
  })
})

layer(Live, { timeout: "180 seconds", excludeTestServices: true })("auth matrix", (it) => {
  it.effect("every route is classified", () =>
    Effect.sync(() => {
      const served = [...routesOf(Api), ...RAW_ROUTES].map((r) => `${r.method} ${r.path}`).sort()
      expect(Object.keys(MATRIX).sort()).toEqual(served)
    }),
  )

  it.effect("every route x {none, bad, session, admin, quote credential, read credential} answers per the spec", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      // The maker: a session, a credential identity with a `quote` credential, another with `read`.
      const makerToken = yield* signIn(base, privateKeyToAccount(generatePrivateKey()))
      const quoteIdentity = yield* registerIdentity(base, makerToken, privateKeyToAccount(generatePrivateKey()))
      const quoteCredential = yield* issueCredential(base, makerToken, quoteIdentity.id, ["quote"])
      const readIdentity = yield* registerIdentity(base, makerToken, privateKeyToAccount(generatePrivateKey()))
      const readCredential = yield* issueCredential(base, makerToken, readIdentity.id, ["read"])
      // One admin session (the challenge budget is per address); logout revokes it, so renew then.
      let adminToken = yield* signIn(base, admin)
      for (const [route, spec] of Object.entries(MATRIX)) {
        const [method, template] = route.split(" ") as [string, string]
        const path = (spec.path ?? template).replace(ID, quoteIdentity.id)
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
        const quote = yield* call(bearer(quoteCredential.token))
        const read = yield* call(bearer(readCredential.token))
        const cells = { none, bad, session, admin: asAdmin, quote, read }
        for (const [what, res] of Object.entries(cells)) {
          const label = `${route} as ${what} -> ${res.status} ${res.text.slice(0, 120)}`
          if (route !== "GET /health") expect(res.status, label).toBeLessThan(500)
          if (res.status >= 400 && route !== "GET /health") expect(code(res), label).toBeDefined()
        }
        const is = (res: { status: number; json: unknown }, status: number, c: string, who: string) =>
          expect([res.status, code(res)], `${route} as ${who}`).toEqual([status, c])
        const allowed = (res: { status: number }, who: string) =>
          expect([401, 403], `${route} as ${who} -> ${res.status}`).not.toContain(res.status)
        if (spec.kind === "public") {
          for (const [what, res] of Object.entries(cells))
            expect(code(res), `${route} ${what}`).not.toBe("UNAUTHORIZED")
          continue
        }
        is(none, 401, "UNAUTHORIZED", "none")
        is(bad, 401, "UNAUTHORIZED", "bad")
        if (spec.kind === "session") {
          allowed(session, "session")
          allowed(asAdmin, "admin")
          is(quote, 403, "FORBIDDEN", "quote credential")
          is(read, 403, "FORBIDDEN", "read credential")
        } else if (spec.kind === "admin") {
          is(session, 403, "FORBIDDEN", "session")
          expect(asAdmin.status).toBe(200)
          is(quote, 403, "FORBIDDEN", "quote credential")
          is(read, 403, "FORBIDDEN", "read credential")
        } else if (spec.kind === "quoting") {
          for (const [what, res] of Object.entries({ session, admin: asAdmin, quote, read })) {
            is(res, 404, "NOT_FOUND", what)
          }
        } else if (spec.kind === "reader") {
          expect(session.status, route).toBe(200)
          expect(asAdmin.status, route).toBe(200)
          is(quote, 403, "FORBIDDEN", "quote credential")
          expect(read.status, route).toBe(200)
        } else if (spec.kind === "lease") {
          // Another master's session cannot see the identity; its own credential renews it.
          is(session, 404, "NOT_FOUND", "session of another master")
          expect(quote.status, route).toBe(200)
          is(read, 403, "FORBIDDEN", "read credential")
        } else {
          is(session, 404, "NOT_FOUND", "session of another master")
          expect(quote.status, route).toBe(200)
          is(read, 404, "NOT_FOUND", "credential of another identity")
        }
      }
    }),
  )
})
