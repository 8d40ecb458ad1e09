// The typed client (src/Client/ApiClient.ts) against the service: SIWE sign-in with a viem account, calls typed by
// the HttpApi contract, errors decoded by code from the envelope (with the request id), a 429's Retry-After waited
// out before the call is sent again, and an unreachable service told apart from an answer.
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { Parser } from "@asyncapi/parser"
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { ApiError, ApiUnreachable, linkAccount, makeApiClient, request, signIn } from "../../src/Client/ApiClient.ts"
import { buildLinkMessage } from "../../src/Domain/LinkMessage.ts"
import { permitTypedData } from "../../src/Domain/Permit.ts"
import { buildSiweMessage } from "../../src/Domain/Siwe.ts"
import { baseUrl } from "../support/TestServer.ts"
import { testStackWithChain } from "../support/TestStack.ts"

const Live = testStackWithChain()

layer(Live, { timeout: "120 seconds", excludeTestServices: true })("typed API client", (it) => {
  it.effect("signs in with a viem account and reads its own account", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const owner = privateKeyToAccount(generatePrivateKey())
      const session = yield* signIn(base, owner)
      expect(session.token).toMatch(/^st_/)
      const client = yield* makeApiClient(base, { bearer: session.token })
      const me = yield* request(client.account.me())
      expect(me.master_address.toLowerCase()).toBe(owner.address.toLowerCase())
      // Public routes need no bearer; answers are decoded by the contract's schemas.
      const venues = yield* request((yield* makeApiClient(base)).info.venues())
      expect(venues.data.length).toBeGreaterThan(0)
    }),
  )

  it.effect("an error answer is an ApiError with the envelope's code, message, retryable and request id", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const session = yield* signIn(base, privateKeyToAccount(generatePrivateKey()))
      const client = yield* makeApiClient(base, { bearer: session.token })
      const missing = yield* request(client.orders.get({ path: { id: `0x${"ab".repeat(32)}` } })).pipe(Effect.flip)
      expect(missing).toBeInstanceOf(ApiError)
      expect(missing).toMatchObject({ status: 404, code: "NOT_FOUND", retryable: false })
      expect((missing as ApiError).requestId).toMatch(/^[0-9a-f-]{36}$/)
      // Without a session: 401 by its code.
      const anonymous = yield* makeApiClient(base)
      const unauthorized = yield* request(anonymous.account.me()).pipe(Effect.flip)
      expect(unauthorized).toMatchObject({ status: 401, code: "UNAUTHORIZED" })
      // An unknown challenge nonce: the service's own code, not a decode failure.
      const verify = yield* request(
        anonymous.auth.verify({ payload: { nonce: "a".repeat(32), signature: `0x${"11".repeat(65)}` } as never }),
      ).pipe(Effect.flip)
      expect(verify._tag).toBe("ApiError")
      expect((verify as ApiError).code).toMatch(/^[A-Z_]+$/)
      expect((verify as ApiError).code).not.toBe("DECODE")
    }),
  )

  it.effect("a 429 carries Retry-After; with retries the call waits it out and succeeds", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const address = privateKeyToAccount(generatePrivateKey()).address
      const noRetry = yield* makeApiClient(base, { retries: 0 })
      // The per-address challenge budget (6, refilled 6/min) runs out within a few calls.
      let limited: ApiError | undefined
      for (let i = 0; i < 10 && limited === undefined; i++) {
        const r = yield* request(noRetry.auth.challenge({ payload: { address } })).pipe(Effect.either)
        if (r._tag === "Left" && r.left._tag === "ApiError" && r.left.status === 429) limited = r.left
      }
      expect(limited).toMatchObject({ status: 429, code: "RATE_LIMITED", retryable: true })
      expect(limited!.retryAfterMs).toBeGreaterThan(0)
      const patient = yield* makeApiClient(base, { retries: 2 })
      const challenge = yield* request(patient.auth.challenge({ payload: { address } }))
      expect(challenge.message).toContain(address)
    }),
  )

  it.effect("the AsyncAPI document of /v1/stream is served beside the OpenAPI document and parses", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const res = yield* Effect.promise(() => fetch(`${base}/v1/asyncapi.json`))
      expect(res.status).toBe(200)
      const text = yield* Effect.promise(() => res.text())
      const { document, diagnostics } = yield* Effect.promise(() => new Parser().parse(text))
      expect(diagnostics.filter((d) => d.severity === 0).map((d) => d.message)).toEqual([])
      expect(document?.channels().get("stream")?.address()).toBe("/v1/stream")
    }),
  )

  it.effect("no answer at all is ApiUnreachable", () =>
    Effect.gen(function* () {
      const client = yield* makeApiClient("http://127.0.0.1:9", { retries: 0, timeout: "3 seconds" })
      const e = yield* request(client.info.info()).pipe(Effect.flip)
      expect(e).toBeInstanceOf(ApiUnreachable)
    }),
  )

  it.effect("a hostile service's challenges are refused before the wallet is asked to sign anything", () =>
    Effect.scoped(
      Effect.gen(function* () {
        const wallet = privateKeyToAccount(generatePrivateKey())
        const asked: Array<string> = []
        const spy = {
          address: wallet.address,
          signMessage: (args: { message: string }) => {
            asked.push("message")
            return wallet.signMessage(args)
          },
          // biome-ignore lint/suspicious/noExplicitAny: typed data as the service sent it
          signTypedData: (typed: any) => {
            asked.push("typed data")
            return wallet.signTypedData(typed)
          },
        }
        const now = Date.now()
        const siwe = (over: { domain?: string; uri?: string; address?: string; expiresMs?: number }) =>
          buildSiweMessage({
            domain: over.domain ?? "app.example.com",
            uri: over.uri ?? "https://app.example.com",
            chainId: 999,
            address: over.address ?? wallet.address,
            nonce: "a".repeat(32),
            issuedAtMs: now - 3_600_000,
            expirationTimeMs: over.expiresMs ?? now + 600_000,
          })
        const permit = JSON.parse(
          JSON.stringify(
            permitTypedData(
              {
                name: "USD Coin",
                version: "2",
                chainId: 42161,
                verifyingContract: privateKeyToAccount(generatePrivateKey()).address,
              },
              {
                owner: wallet.address,
                spender: privateKeyToAccount(generatePrivateKey()).address,
                value: 2n ** 256n - 1n,
                nonce: 0n,
                deadline: 2n ** 256n - 1n,
              },
            ),
            (_k, v) => (typeof v === "bigint" ? v.toString() : v),
          ),
        )
        // The service's answers, one scenario at a time (a test double: the hostile operator).
        let challenge: Record<string, unknown> = {}
        const server = createServer((req, res) => {
          const body =
            req.url === "/v1/me"
              ? {
                  master_address: wallet.address.toLowerCase(),
                  created_at: new Date(now).toISOString(),
                  accounts: [],
                  quote_identity_id: crypto.randomUUID(),
                  access: "granted",
                  admin: false,
                }
              : { nonce: "a".repeat(32), expires_at: new Date(now + 600_000).toISOString(), ...challenge }
          res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(body))
        })
        yield* Effect.acquireRelease(
          Effect.promise(() => new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))),
          () => Effect.promise(() => new Promise<void>((resolve) => server.close(() => resolve()))),
        )
        const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
        const refused = <A, E extends { readonly _tag: string }, R>(call: Effect.Effect<A, E, R>) =>
          Effect.map(Effect.flip(call), (e) => {
            expect(e).toMatchObject({ _tag: "ApiError", code: "UNSAFE_TO_SIGN" })
            return (e as unknown as ApiError).message
          })
        const appOrigin = "https://app.example.com"
        const signInCases: Array<[string, string, RegExp]> = [
          ["another site's sign-in", siwe({ domain: "bank.example", uri: "https://bank.example" }), /sign in to/],
          ["another address", siwe({ address: privateKeyToAccount(generatePrivateKey()).address }), /another address/],
          ["not a SIWE message", "Please sign: transfer everything", /not a Sign-In/],
          ["expired", siwe({ expiresMs: now - 1000 }), /expiry/],
        ]
        for (const [what, message, why] of signInCases) {
          challenge = { message }
          expect(yield* refused(signIn(base, spy, { appOrigin })), what).toMatch(why)
        }
        const linkCases: Array<[string, Record<string, unknown>, RegExp]> = [
          [
            "a Permit as the agent approval",
            { message: "approve", typed_data: permit },
            /agent approval granting nothing/,
          ],
          [
            "a link of another address",
            {
              message: buildLinkMessage({
                domain: "app.example.com",
                venue: "hyperliquid",
                address: privateKeyToAccount(generatePrivateKey()).address,
                master: wallet.address,
                nonce: "a".repeat(32),
                issuedAtMs: now,
                expirationTimeMs: now + 600_000,
              }),
            },
            /another address/,
          ],
          ["free text naming the address", { message: `Send all funds of ${wallet.address}` }, /link message/],
        ]
        for (const [what, answer, why] of linkCases) {
          challenge = answer
          expect(yield* refused(linkAccount(base, "st_x", spy, "hyperliquid", { appOrigin })), what).toMatch(why)
        }
        expect(asked).toEqual([])
      }),
    ),
  )
})
