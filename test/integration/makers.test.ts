import { SqlClient } from "@effect/sql"
import { expect, layer } from "@effect/vitest"
import { Clock, Effect, TestClock, TestContext } from "effect"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { expireLease, renewLease } from "../../src/QuoteIdentities/Repo.ts"
import { rawRequest } from "../support/Http.ts"
import { issueCredential, registerIdentity, renew } from "../support/QuoteIdentities.ts"
import { bearer, post, signIn } from "../support/SignIn.ts"
import { baseUrl } from "../support/TestServer.ts"
import { testStackWithChain } from "../support/TestStack.ts"

const Live = testStackWithChain()
const fresh = () => privateKeyToAccount(generatePrivateKey())
const code = (res: { json: unknown }) => (res.json as { error?: { code: string } }).error?.code

layer(Live, { timeout: "120 seconds", excludeTestServices: true })("makers: identities, credentials, lease", (it) => {
  it.effect("a signer registers once; its lease starts expired; renewals keep or advance the generation", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const token = yield* signIn(base, fresh())
      const signer = fresh()
      const identity = yield* registerIdentity(base, token, signer)
      expect(identity.generation).toBe("0")
      expect(Date.parse(identity.lease_expires_at)).toBeLessThanOrEqual(Date.now() + 1000)
      // The same signer cannot register again; a registration signed by another key is refused.
      const prepared = (yield* post(`${base}/v1/quote-identities/prepare`, { signer: signer.address }, bearer(token)))
        .json as { typed_data: Parameters<typeof signer.signTypedData>[0] }
      const again = yield* post(
        `${base}/v1/quote-identities`,
        { signer: signer.address, signature: yield* Effect.promise(() => signer.signTypedData(prepared.typed_data)) },
        bearer(token),
      )
      expect([again.status, code(again)]).toEqual([409, "STATE_CONFLICT"])
      const other = fresh()
      const p2 = (yield* post(`${base}/v1/quote-identities/prepare`, { signer: other.address }, bearer(token)))
        .json as { typed_data: Parameters<typeof signer.signTypedData>[0] }
      const forged = yield* post(
        `${base}/v1/quote-identities`,
        { signer: other.address, signature: yield* Effect.promise(() => signer.signTypedData(p2.typed_data)) },
        bearer(token),
      )
      expect([forged.status, code(forged)]).toEqual([422, "SIGNATURE_INVALID"])

      const credential = yield* issueCredential(base, token, identity.id, ["quote"])
      expect(credential.token.startsWith("mk_")).toBe(true)
      const first = yield* renew(base, credential.token, identity.id, 30)
      expect(first.status).toBe(200)
      const lease1 = first.json as { identity_id: string; generation: string; expires_at: string }
      expect(lease1.generation).toBe("1")
      expect(Date.parse(lease1.expires_at) - Date.now()).toBeGreaterThan(25_000)
      // Whole seconds, rounded down (spec Wire conventions 3: fractions are for snapshots and history).
      expect(lease1.expires_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/)
      const second = (yield* renew(base, credential.token, identity.id, 60)).json as typeof lease1
      expect(second.generation).toBe("1")
      // After expiry (in database time) the next renewal advances the generation.
      const sql = yield* SqlClient.SqlClient
      yield* sql`update quote_identities set lease_expires_at = now() - interval '1 second' where id = ${identity.id}`
      const third = (yield* renew(base, credential.token, identity.id, 60)).json as typeof lease1
      expect(third.generation).toBe("2")
      // ttl bounds.
      for (const ttl of [4, 121]) {
        const bad = yield* renew(base, credential.token, identity.id, ttl)
        expect([bad.status, code(bad)]).toEqual([400, "INVALID_REQUEST"])
      }
      // The credential never lists secrets.
      const list = yield* rawRequest(`${base}/v1/credentials`, { headers: bearer(token) })
      expect(list.text).not.toContain(credential.token)
      expect(list.text).not.toContain("token")
    }),
  )

  it.effect("browser identities renew to the far future; a credential sees only its own identity", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const token = yield* signIn(base, fresh())
      const me = (yield* rawRequest(`${base}/v1/me`, { headers: bearer(token) })).json as { quote_identity_id: string }
      const browser = yield* renew(base, token, me.quote_identity_id, 30)
      expect(browser.json).toMatchObject({ generation: "0", expires_at: "9999-12-31T00:00:00Z" })
      const identity = yield* registerIdentity(base, token, fresh())
      const credential = yield* issueCredential(base, token, identity.id, ["quote", "read"])
      const own = yield* rawRequest(`${base}/v1/quote-identities/${identity.id}`, { headers: bearer(credential.token) })
      expect(own.status).toBe(200)
      expect(own.json).toMatchObject({ id: identity.id, kind: "credential", revoked: false, cancel_epoch: "0" })
      const browserSeen = yield* rawRequest(`${base}/v1/quote-identities/${me.quote_identity_id}`, {
        headers: bearer(credential.token),
      })
      expect([browserSeen.status, code(browserSeen)]).toEqual([404, "NOT_FOUND"])
      const notMine = yield* renew(base, credential.token, me.quote_identity_id, 30)
      expect([notMine.status, code(notMine)]).toEqual([404, "NOT_FOUND"])
      // A read-only credential may not renew.
      const reader = yield* issueCredential(base, token, (yield* registerIdentity(base, token, fresh())).id, ["read"])
      const denied = yield* renew(base, reader.token, identity.id, 30)
      expect([denied.status, code(denied)]).toEqual([403, "FORBIDDEN"])
    }),
  )

  it.effect("rotation invalidates the old bearer at once and clears quotes; revocation is total and final", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const token = yield* signIn(base, fresh())
      const identity = yield* registerIdentity(base, token, fresh())
      const credential = yield* issueCredential(base, token, identity.id, ["quote"])
      expect((yield* renew(base, credential.token, identity.id, 60)).status).toBe(200)
      const rotated = yield* post(`${base}/v1/credentials/${credential.id}/rotate`, undefined, bearer(token))
      expect(rotated.status).toBe(200)
      const newToken = (rotated.json as { token: string }).token
      expect(newToken).not.toBe(credential.token)
      const old = yield* renew(base, credential.token, identity.id, 60)
      expect([old.status, code(old)]).toEqual([401, "UNAUTHORIZED"])
      const viaNew = (yield* renew(base, newToken, identity.id, 60)).json as { generation: string }
      expect(viaNew.generation).toBe("1")
      const afterRotate = (yield* rawRequest(`${base}/v1/quote-identities/${identity.id}`, { headers: bearer(token) }))
        .json as { cancel_epoch: string }
      expect(afterRotate.cancel_epoch).toBe("1")

      const revoked = yield* rawRequest(`${base}/v1/credentials/${credential.id}`, {
        method: "DELETE",
        headers: bearer(token),
      })
      expect(revoked.status).toBe(200)
      expect((yield* renew(base, newToken, identity.id, 60)).status).toBe(401)
      const state = (yield* rawRequest(`${base}/v1/quote-identities/${identity.id}`, { headers: bearer(token) }))
        .json as { revoked: boolean; generation: string; cancel_epoch: string; lease_expires_at: string }
      expect(state.revoked).toBe(true)
      expect(state.generation).toBe("2")
      expect(state.cancel_epoch).toBe("2")
      expect(Date.parse(state.lease_expires_at)).toBeLessThanOrEqual(Date.now() + 1000)
      const renewRevoked = yield* renew(base, token, identity.id, 60)
      expect([renewRevoked.status, code(renewRevoked)]).toEqual([409, "STATE_CONFLICT"])
      const twice = yield* rawRequest(`${base}/v1/credentials/${credential.id}`, {
        method: "DELETE",
        headers: bearer(token),
      })
      expect([twice.status, code(twice)]).toEqual([404, "NOT_FOUND"])
      const reissue = yield* post(
        `${base}/v1/credentials`,
        { quote_identity_id: identity.id, scopes: ["quote"] },
        bearer(token),
      )
      expect([reissue.status, code(reissue)]).toEqual([404, "NOT_FOUND"])
    }),
  )

  it.effect("concurrent renew and revoke never leave a live lease on a revoked identity", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const sql = yield* SqlClient.SqlClient
      const token = yield* signIn(base, fresh())
      for (let i = 0; i < 12; i++) {
        const identity = yield* registerIdentity(base, token, fresh())
        const credential = yield* issueCredential(base, token, identity.id, ["quote"])
        yield* Effect.all(
          [
            renew(base, credential.token, identity.id, 120),
            renew(base, credential.token, identity.id, 120),
            rawRequest(`${base}/v1/credentials/${credential.id}`, { method: "DELETE", headers: bearer(token) }),
            renew(base, credential.token, identity.id, 120),
          ],
          { concurrency: 4 },
        )
        const [row] = yield* sql<{ live: boolean; revoked: boolean }>`
          select lease_expires_at > now() as live, revoked_at is not null as revoked
          from quote_identities where id = ${identity.id}`
        expect(row).toEqual({ live: false, revoked: true })
      }
    }),
  )

  it.effect("the lease's expiry step, driven by TestClock, deactivates an expired identity's quote sets once", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const sql = yield* SqlClient.SqlClient
      const master = fresh()
      const token = yield* signIn(base, master)
      const identity = yield* registerIdentity(base, token, fresh())
      const credential = yield* issueCredential(base, token, identity.id, ["quote"])
      // The renewal's statement itself, not the route: the route's entity would also time this 5 s lease in real
      // time and could expire it under the TestClock steps below on a slow machine.
      const renewedNow = yield* renewLease(identity.id, 5)
      if (renewedNow._tag !== "Renewed") return expect.fail(`renewal: ${renewedNow._tag}`)
      const lease = { generation: renewedNow.generation }
      const m = master.address.toLowerCase()
      const orderId = `0x${"cd".repeat(32)}`
      yield* sql`insert into orders (id, master, venue, receive_venue, owner_address, state, amount, created_at, updated_at)
        values (${orderId}, ${m}, 'hyperliquid', 'aster', ${m}, 'funded', 5000000, now(), now())`
      yield* sql`insert into quote_sets (id, order_id, quote_identity_id, identity_generation, cancel_epoch, sequence,
          valid_until, quote_size, quotes, signature, active, created_at)
        values (gen_random_uuid(), ${orderId}, ${identity.id}, ${lease.generation}::bigint, 0, 1, now() + interval '1 minute',
          1000000, '[]', '0x', true, now())`
      const active = () =>
        sql<{
          n: string
        }>`select count(*)::text as n from quote_sets where quote_identity_id = ${identity.id} and active`
      const expiries = () =>
        sql<{ n: string }>`select count(*)::text as n from journal where kind = 'quote_identity.lease_expired'
          and payload->>'identity_id' = ${identity.id}`
      // The lease entity's expiry (actors/QuoteIdentityLease.ts) at the Effect clock's time instead of the database's.
      const sweepLeases = Effect.flatMap(Clock.currentTimeMillis, (atMs) =>
        expireLease({ id: identity.id, runner: null, atMs }),
      )
      yield* Effect.gen(function* () {
        yield* TestClock.setTime(Date.now())
        yield* sweepLeases
        expect((yield* active())[0]!.n).toBe("1")
        yield* TestClock.adjust("4 seconds")
        yield* sweepLeases
        expect((yield* active())[0]!.n).toBe("1")
        yield* TestClock.adjust("2 seconds")
        yield* sweepLeases
        expect((yield* active())[0]!.n).toBe("0")
        yield* sweepLeases
        expect((yield* expiries())[0]!.n).toBe("1")
      }).pipe(Effect.provide(TestContext.TestContext))
      // Renewing later advances the generation; the old set stays inactive for good.
      yield* sql`update quote_identities set lease_expires_at = now() - interval '1 second' where id = ${identity.id}`
      const renewed = (yield* renew(base, credential.token, identity.id, 60)).json as { generation: string }
      expect(BigInt(renewed.generation)).toBeGreaterThan(BigInt(lease.generation))
      expect((yield* active())[0]!.n).toBe("0")
    }),
  )
})
