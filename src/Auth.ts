/**
 * Auth (spec: Authentication): sign-in with a SIWE message (EOAs, ERC-1271 and ERC-6492 wallets through the auth
 * chain) or, on the agent-approval venue, with that venue's own approval (src/Auth/AgentApproval.ts); the master
 * session it opens (`st_…`, shown once, stored as its SHA-256); logout. Bearer tokens resolve to principals in
 * src/Auth/Bearer.ts. src/Auth/Http.ts charges the challenge budgets and serves these.
 */
import { Clock, Effect, Layer, Option } from "effect"
import { getAddress } from "viem"
import { initialAccess } from "./Access.ts"
import { ensureAccount } from "./Accounts/Repo.ts"
import { VenueAdaptersLive } from "./Accounts/VenueAdaptersLive.ts"
import { agentKeyring, findAgentSignInChallenge, insertAgentSignInChallenge } from "./Accounts/VenueAgents.ts"
import { agentApprovalVenue, agentSignIn, issueAgentApproval } from "./Auth/AgentApproval.ts"
import { consumeSiweChallenge, insertSession, insertSiweChallenge, revokeSession } from "./Auth/Repo.ts"
import { ChainClients } from "./Chain/ChainClients.ts"
import { AppConfig, siweSettings } from "./Config.ts"
import { ChallengeExpired, ChallengeUnknown, ChallengeUsed, NotFound, VenueUnavailable } from "./Domain/Errors.ts"
import { toRfc3339 } from "./Domain/Primitives.ts"
import { signatureFailure } from "./Domain/SignatureFailure.ts"
import { buildSiweMessage, verifySiwe } from "./Domain/Siwe.ts"
import { checkSignatureShape } from "./Domain/SiweSignature.ts"
import { randomBase64Url, randomHex, randomUuid, SecureRandom, sha256 } from "./SecureRandom.ts"
import { bindSql } from "./Sql/Bind.ts"
import { takeTokens } from "./Sql/RateLimiter.ts"
import { SqlTest } from "./Sql/TestDatabase.ts"
import { VenueAdapters } from "./Venues/VenueAdapters.ts"

const CHALLENGE_TTL_MS = 10 * 60 * 1000

