import { HttpApp, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { SqlClient } from "@effect/sql"
import { Clock, Effect, FiberRef, Layer, Option } from "effect"
import { authenticateHeader, BEARER, CredentialResolver, sessionPrincipal } from "../Auth/Bearer.ts"
import { chargeLiveSession } from "../Auth/Repo.ts"
import { AppConfig } from "../Config.ts"
import { RateLimited, Unauthorized } from "../Domain/Errors.ts"
import type { DeferredCaller, Principal } from "../Domain/Principal.ts"
import { sha256 } from "../SecureRandom.ts"
import { retryAfterSeconds } from "../Sql/RateLimiter.ts"
import { Authentication, DeferredAuthentication } from "./SecurityContract.ts"

/** Adds Retry-After (seconds) to whatever response this request ends with. */
export const retryAfter = (seconds: number) =>
  HttpApp.appendPreResponseHandler((_req, res) =>
    Effect.succeed(HttpServerResponse.setHeader(res, "retry-after", String(seconds))),
  )

/**
 * What both authentication middlewares do with a bearer: a session or an `mk_` credential is resolved and, when
 * live, charged one token of its request budget, in one round trip (every signed-in request pays it; maker bots
 * renew leases every few seconds). Unauthorized or RateLimited (with Retry-After) otherwise; a refused bearer is
 * never charged.
 */
export const bearerAuthenticator = Effect.gen(function* () {
  const { deployment } = yield* AppConfig
  const sql = yield* SqlClient.SqlClient
  const resolver = yield* CredentialResolver
  const admins = new Set(deployment.admins.map((a) => a.toLowerCase()))
  const { requests_per_second: rate, request_burst: burst } = deployment.limits
  const unauthorized = (why: string) => Effect.fail(new Unauthorized({ message: why }))
  const limited = (seconds: number) =>
    Effect.zipRight(
      retryAfter(seconds),
      Effect.fail(new RateLimited({ message: `request budget exhausted; retry in ${seconds} s` })),
    )
  const session = (token: string) =>
    Effect.gen(function* () {
      const now = yield* Clock.currentTimeMillis
      const found = yield* chargeLiveSession(sha256(token), now, { rate, burst }).pipe(Effect.orDie)
      const principal = yield* sessionPrincipal(found, now, admins)
      // Live (a dead one was refused above): charged, or its budget is spent.
      if (Option.exists(found, (row) => row.allowed)) return principal
      const key = `session:${principal.sessionId}`
      return yield* limited(yield* retryAfterSeconds({ key, rate, burst }).pipe(Effect.orDie))
    })
  const credential = (token: string) =>
    Effect.gen(function* () {
      const resolved = yield* resolver.resolveCharged(sha256(token), { rate, burst })
      if (Option.isNone(resolved)) return yield* unauthorized("unknown or revoked credential")
      const { principal, retryAfterSeconds } = resolved.value
      if (retryAfterSeconds !== null) return yield* limited(retryAfterSeconds)
      return principal as Principal
    })
  const authenticate = (header: string | undefined) => {
    const token = BEARER.exec(header ?? "")?.[1]
    // A missing or malformed header is refused by authenticateHeader, before any statement.
    return (
      token === undefined
        ? authenticateHeader(header, admins, resolver)
        : token.startsWith("mk_")
          ? credential(token)
          : session(token)
    ).pipe(Effect.provideService(SqlClient.SqlClient, sql))
  }
  /** The token of a well-formed bearer (`mk_…` for a credential), else undefined. */
  const bearerToken = (header: string | undefined) => BEARER.exec(header ?? "")?.[1]
  return { authenticate, bearerToken, bucket: { rate, burst } }
})

export const AuthenticationLive = Layer.effect(
  Authentication,
  Effect.map(bearerAuthenticator, ({ authenticate }) =>
    Authentication.of({
      bearer: () =>
        Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => authenticate(request.headers.authorization)),
    }),
  ),
)

/** The `mk_` token a DeferredAuthentication route has not authenticated yet (undefined otherwise). */
export const DeferredToken = FiberRef.unsafeMake<string | undefined>(undefined)

export const DeferredAuthenticationLive = Layer.effect(
  DeferredAuthentication,
  Effect.map(bearerAuthenticator, ({ authenticate, bearerToken }) =>
    DeferredAuthentication.of({
      bearer: () =>
        Effect.flatMap(
          HttpServerRequest.HttpServerRequest,
          (request): Effect.Effect<DeferredCaller, Unauthorized | RateLimited> => {
            const header = request.headers.authorization
            const token = bearerToken(header)
            return token?.startsWith("mk_") === true
              ? Effect.as(FiberRef.set(DeferredToken, token), { _tag: "CredentialToken", tokenHash: sha256(token) })
              : authenticate(header)
          },
        ),
    }),
  ),
)
