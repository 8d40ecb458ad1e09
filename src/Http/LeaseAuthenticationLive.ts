import { HttpRouter, HttpServerRequest } from "@effect/platform"
import { SqlClient } from "@effect/sql"
import { Effect, Layer, Option, Schema } from "effect"
import { sha256 } from "../SecureRandom.ts"
import { renewLeaseWithCredential } from "../Store/QuoteIdentities.ts"
import { LeaseAuthentication, type LeaseCallerShape } from "./LeaseAuthentication.ts"
import { LeaseRequest } from "./MakersApi.ts"
import { bearerAuthenticator } from "./Security.ts"

const decodeId = Schema.decodeUnknownOption(Schema.UUID)
const decodeBody = Schema.decodeUnknownOption(LeaseRequest)

/**
 * A maker bot's `mk_` renewal, served in one statement (renewLeaseWithCredential: the live credential by its
 * token hash, the quote scope, the binding to the identity, one token of its request budget, the renewal).
 * It runs here, in the route's security step, and not in the handler: the framework authenticates before it
 * decodes the path and body, and the route keeps that order (an unknown bearer is 401 whatever the body; an
 * authenticated request is charged once even when its body is then refused with 400). The body was already
 * read within the limit (BodyLimit caches it) and is decoded with the route's own schema, so the framework's
 * decoding after this agrees.
 *
 * When the statement wrote nothing (the credential is unknown, revoked, out of budget, lacks the scope or is
 * bound to another identity) or the request is not a well-formed renewal, the bearer goes the way every route
 * authenticates it (bearerAuthenticator: one charge, 401/429 with Retry-After), and the handler answers the
 * rest (403, 404, 400) as for a session.
 */
export const LeaseAuthenticationLive = Layer.effect(
  LeaseAuthentication,
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const { authenticate, bearerToken, bucket } = yield* bearerAuthenticator
    const principal = (header: string | undefined) =>
      Effect.map(authenticate(header), (p): LeaseCallerShape => ({ _tag: "Principal", principal: p }))
    return LeaseAuthentication.of({
      bearer: () =>
        Effect.gen(function* () {
          const request = yield* HttpServerRequest.HttpServerRequest
          const header = request.headers.authorization
          const token = bearerToken(header)
          if (token?.startsWith("mk_") !== true) return yield* principal(header)
          const id = decodeId((yield* HttpRouter.params).id)
          const type = request.headers["content-type"]?.toLowerCase()
          const body =
            type === undefined || type.includes("application/json")
              ? Option.flatMap(yield* Effect.option(request.json), decodeBody)
              : Option.none()
          if (Option.isNone(id) || Option.isNone(body)) return yield* principal(header)
          const outcome = yield* renewLeaseWithCredential({
            tokenHash: sha256(token),
            id: id.value.toLowerCase(),
            ttlSeconds: body.value.ttl_seconds,
            bucket,
          }).pipe(Effect.provideService(SqlClient.SqlClient, sql), Effect.orDie)
          return outcome._tag === "Skipped" ? yield* principal(header) : outcome
        }),
    })
  }),
)
