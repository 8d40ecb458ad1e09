import { HttpApiBuilder, HttpServerRequest } from "@effect/platform"
import { Clock, Effect, Option } from "effect"
import { getAddress } from "viem"
import { ensureAccount } from "../Accounts/Repo.ts"
import { agentKeyring, findAgentSignInChallenge, insertAgentSignInChallenge } from "../Accounts/VenueAgents.ts"
import { ChainClients } from "../Chain/ChainClients.ts"
import { AppConfig, type Limits, siweSettings } from "../Config.ts"
import {
  ChallengeExpired,
  ChallengeUnknown,
  ChallengeUsed,
  NotFound,
  RateLimited,
  VenueUnavailable,
} from "../Domain/Errors.ts"
import { toRfc3339 } from "../Domain/Primitives.ts"
import { signatureFailure } from "../Domain/SignatureFailure.ts"
import { buildSiweMessage, checkSignatureShape, verifySiwe } from "../Domain/Siwe.ts"
import { Api } from "../Http/Api.ts"
import { ClientIdentity } from "../Http/ClientIdentity.ts"
import { retryAfter } from "../Http/Security.ts"
import { randomBase64Url, randomHex, randomUuid, sha256 } from "../SecureRandom.ts"
import { takeTokens } from "../Sql/RateLimiter.ts"
import { VenueAdapters } from "../Venues/VenueAdapters.ts"
import { agentApprovalVenue, agentSignIn, issueAgentApproval } from "./AgentApproval.ts"
import { consumeSiweChallenge, insertSiweChallenge } from "./Challenges.ts"
import { insertSession } from "./Sessions.ts"

const CHALLENGE_TTL_MS = 10 * 60 * 1000

/**
 * The challenge route's budgets, taken in this order (the first refusal wins): the client's
 * (`limits.client_challenge_burst`, `limits.client_challenges_per_minute`), then the spec's per
 * address (burst 6, 6 per minute) and global (60/s, burst 120). The client's comes first so that a
 * client flooding from random addresses is refused by its own budget before it spends the global one.
 */
const challengeBuckets = (client: string, address: string, limits: Limits) => [
  {
    key: `challenge:client:${client}`,
    rate: limits.client_challenges_per_minute / 60,
    burst: limits.client_challenge_burst,
  },
  { key: `challenge:address:${address}`, rate: 6 / 60, burst: 6 },
  { key: "challenge:global", rate: 60, burst: 120 },
]

export const AuthHandlers = HttpApiBuilder.group(Api, "auth", (handlers) =>
  Effect.gen(function* () {
    const { deployment } = yield* AppConfig
    const siwe = siweSettings(deployment)
    const clients = yield* ChainClients
    const initialAccess = deployment.access.mode === "open" ? "granted" : "required"
    const adapters = yield* VenueAdapters
    const ring = agentKeyring(deployment)
    const identity = yield* ClientIdentity
    return handlers
      .handle("challenge", ({ payload }) =>
        Effect.gen(function* () {
          const address = payload.address.toLowerCase()
          const client = identity.of(yield* HttpServerRequest.HttpServerRequest)
          const decision = yield* takeTokens(challengeBuckets(client.key, address, deployment.limits)).pipe(
            Effect.orDie,
          )
          if (!decision.allowed) {
            yield* retryAfter(decision.retryAfterSeconds)
            return yield* new RateLimited({ message: `too many challenges; retry in ${decision.retryAfterSeconds} s` })
          }
          if (payload.venue !== undefined) {
            // The agent-approval venue signs in with its own proof (spec auth/challenge rule 3).
            const venueId = payload.venue
            const venue = deployment.venues.find((v) => v.id === venueId)
            if (venue === undefined)
              return yield* new NotFound({ message: `unknown venue ${venueId}; see GET /v1/venues` })
            const approvalVenue = agentApprovalVenue(deployment, adapters, venueId)
            if (Option.isSome(approvalVenue)) {
              const issued = yield* issueAgentApproval(approvalVenue.value, ring, address)
              const agentNonce = yield* randomHex(16)
              yield* insertAgentSignInChallenge({
                nonce: agentNonce,
                address,
                venue: venueId,
                message: issued.message,
                nowMs: yield* Clock.currentTimeMillis,
                expiresMs: issued.expiresMs,
                agent: { typedData: issued.typedData, agent: issued.agent, ciphertext: issued.ciphertext },
              }).pipe(Effect.orDie)
              return {
                message: issued.message,
                nonce: agentNonce,
                expires_at: toRfc3339(issued.expiresMs),
                typed_data: issued.typedData,
              }
            }
            if (venue.kind === "aster") {
              return yield* new VenueUnavailable({
                message: `the service has no API access to ${venueId} for its sign-in`,
              })
            }
          }
          const now = yield* Clock.currentTimeMillis
          const nonce = yield* randomHex(16)
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
          yield* insertSiweChallenge({ nonce, address, message, nowMs: now, expiresMs: expires }).pipe(Effect.orDie)
          return { message, nonce, expires_at: toRfc3339(expires) }
        }),
      )
      .handle("verify", ({ payload }) =>
        Effect.gen(function* () {
          // Shape first: a malformed or high-s signature is refused without spending the nonce.
          yield* checkSignatureShape(payload.signature).pipe(Effect.catchAll(signatureFailure))
          const now = yield* Clock.currentTimeMillis
          const consumed = yield* consumeSiweChallenge(payload.nonce, now).pipe(Effect.orDie)
          if (consumed._tag === "Unknown")
            return yield* new ChallengeUnknown({ message: "no challenge with this nonce" })
          if (consumed._tag === "AlreadyUsed")
            return yield* new ChallengeUsed({ message: "this challenge was already used" })
          const challenge = consumed.challenge
          if (challenge.expires_at.getTime() <= now)
            return yield* new ChallengeExpired({ message: "the challenge expired" })
          const agentChallenge = yield* findAgentSignInChallenge(payload.nonce).pipe(Effect.orDie)
          if (Option.isSome(agentChallenge)) {
            return yield* agentSignIn({
              deployment,
              adapters,
              challenge: { ...agentChallenge.value, address: challenge.address },
              signature: payload.signature,
              initialAccess,
              sessionMs: siwe.sessionMs,
            })
          }
          yield* verifySiwe({
            message: challenge.message,
            signature: payload.signature,
            expect: {
              domain: siwe.domain,
              uri: siwe.uri,
              chainId: siwe.chainId,
              address: challenge.address,
              nonce: payload.nonce,
              nowMs: now,
            },
            client: clients.auth,
          }).pipe(Effect.catchAll(signatureFailure))
          const master = challenge.address
          yield* ensureAccount({ master, access: initialAccess, identityId: yield* randomUuid, nowMs: now }).pipe(
            Effect.orDie,
          )
          // The token is shown once; only its SHA-256 is stored.
          const token = `st_${yield* randomBase64Url(32)}`
          const expires = now + siwe.sessionMs
          yield* insertSession({
            id: yield* randomUuid,
            tokenHash: sha256(token),
            master,
            nowMs: now,
            expiresMs: expires,
          }).pipe(Effect.orDie)
          return { token, expires_at: toRfc3339(expires), master_address: master }
        }),
      )
  }),
)
