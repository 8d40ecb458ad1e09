/**
 * Bearer tokens to principals (spec Authentication 2, 5): a master session by the SHA-256 of its token, an `mk_`
 * credential through the CredentialResolver (src/Credentials/Resolver.ts). The HTTP middleware (src/Http/Security.ts)
 * and the stream's subscription token (src/Http/StreamRoute.ts) both resolve through here.
 */
import { Clock, Context, Effect, Option } from "effect"
import { Unauthorized } from "../Domain/Errors.ts"
import type { CredentialPrincipal, Principal, SessionPrincipal } from "../Domain/Principal.ts"
import { sha256 } from "../SecureRandom.ts"
import { findSessionByHash, type SessionRow } from "./Repo.ts"

/**
 * Resolves an `mk_` credential by the SHA-256 of its token (CredentialResolverLive, src/Credentials/Resolver.ts,
 * over the credentials the /v1/credentials routes issue). The default resolves none, so without it every `mk_`
 * bearer is unknown (401).
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
export const BEARER = /^Bearer ([A-Za-z0-9_-]{16,256})$/

const unauthorized = (why: string) => Effect.fail(new Unauthorized({ message: why }))

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
    return yield* sessionPrincipal(session, yield* Clock.currentTimeMillis, admins)
  })

/** A session's row (none: an unknown token) to its principal at `now` (ms), or why it is refused. */
export const sessionPrincipal = (
  session: Option.Option<SessionRow>,
  now: number,
  admins: ReadonlySet<string>,
): Effect.Effect<SessionPrincipal, Unauthorized> => {
  if (Option.isNone(session)) return unauthorized("unknown session")
  if (session.value.revoked_at !== null) return unauthorized("session revoked")
  if (session.value.expires_at.getTime() <= now) return unauthorized("session expired")
  return Effect.succeed({
    _tag: "Session",
    sessionId: session.value.id,
    master: session.value.master,
    admin: admins.has(session.value.master),
  })
}
