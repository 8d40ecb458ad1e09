import { HttpApiMiddleware, HttpApiSecurity, HttpApp, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { SqlClient } from "@effect/sql"
import { Clock, Context, Effect, Layer, Option, Schema } from "effect"
import { AppConfig } from "../Config.ts"
import { RateLimited, Unauthorized } from "../Domain/Errors.ts"
import { type CredentialPrincipal, CurrentPrincipal, type Principal } from "../Domain/Principal.ts"
import { sha256 } from "../SecureRandom.ts"
import { takeToken } from "../Store/RateLimiter.ts"
import { findSessionByHash } from "../Store/Sessions.ts"
import * as Wire from "./Errors.ts"

/** Requests that carry a bearer: a master session or a maker credential (`mk_…`). */
export class Authentication extends HttpApiMiddleware.Tag<Authentication>()("Authentication", {
  failure: Schema.Union(Wire.Unauthorized, Wire.RateLimited),
  provides: CurrentPrincipal,
  security: { bearer: HttpApiSecurity.bearer },
}) {}

/**
 * Resolves an `mk_` credential by the SHA-256 of its token. Credentials are issued by the makers'
 * routes; until those exist no credential resolves, so every `mk_` bearer is unknown (401).
 */
export class CredentialResolver extends Context.Reference<CredentialResolver>()("CredentialResolver", {
  defaultValue: () => ({
    resolve: (_tokenHash: Buffer): Effect.Effect<Option.Option<CredentialPrincipal>> => Effect.succeedNone,
    /**
     * Resolves and takes one token of the credential's request budget in one round trip (the HTTP
     * middleware's path). `retryAfterSeconds` null: charged; a number: the budget is exhausted.
     */
    resolveCharged: (
      _tokenHash: Buffer,
      _bucket: { readonly rate: number; readonly burst: number },
    ): Effect.Effect<
      Option.Option<{ readonly principal: CredentialPrincipal; readonly retryAfterSeconds: number | null }>
    > => Effect.succeedNone,
  }),
}) {}

/** `Authorization: Bearer <token>` with a token of URL-safe characters; anything else is malformed. */
const BEARER = /^Bearer ([A-Za-z0-9_-]{16,256})$/

const unauthorized = (why: string) => Effect.fail(new Unauthorized({ message: why }))

/** Adds Retry-After (seconds) to whatever response this request ends with. */
export const retryAfter = (seconds: number) =>
  HttpApp.appendPreResponseHandler((_req, res) =>
    Effect.succeed(HttpServerResponse.setHeader(res, "retry-after", String(seconds))),
  )

/**
 * Resolves the Authorization header to a principal. Authorization is the only header that
 * authenticates; the framework's bearer extraction does not check the scheme, so the raw header
 * is read. Expiry is judged by the Effect clock, so tests drive it with TestClock.
 */
export const authenticateHeader = (
  header: string | undefined,
  admins: ReadonlySet<string>,
  resolver: CredentialResolver["Type"] = CredentialResolver.defaultValue(),
) =>
  Effect.gen(function* () {
    if (header === undefined) return yield* unauthorized("missing bearer token")
    const match = BEARER.exec(header)
    if (!match) return yield* unauthorized("malformed Authorization header: expected Bearer <token>")
    const token = match[1]!
    const hash = sha256(token)
    if (token.startsWith("mk_")) {
      const credential = yield* resolver.resolve(hash)
      if (Option.isNone(credential)) return yield* unauthorized("unknown or revoked credential")
      return credential.value as Principal
    }
    const session = yield* findSessionByHash(hash).pipe(Effect.orDie)
    if (Option.isNone(session)) return yield* unauthorized("unknown session")
    if (session.value.revoked_at !== null) return yield* unauthorized("session revoked")
    const now = yield* Clock.currentTimeMillis
    if (session.value.expires_at.getTime() <= now) return yield* unauthorized("session expired")
    return {
      _tag: "Session",
      sessionId: session.value.id,
      master: session.value.master,
      admin: admins.has(session.value.master),
    } as Principal
  })

/**
 * What both authentication middlewares do with a bearer: a session is resolved, then charged one token of its
 * request budget; an `mk_` credential is resolved and charged in one round trip (maker bots renew leases every
 * few seconds). Unauthorized or RateLimited (with Retry-After) otherwise.
 */
export const bearerAuthenticator = Effect.gen(function* () {
  const { deployment } = yield* AppConfig
  const sql = yield* SqlClient.SqlClient
  const resolver = yield* CredentialResolver
  const admins = new Set(deployment.admins.map((a) => a.toLowerCase()))
  const { requests_per_second: rate, request_burst: burst } = deployment.limits
  const limited = (seconds: number) =>
    Effect.zipRight(
      retryAfter(seconds),
      Effect.fail(new RateLimited({ message: `request budget exhausted; retry in ${seconds} s` })),
    )
  const charge = (principal: Principal) => {
    const key = principal._tag === "Session" ? `session:${principal.sessionId}` : `credential:${principal.credentialId}`
    return takeToken({ key, rate, burst }).pipe(
      Effect.orDie,
      Effect.flatMap((decision) =>
        decision.allowed ? Effect.succeed(principal) : limited(decision.retryAfterSeconds),
      ),
    )
  }
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
    return (
      token?.startsWith("mk_") === true
        ? credential(token)
        : Effect.flatMap(authenticateHeader(header, admins, resolver), charge)
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
