import { SqlClient } from "@effect/sql"
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { hexToBigInt, numberToHex } from "viem"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { buildSiweMessage } from "../../src/Domain/Siwe.ts"
import { rawRequest } from "../support/Http.ts"
import { bearer, post, signIn } from "../support/SignIn.ts"
import { baseUrl } from "../support/TestServer.ts"
import { testStackWithChain } from "../support/TestStack.ts"

/** A real auth chain, so a signature by another key is judged on chain (ERC-1271) and refused. */
const Live = testStackWithChain()
const fresh = () => privateKeyToAccount(generatePrivateKey())
const N = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n

const code = (res: { json: unknown }) => (res.json as { error?: { code: string } }).error?.code

/** Stores a challenge whose message differs from what we would issue (a stale or forged row). */
const plantChallenge = (nonce: string, address: string, message: string, expiresInSeconds = 600) =>
  Effect.flatMap(
    SqlClient.SqlClient,
    (sql) => sql`insert into auth_challenges (nonce, address, message, expires_at, created_at)
      values (${nonce}, ${address.toLowerCase()}, ${message}, now() + make_interval(secs => ${expiresInSeconds}), now())`,
  )

const siwe = (address: string, nonce: string, over: Partial<Parameters<typeof buildSiweMessage>[0]> = {}) =>
  buildSiweMessage({
    domain: "app.example.com",
    uri: "https://app.example.com",
    chainId: 999,
    address,
    nonce,
    issuedAtMs: Date.now(),
    expirationTimeMs: Date.now() + 600_000,
    ...over,
  })

