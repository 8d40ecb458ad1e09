/**
 * Issue 22 item 5, one error path: every error of the catalogue (src/Domain/Errors.ts) answers its code, status
 * and retryable through the one encoder (src/Http/Errors.ts), with request_id equal to the x-request-id header
 * and the CORS headers, on the probe route that fails with each class in turn and on the real routes that can
 * produce a code without chain or venue state (the lease route among them).
 *
 * Codes no route here produces, and where their routes are proven: ACCOUNT_IN_USE (accounts.test), LEASE_EXPIRED
 * and QUOTE_STALE (quotes), WITHDRAWAL_PENDING (withdrawals), CLOSE_PENDING, CLOSE_LIMIT, ORDER_MANAGED and
 * BELOW_MINIMUM (closes, escrow), INSUFFICIENT_BALANCE, NO_LIQUIDITY, PAYER_NOT_LINKED (takes, transfers),
 * VENUE_REFUSED and VENUE_UNAVAILABLE (aster-signin, withdrawals), CHAIN_UNAVAILABLE (chain-faults),
 * CHALLENGE_EXPIRED / CHALLENGE_NOT_YET_VALID and the SIWE_*_MISMATCH codes (siwe unit tests: a message signed
 * with another field needs a hand-built message), SERVICE_UNAVAILABLE (an entity that does not answer: a unit
 * test of callEntity below, and the probe).
 */
import { ClusterError, EntityAddress, EntityId, EntityType, ShardId, Snowflake } from "@effect/cluster"
import { RpcClient } from "@effect/rpc"
import { expect, layer, it as plain } from "@effect/vitest"
import { Effect, Either, Fiber, FiberRef, TestClock } from "effect"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { callEntity } from "../../src/Cluster/EntityCall.ts"
import { REQUEST_ID_HEADER } from "../../src/Cluster/Keyed.ts"
import {
  CATALOGUE,
  type CatalogueClass,
  ChallengeUnknown,
  ChallengeUsed,
  Forbidden,
  Internal,
  InvalidRequest,
  MethodNotAllowed,
  NotFound,
  PayloadTooLarge,
  RateLimited,
  ServiceUnavailable,
  SignatureInvalid,
  SignatureMalformed,
  Unauthorized,
  UpgradeRequired,
} from "../../src/Domain/Errors.ts"
import { CurrentRequestId } from "../../src/Domain/RequestId.ts"
import { type RawResponse, rawRequest } from "../support/Http.ts"
import { issueCredential, registerIdentity } from "../support/QuoteIdentities.ts"
import { bearer, json, post, signIn } from "../support/SignIn.ts"
import { TEST_ORIGIN } from "../support/TestConfig.ts"
import { baseUrl } from "../support/TestServer.ts"
import { testStackWithChain } from "../support/TestStack.ts"

const Live = testStackWithChain()

const REQUEST_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/

/** The envelope of one class: its code, status and retryable; request_id = x-request-id; CORS for the app origin. */
const expectCatalogued = (res: RawResponse, Class: CatalogueClass, what: string) => {
  expect([res.status, (res.json as { error?: { code?: string } }).error?.code], what).toEqual([
    Class.status,
    Class.code,
  ])
  const body = res.json as { error: { code: string; message: string; request_id: string; retryable: boolean } }
  expect(Object.keys(body), what).toEqual(["error"])
  expect(Object.keys(body.error).sort(), what).toEqual(["code", "message", "request_id", "retryable"])
  expect(body.error.retryable, what).toBe(Class.retryable)
  expect(body.error.request_id, what).toMatch(REQUEST_ID)
  expect(body.error.request_id, what).toBe(res.headers["x-request-id"])
  expect(res.headers["access-control-allow-origin"], what).toBe(TEST_ORIGIN)
  expect(String(res.headers["access-control-expose-headers"]).split(","), what).toContain("x-request-id")
  return body.error
}

const origin = { origin: TEST_ORIGIN }