export class Auth extends Effect.Service<Auth>()("Auth", {
  effect: Effect.gen(function* () {
    const { deployment } = yield* AppConfig
    const siwe = siweSettings(deployment)
    const clients = yield* ChainClients
    const adapters = yield* VenueAdapters
    const random = yield* SecureRandom
    const sql = yield* bindSql
    const ring = agentKeyring(deployment)
    const access = initialAccess(deployment)
    /** Repository calls on the service's database, secrets from its SecureRandom. */
    const run = <A, E, R>(self: Effect.Effect<A, E, R>) => sql(self).pipe(Effect.provideService(SecureRandom, random))
    const { limits } = deployment

    /**
     * The challenge route's budgets, taken in this order, one statement each (the first refusal wins): the client's
     * (`limits.client_challenge_burst`, `limits.client_challenges_per_minute`; `client` is its key, see
     * src/Http/ClientIdentity.ts), then the spec's per address (burst 6, 6 per minute) and global (60/s, burst
     * 120). The client's comes first so that a client flooding from random addresses is refused by its own budget
     * before it spends the global one. A refusal answers how long to wait (the route's RATE_LIMITED, Retry-After).
     */
    const admitChallenge = Effect.fn("Auth.admitChallenge")(function* (client: string, address: string) {
      return yield* run(
        takeTokens([
          {
            key: `challenge:client:${client}`,
            rate: limits.client_challenges_per_minute / 60,
            burst: limits.client_challenge_burst,
          },
          { key: `challenge:address:${address.toLowerCase()}`, rate: 6 / 60, burst: 6 },
          { key: "challenge:global", rate: 60, burst: 120 },
        ]),
      ).pipe(Effect.orDie)
    })

    /**
     * A one-use sign-in challenge for `address`: a SIWE message valid ten minutes; with `venue` naming the
     * agent-approval venue, that venue's approval to sign instead (spec auth/challenge rule 3), valid while its
     * nonce is fresh. Another known venue signs in with SIWE, except an Aster venue without API access.
     */
    const challenge = Effect.fn("Auth.challenge")(function* (p: {
      readonly address: string
      readonly venue?: string | undefined
    }) {
      const address = p.address.toLowerCase()
      if (p.venue !== undefined) {
        const venueId = p.venue
        const venue = deployment.venues.find((v) => v.id === venueId)
        if (venue === undefined) return yield* new NotFound({ message: `unknown venue ${venueId}; see GET /v1/venues` })
        const approvalVenue = agentApprovalVenue(deployment, adapters, venueId)
        if (Option.isSome(approvalVenue)) {
          const issued = yield* run(issueAgentApproval(approvalVenue.value, ring, address))
          const nonce = yield* run(randomHex(16))
          yield* run(
            insertAgentSignInChallenge({
              nonce,
              address,
              venue: venueId,
              message: issued.message,
              nowMs: yield* Clock.currentTimeMillis,
              expiresMs: issued.expiresMs,
              agent: { typedData: issued.typedData, agent: issued.agent, ciphertext: issued.ciphertext },
            }),
          ).pipe(Effect.orDie)
          return {
            message: issued.message,
            nonce,
            expires_at: toRfc3339(issued.expiresMs),
            typed_data: issued.typedData,
          }
        }
        if (venue.kind === "aster") {
          return yield* new VenueUnavailable({ message: `the service has no API access to ${venueId} for its sign-in` })
        }
      }
      const now = yield* Clock.currentTimeMillis
      const nonce = yield* run(randomHex(16))
      const expires = now + CHALLENGE_TTL_MS
      const message = buildSiweMessage({
        domain: siwe.domain,
        uri: siwe.uri,
        chainId: siwe.chainId,
        address: getAddress(address),
        nonce,
        issuedAtMs: now,
        expirationTimeMs: expires,
        statement: siwe.statement,
      })
      yield* run(insertSiweChallenge({ nonce, address, message, nowMs: now, expiresMs: expires })).pipe(Effect.orDie)
      return { message, nonce, expires_at: toRfc3339(expires) }
    })

    /**
     * Consumes the challenge (one use, spent whether or not the signature then verifies; a malformed or high-s
     * signature is refused first without spending it) and opens a master session. The first sign-in creates the
     * account (access per the deployment's mode) and its browser quote identity. An agent-approval challenge is
     * registered with the venue first and links the venue account (src/Auth/AgentApproval.ts agentSignIn).
     */
    const verify = Effect.fn("Auth.verify")(function* (p: { readonly nonce: string; readonly signature: string }) {
      yield* checkSignatureShape(p.signature).pipe(Effect.catchAll(signatureFailure))
      const now = yield* Clock.currentTimeMillis
      const consumed = yield* run(consumeSiweChallenge(p.nonce, now)).pipe(Effect.orDie)
      if (consumed._tag === "Unknown") return yield* new ChallengeUnknown({ message: "no challenge with this nonce" })
      if (consumed._tag === "AlreadyUsed")
        return yield* new ChallengeUsed({ message: "this challenge was already used" })
      const challenge = consumed.challenge
      if (challenge.expires_at.getTime() <= now)
        return yield* new ChallengeExpired({ message: "the challenge expired" })
      const agentChallenge = yield* run(findAgentSignInChallenge(p.nonce)).pipe(Effect.orDie)
      if (Option.isSome(agentChallenge)) {
        return yield* run(
          agentSignIn({
            deployment,
            adapters,
            challenge: { ...agentChallenge.value, address: challenge.address },
            signature: p.signature,
            initialAccess: access,
            sessionMs: siwe.sessionMs,
          }),
        )
      }
      yield* verifySiwe({
        message: challenge.message,
        signature: p.signature,
        expect: {
          domain: siwe.domain,
          uri: siwe.uri,
          chainId: siwe.chainId,
          address: challenge.address,
          nonce: p.nonce,
          nowMs: now,
        },
        client: clients.auth,
      }).pipe(Effect.catchAll(signatureFailure))
      const master = challenge.address
      yield* run(ensureAccount({ master, access, identityId: yield* run(randomUuid), nowMs: now })).pipe(Effect.orDie)
      // The token is shown once; only its SHA-256 is stored.
      const token = `st_${yield* run(randomBase64Url(32))}`
      const expires = now + siwe.sessionMs
      yield* run(
        insertSession({ id: yield* run(randomUuid), tokenHash: sha256(token), master, nowMs: now, expiresMs: expires }),
      ).pipe(Effect.orDie)
      return { token, expires_at: toRfc3339(expires), master_address: master }
    })

    /** Revokes the session (POST /v1/auth/logout); a revoked one stays revoked. */
    const logout = Effect.fn("Auth.logout")(function* (sessionId: string) {
      yield* run(revokeSession(sessionId, yield* Clock.currentTimeMillis)).pipe(Effect.orDie)
    })

    return { admitChallenge, challenge, verify, logout } as const
  }),
  dependencies: [VenueAdaptersLive],
}) {
  /**
   * The service on a throw-away database (SqlTest); the test gives the AppConfig, ChainClients (the auth chain, for
   * smart wallets), SecureRandom and VenueAdapters (the agent-approval venue).
   */
  static readonly Test = Auth.DefaultWithoutDependencies.pipe(Layer.provideMerge(SqlTest))
}