layer(Live, { timeout: "120 seconds", excludeTestServices: true })("sign-in", (it) => {
  it.effect("challenge names the app origin, the chain, the address and a ten-minute expiry", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const account = fresh()
      const res = yield* post(`${base}/v1/auth/challenge`, { address: account.address.toLowerCase() })
      expect(res.status).toBe(200)
      const body = res.json as { message: string; nonce: string; expires_at: string }
      expect(body.message.startsWith("app.example.com wants you to sign in with your Ethereum account:\n")).toBe(true)
      expect(body.message).toContain(`\n${account.address}\n`)
      expect(body.message).toContain("\nURI: https://app.example.com\n")
      expect(body.message).toContain("\nChain ID: 999\n")
      expect(body.message).toContain(`\nNonce: ${body.nonce}\n`)
      const ttl = Date.parse(body.expires_at) - Date.now()
      expect(ttl).toBeGreaterThan(590_000)
      expect(ttl).toBeLessThanOrEqual(600_000)
    }),
  )

  it.effect("verify answers a session once; /v1/me shows the new account and its browser identity", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const account = fresh()
      const challenge = (yield* post(`${base}/v1/auth/challenge`, { address: account.address })).json as {
        message: string
        nonce: string
      }
      const signature = yield* Effect.promise(() => account.signMessage({ message: challenge.message }))
      const verified = yield* post(`${base}/v1/auth/verify`, { nonce: challenge.nonce, signature })
      expect(verified.status).toBe(200)
      const session = verified.json as { token: string; expires_at: string; master_address: string }
      expect(session.master_address).toBe(account.address.toLowerCase())
      const days = (Date.parse(session.expires_at) - Date.now()) / 86_400_000
      expect(days).toBeGreaterThan(6.99)
      expect(days).toBeLessThanOrEqual(7)
      const again = yield* post(`${base}/v1/auth/verify`, { nonce: challenge.nonce, signature })
      expect(again.status).toBe(409)
      expect(code(again)).toBe("CHALLENGE_USED")
      const me = yield* rawRequest(`${base}/v1/me`, { headers: bearer(session.token) })
      expect(me.status).toBe(200)
      const body = me.json as Record<string, unknown>
      expect(body.master_address).toBe(account.address.toLowerCase())
      expect(body.accounts).toEqual([])
      expect(body.access).toBe("granted")
      expect(body.admin).toBe(false)
      expect(body.quote_identity_id).toMatch(/^[0-9a-f-]{36}$/)
      const sql = yield* SqlClient.SqlClient
      const identity = yield* sql<{ signer: string; kind: string; lease: string }>`
        select signer, kind, to_char(lease_expires_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') as lease
        from quote_identities where id = ${body.quote_identity_id as string}`
      expect(identity).toEqual([
        { signer: account.address.toLowerCase(), kind: "browser", lease: "9999-12-31T00:00:00Z" },
      ])
      // Only the hash of the token is stored.
      const raw = yield* sql`select 1 from sessions where encode(token_hash, 'escape') like ${`%${session.token}%`}`
      expect(raw.length).toBe(0)
      // A second sign-in reuses the account and identity.
      const token2 = yield* signIn(base, account)
      const me2 = (yield* rawRequest(`${base}/v1/me`, { headers: bearer(token2) })).json as Record<string, unknown>
      expect(me2.quote_identity_id).toBe(body.quote_identity_id)
    }),
  )

  it.effect("negative sign-ins each answer their own code and never a session", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const account = fresh()
      const other = fresh()
      const verify = (nonce: string, signature: string) => post(`${base}/v1/auth/verify`, { nonce, signature })
      const challenge = () =>
        Effect.map(
          post(`${base}/v1/auth/challenge`, { address: account.address }),
          (r) => r.json as { message: string; nonce: string },
        )

      // Signed by another key.
      const c1 = yield* challenge()
      const byOther = yield* Effect.promise(() => other.signMessage({ message: c1.message }))
      const r1 = yield* verify(c1.nonce, byOther)
      expect([r1.status, code(r1)]).toEqual([422, "SIGNATURE_INVALID"])

      // Unknown nonce.
      const r2 = yield* verify("a".repeat(32), byOther)
      expect([r2.status, code(r2)]).toEqual([422, "CHALLENGE_UNKNOWN"])

      // Wrong length (64 bytes) and garbage v.
      const c3 = yield* challenge()
      const good = yield* Effect.promise(() => account.signMessage({ message: c3.message }))
      const r3 = yield* verify(c3.nonce, good.slice(0, 130))
      expect([r3.status, code(r3)]).toEqual([422, "SIGNATURE_MALFORMED"])
      const r3b = yield* verify(c3.nonce, `${good.slice(0, 130)}05`)
      expect([r3b.status, code(r3b)]).toEqual([422, "SIGNATURE_MALFORMED"])
      // The shape checks did not spend the nonce: the good signature still works.
      expect((yield* verify(c3.nonce, good)).status).toBe(200)

      // High-s twin of that used signature: refused as malleable, not as a reuse.
      const s = hexToBigInt(`0x${good.slice(66, 130)}`)
      const v = Number.parseInt(good.slice(130), 16)
      const twin = `${good.slice(0, 66)}${numberToHex(N - s, { size: 32 }).slice(2)}${(v === 27 ? 28 : 27).toString(16)}`
      const r4 = yield* verify(c3.nonce, twin)
      expect([r4.status, code(r4)]).toEqual([422, "SIGNATURE_MALLEABLE"])

      // Expired challenge.
      const c5 = yield* challenge()
      const sql = yield* SqlClient.SqlClient
      yield* sql`update auth_challenges set expires_at = now() - interval '1 second' where nonce = ${c5.nonce}`
      const r5 = yield* verify(c5.nonce, yield* Effect.promise(() => account.signMessage({ message: c5.message })))
      expect([r5.status, code(r5)]).toEqual([422, "CHALLENGE_EXPIRED"])

      // Stored messages that differ from ours (stale config, tampering): each field has its code.
      const cases: Array<[string, string]> = [
        [siwe(account.address, "nonce00000000001", { domain: "evil.example.com" }), "SIWE_DOMAIN_MISMATCH"],
        [siwe(account.address, "nonce00000000002", { uri: "https://evil.example.com" }), "SIWE_URI_MISMATCH"],
        [siwe(account.address, "nonce00000000003", { chainId: 1 }), "SIWE_CHAIN_MISMATCH"],
        [siwe(other.address, "nonce00000000004"), "SIWE_ADDRESS_MISMATCH"],
        [siwe(account.address, "nonce99999999999"), "SIWE_NONCE_MISMATCH"],
        [
          siwe(account.address, "nonce00000000006", {
            issuedAtMs: Date.now() + 3_600_000,
            expirationTimeMs: Date.now() + 7_200_000,
          }),
          "CHALLENGE_NOT_YET_VALID",
        ],
        [
          siwe(account.address, "nonce00000000007", {
            issuedAtMs: Date.now() - 20_000,
            expirationTimeMs: Date.now() - 1000,
          }),
          "CHALLENGE_EXPIRED",
        ],
        ["not a SIWE message at all", "SIWE_MALFORMED"],
      ]
      for (const [i, [message, expected]] of cases.entries()) {
        const nonce = `nonce0000000000${i + 1}`
        yield* plantChallenge(nonce, account.address, message)
        const signature = yield* Effect.promise(() => account.signMessage({ message }))
        const res = yield* verify(nonce, signature)
        expect([res.status, code(res), expected]).toEqual([422, expected, expected])
      }
      const sessions = yield* sql`select 1 from sessions where master = ${account.address.toLowerCase()}`
      expect(sessions.length).toBe(1)
    }),
  )

  it.effect("bearer: missing, malformed, unknown, revoked and logged-out tokens are 401", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const token = yield* signIn(base, fresh())
      const me = (headers: Record<string, string>) => rawRequest(`${base}/v1/me`, { headers })
      expect((yield* me(bearer(token))).status).toBe(200)
      for (const headers of [
        {},
        { authorization: token },
        { authorization: `Basic ${token}` },
        { authorization: `Bearer ${token} extra` },
        { authorization: "Bearer short" },
        bearer(`st_${"A".repeat(43)}`),
        bearer(`mk_${"A".repeat(43)}`),
        { "x-api-key": token },
      ]) {
        const res = yield* me(headers)
        expect([res.status, code(res)]).toEqual([401, "UNAUTHORIZED"])
      }
      const out = yield* post(`${base}/v1/auth/logout`, undefined, bearer(token))
      expect(out.status).toBe(204)
      const after = yield* me(bearer(token))
      expect([after.status, code(after)]).toEqual([401, "UNAUTHORIZED"])
      // Revocation in the store (e.g. by an operator) takes effect on the next request.
      const token2 = yield* signIn(base, fresh())
      const sql = yield* SqlClient.SqlClient
      yield* sql`update sessions set revoked_at = now() where revoked_at is null`
      expect((yield* me(bearer(token2))).status).toBe(401)
    }),
  )

  it.effect("the 7th challenge for one address in a minute is 429 with Retry-After", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const address = fresh().address
      for (let i = 0; i < 6; i++) expect((yield* post(`${base}/v1/auth/challenge`, { address })).status).toBe(200)
      const seventh = yield* post(`${base}/v1/auth/challenge`, { address })
      expect([seventh.status, code(seventh)]).toEqual([429, "RATE_LIMITED"])
      const retry = Number(seventh.headers["retry-after"])
      expect(retry).toBeGreaterThanOrEqual(1)
      expect(retry).toBeLessThanOrEqual(10)
      // Another address is unaffected.
      expect((yield* post(`${base}/v1/auth/challenge`, { address: fresh().address })).status).toBe(200)
    }),
  )

  it.effect("20 concurrent challenges for a fresh address let exactly 6 through", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const address = fresh().address
      const results = yield* Effect.all(
        Array.from({ length: 20 }, () => post(`${base}/v1/auth/challenge`, { address })),
        { concurrency: 20 },
      )
      expect(results.filter((r) => r.status === 200).length).toBe(6)
      expect(results.filter((r) => r.status === 429).length).toBe(14)
    }),
  )
})