layer(Live, { timeout: "180 seconds", excludeTestServices: true })("error catalogue", (it) => {
  it.effect("every class of the catalogue, through a route: code, status, retryable, request id, CORS", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      expect(CATALOGUE.length).toBe(new Set(CATALOGUE.map((C) => C.code)).size)
      for (const Class of CATALOGUE) {
        const res = yield* rawRequest(`${base}/v1/probe/error/${Class._tag}`, { headers: origin })
        const error = expectCatalogued(res, Class, Class.code)
        expect(error.message).toBe("probe")
        // A request id the client sent is the one in the envelope.
        const mine = "3f1c2a9e-8b7d-4c6e-9a5b-1d2e3f4a5b6c"
        const again = yield* rawRequest(`${base}/v1/probe/error/${Class._tag}`, {
          headers: { ...origin, "x-request-id": mine },
        })
        expect(expectCatalogued(again, Class, Class.code).request_id).toBe(mine)
      }
      expect(CATALOGUE.find((C) => C === ServiceUnavailable)).toBeDefined()
      expect([ServiceUnavailable.code, ServiceUnavailable.status, ServiceUnavailable.retryable]).toEqual([
        "SERVICE_UNAVAILABLE",
        503,
        true,
      ])
    }),
  )

  it.effect("the real routes answer the catalogue's envelope for each code they produce", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      expectCatalogued(yield* rawRequest(`${base}/v1/nope`, { headers: origin }), NotFound, "unknown route")
      expectCatalogued(
        yield* rawRequest(`${base}/v1/info`, { method: "DELETE", headers: origin }),
        MethodNotAllowed,
        "wrong method",
      )
      expectCatalogued(
        yield* post(`${base}/v1/auth/challenge`, { address: 1 }, origin),
        InvalidRequest,
        "bad challenge body",
      )
      expectCatalogued(
        yield* rawRequest(`${base}/v1/auth/challenge`, {
          method: "POST",
          headers: { ...json, ...origin },
          body: JSON.stringify({ address: "x".repeat(70 * 1024) }),
        }),
        PayloadTooLarge,
        "65 KiB body",
      )
      expectCatalogued(yield* rawRequest(`${base}/v1/stream`, { headers: origin }), UpgradeRequired, "plain GET stream")
      expectCatalogued(yield* rawRequest(`${base}/v1/probe/defect`, { headers: origin }), Internal, "a defect")
      expectCatalogued(yield* rawRequest(`${base}/v1/me`, { headers: origin }), Unauthorized, "no bearer")

      // Sign-in: an unknown nonce, a malformed signature, another signer, a used challenge, the budget.
      const alice = privateKeyToAccount(generatePrivateKey())
      const wellFormed = yield* Effect.promise(() => alice.signMessage({ message: "no challenge" }))
      const unknown = yield* post(`${base}/v1/auth/verify`, { nonce: "a".repeat(32), signature: wellFormed }, origin)
      expectCatalogued(unknown, ChallengeUnknown, "unknown nonce")
      const challenge = (yield* post(`${base}/v1/auth/challenge`, { address: alice.address }, origin)).json as {
        message: string
        nonce: string
      }
      expectCatalogued(
        yield* post(`${base}/v1/auth/verify`, { nonce: challenge.nonce, signature: "0x1234" }, origin),
        SignatureMalformed,
        "short signature",
      )
      const mallory = privateKeyToAccount(generatePrivateKey())
      const wrong = yield* Effect.promise(() => mallory.signMessage({ message: challenge.message }))
      const second = (yield* post(`${base}/v1/auth/challenge`, { address: alice.address }, origin)).json as {
        message: string
        nonce: string
      }
      expectCatalogued(
        yield* post(`${base}/v1/auth/verify`, { nonce: second.nonce, signature: wrong }, origin),
        SignatureInvalid,
        "another signer",
      )
      const third = (yield* post(`${base}/v1/auth/challenge`, { address: alice.address }, origin)).json as {
        message: string
        nonce: string
      }
      const signed = yield* Effect.promise(() => alice.signMessage({ message: third.message }))
      expect((yield* post(`${base}/v1/auth/verify`, { nonce: third.nonce, signature: signed }, origin)).status).toBe(
        200,
      )
      expectCatalogued(
        yield* post(`${base}/v1/auth/verify`, { nonce: third.nonce, signature: signed }, origin),
        ChallengeUsed,
        "a used challenge",
      )
      // The challenge budget (6 a minute per address): the 7th and later are RATE_LIMITED with Retry-After.
      const bob = privateKeyToAccount(generatePrivateKey())
      let limited: RawResponse | undefined
      for (let i = 0; i < 8 && limited === undefined; i++) {
        const res = yield* post(`${base}/v1/auth/challenge`, { address: bob.address }, origin)
        if (res.status === 429) limited = res
      }
      expect(limited).toBeDefined()
      expectCatalogued(limited!, RateLimited, "challenge budget")
      expect(String(limited!.headers["retry-after"])).toMatch(/^\d+$/)

      // A session that is not an admin on an admin route.
      const session = yield* signIn(base, privateKeyToAccount(generatePrivateKey()))
      expectCatalogued(
        yield* rawRequest(`${base}/v1/admin/access/${alice.address}`, {
          method: "PUT",
          headers: { ...json, ...bearer(session), ...origin },
          body: JSON.stringify({ access: "granted" }),
        }),
        Forbidden,
        "non-admin",
      )
    }),
  )

  it.effect("the lease route answers errors the same way", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const master = yield* signIn(base, privateKeyToAccount(generatePrivateKey()))
      const identity = yield* registerIdentity(base, master, privateKeyToAccount(generatePrivateKey()))
      const other = yield* registerIdentity(base, master, privateKeyToAccount(generatePrivateKey()))
      const quote = yield* issueCredential(base, master, identity.id, ["quote"])
      const read = yield* issueCredential(base, master, other.id, ["read"])
      const put = (token: string, id: string, body: string) =>
        rawRequest(`${base}/v1/quote-identities/${id}/lease`, {
          method: "PUT",
          headers: { ...json, ...bearer(token), ...origin },
          body,
        })
      const cases: Array<[string, string, string, CatalogueClass]> = [
        [`mk_${"z".repeat(40)}`, identity.id, '{"ttl_seconds":30}', Unauthorized],
        [quote.token, identity.id, '{"ttl_seconds":4}', InvalidRequest],
        [quote.token, other.id, '{"ttl_seconds":30}', NotFound],
        [read.token, other.id, '{"ttl_seconds":30}', Forbidden],
      ]
      for (const [token, id, body, Class] of cases) {
        expectCatalogued(yield* put(token, id, body), Class, `lease ${Class.code}`)
      }
    }),
  )
})

/** callEntity, the one bound of an HTTP → entity call: infrastructure failures become SERVICE_UNAVAILABLE once. */
plain.effect("callEntity: a timeout and the cluster's failures are ServiceUnavailable; catalogue errors pass", () =>
  Effect.gen(function* () {
    const slow = yield* Effect.fork(Effect.either(callEntity(Effect.never, { timeout: "2 seconds" })))
    yield* TestClock.adjust("3 seconds")
    const timedOut = yield* Fiber.join(slow)
    expect(Either.isLeft(timedOut) && timedOut.left).toBeInstanceOf(ServiceUnavailable)
    const address = new EntityAddress.EntityAddress({
      shardId: ShardId.make("default", 1),
      entityType: EntityType.EntityType.make("Probe"),
      entityId: EntityId.make("key"),
    })
    for (const infra of [
      new ClusterError.MailboxFull({ address }),
      new ClusterError.AlreadyProcessingMessage({ address, envelopeId: Snowflake.Snowflake(1n) }),
      new ClusterError.PersistenceError({ cause: "storage down" }),
    ]) {
      const failed = yield* Effect.either(callEntity(Effect.fail(infra)))
      expect(Either.isLeft(failed) && failed.left, infra._tag).toBeInstanceOf(ServiceUnavailable)
    }
    const own = yield* Effect.either(callEntity(Effect.fail(new NotFound({ message: "no such key" }))))
    expect(Either.isLeft(own) && own.left).toBeInstanceOf(NotFound)
    expect(yield* callEntity(Effect.succeed(7))).toBe(7)
    // The call carries the request id as an RPC header (the entity's spans and log lines name the request).
    const id = "3f1c2a9e-8b7d-4c6e-9a5b-1d2e3f4a5b6c"
    const headers = yield* Effect.locally(callEntity(FiberRef.get(RpcClient.currentHeaders)), CurrentRequestId, id)
    expect(headers[REQUEST_ID_HEADER]).toBe(id)
  }),
)
