import { HttpApiBuilder } from "@effect/platform"
import { Clock, Effect, Option } from "effect"
import { agentApprovalVenue, agentLink, issueAgentApproval, linkMasterWithLiveAgent } from "../Auth/AgentApproval.ts"
import { consumeLinkChallenge, insertLinkChallenge } from "../Auth/Challenges.ts"
import { revokeSession } from "../Auth/Sessions.ts"
import { ChainClients } from "../Chain/ChainClients.ts"
import { AppConfig, siweSettings } from "../Config.ts"
import {
  AccountInUse,
  ChallengeExpired,
  ChallengeUnknown,
  ChallengeUsed,
  InvalidRequest,
  NotFound,
  StateConflict,
  VenueUnavailable,
} from "../Domain/Errors.ts"
import { buildLinkMessage } from "../Domain/LinkMessage.ts"
import { toRfc3339 } from "../Domain/Primitives.ts"
import { signatureOnlyFailure } from "../Domain/SignatureFailure.ts"
import { verifySiweSignature } from "../Domain/Siwe.ts"
import { Api } from "../Http/Api.ts"
import { requireAdmin, requireSession } from "../Http/Guards.ts"
import { randomHex } from "../SecureRandom.ts"
import { snapshotCursor } from "../Stream/SnapshotCursor.ts"
import { VenueAdapters } from "../Venues/VenueAdapters.ts"
import { insertLinkedAccount, type LinkedAccountRow, listLinkedAccounts, unlinkIfUnused } from "./LinkedAccounts.ts"
import { findAccount, setAccess } from "./Repo.ts"
import { agentKeyring, findAgentLinkChallenge, insertAgentLinkChallenge } from "./VenueAgents.ts"

const LINK_TTL_MS = 10 * 60 * 1000

export const toLinkedAccount = (row: LinkedAccountRow) => ({
  venue: row.venue,
  address: row.address,
  venue_wallet: row.venue_wallet,
  expires_at: row.expires_at === null ? null : row.expires_at.toISOString(),
  linked_at: row.linked_at.toISOString(),
})

export const AccountHandlers = HttpApiBuilder.group(Api, "account", (handlers) =>
  Effect.gen(function* () {
    const { deployment } = yield* AppConfig
    const clients = yield* ChainClients
    const { domain } = siweSettings(deployment)
    const venues = new Set(deployment.venues.map((v) => v.id))
    const knownVenue = (venue: string) =>
      venues.has(venue)
        ? Effect.void
        : Effect.fail(new NotFound({ message: `unknown venue ${venue}; see GET /v1/venues` }))
    const adapters = yield* VenueAdapters
    const ring = agentKeyring(deployment)
    const linkedOrConflict = (venue: string, outcome: { readonly _tag: string; readonly row?: LinkedAccountRow }) =>
      outcome._tag === "Linked" && outcome.row !== undefined
        ? Effect.succeed(toLinkedAccount(outcome.row))
        : outcome._tag === "VenueTaken"
          ? Effect.fail(new StateConflict({ message: `an account is already linked on ${venue}; unlink it first` }))
          : Effect.fail(new StateConflict({ message: "this address is linked to another account on this venue" }))
    return handlers
      .handle("me", () =>
        Effect.gen(function* () {
          const session = yield* requireSession
          yield* snapshotCursor
          const account = yield* findAccount(session.master).pipe(Effect.orDie)
          if (Option.isNone(account) || account.value.quote_identity_id === null) {
            return yield* Effect.dieMessage("a signed-in master has no account row")
          }
          const linked = yield* listLinkedAccounts(session.master).pipe(Effect.orDie)
          return {
            master_address: account.value.master,
            created_at: account.value.created_at.toISOString(),
            accounts: linked.map(toLinkedAccount),
            quote_identity_id: account.value.quote_identity_id,
            access: account.value.access,
            admin: session.admin,
          }
        }),
      )
      .handle("logout", () =>
        Effect.gen(function* () {
          const session = yield* requireSession
          yield* revokeSession(session.sessionId, yield* Clock.currentTimeMillis).pipe(Effect.orDie)
        }),
      )
      .handle("linkChallenge", ({ payload }) =>
        Effect.gen(function* () {
          const session = yield* requireSession
          yield* knownVenue(payload.venue)
          const now = yield* Clock.currentTimeMillis
          const nonce = yield* randomHex(16)
          const address = payload.address.toLowerCase()
          // A venue that needs its own proof links with its agent approval instead of the generic message.
          const approvalVenue = agentApprovalVenue(deployment, adapters, payload.venue)
          if (Option.isSome(approvalVenue)) {
            const issued = yield* issueAgentApproval(approvalVenue.value, ring, address)
            yield* insertAgentLinkChallenge({
              nonce,
              master: session.master,
              venue: payload.venue,
              address,
              message: issued.message,
              nowMs: now,
              expiresMs: issued.expiresMs,
              agent: { typedData: issued.typedData, agent: issued.agent, ciphertext: issued.ciphertext },
            }).pipe(Effect.orDie)
            return {
              nonce,
              message: issued.message,
              expires_at: toRfc3339(issued.expiresMs),
              typed_data: issued.typedData,
            }
          }
          const expires = now + LINK_TTL_MS
          const message = buildLinkMessage({
            domain,
            venue: payload.venue,
            address,
            master: session.master,
            nonce,
            issuedAtMs: now,
            expirationTimeMs: expires,
          })
          yield* insertLinkChallenge({
            nonce,
            master: session.master,
            venue: payload.venue,
            address,
            message,
            nowMs: now,
            expiresMs: expires,
          }).pipe(Effect.orDie)
          return { nonce, message, expires_at: toRfc3339(expires) }
        }),
      )
      .handle("link", ({ payload }) =>
        Effect.gen(function* () {
          const session = yield* requireSession
          yield* knownVenue(payload.venue)
          const address = payload.address.toLowerCase()
          const now = yield* Clock.currentTimeMillis
          const isMaster = address === session.master
          const approvalVenue = agentApprovalVenue(deployment, adapters, payload.venue)
          if (payload.nonce === undefined || payload.signature === undefined) {
            if (!isMaster || payload.nonce !== undefined || payload.signature !== undefined) {
              return yield* new InvalidRequest({
                message: "nonce and signature are required unless address is the master",
              })
            }
            if (Option.isSome(approvalVenue)) {
              const linked = yield* linkMasterWithLiveAgent(approvalVenue.value, ring, session.master)
              if (Option.isNone(linked)) {
                return yield* new InvalidRequest({
                  message: `${payload.venue} needs its agent approval: POST /v1/accounts/challenge, sign typed_data, then link`,
                })
              }
              return yield* linkedOrConflict(payload.venue, linked.value)
            }
          } else {
            const consumed = yield* consumeLinkChallenge(payload.nonce, session.master, now).pipe(Effect.orDie)
            if (consumed._tag === "Unknown")
              return yield* new ChallengeUnknown({ message: "no link challenge with this nonce" })
            if (consumed._tag === "AlreadyUsed")
              return yield* new ChallengeUsed({ message: "this link challenge was already used" })
            const challenge = consumed.challenge
            if (challenge.venue !== payload.venue || challenge.address !== address) {
              return yield* new InvalidRequest({ message: "the nonce was issued for another venue or address" })
            }
            if (challenge.expires_at.getTime() <= now)
              return yield* new ChallengeExpired({ message: "the link challenge expired" })
            const agentChallenge = yield* findAgentLinkChallenge(payload.nonce, session.master).pipe(Effect.orDie)
            if (Option.isSome(agentChallenge)) {
              if (Option.isNone(approvalVenue)) {
                return yield* new VenueUnavailable({
                  message: `the service has no API access to ${payload.venue} any more`,
                })
              }
              const linked = yield* agentLink({
                v: approvalVenue.value,
                master: session.master,
                address,
                challenge: agentChallenge.value,
                signature: payload.signature,
              })
              return yield* linkedOrConflict(payload.venue, linked)
            }
            yield* verifySiweSignature({
              message: challenge.message,
              signature: payload.signature as `0x${string}`,
              address: address as `0x${string}`,
              client: clients.venue(payload.venue),
            }).pipe(Effect.catchAll(signatureOnlyFailure))
          }
          const outcome = yield* insertLinkedAccount({
            master: session.master,
            venue: payload.venue,
            address,
            venueWallet: null,
            expiresMs: null,
            nowMs: now,
          }).pipe(Effect.orDie)
          if (outcome._tag === "VenueTaken") {
            return yield* new StateConflict({
              message: `an account is already linked on ${payload.venue}; unlink it first`,
            })
          }
          if (outcome._tag === "AddressTaken") {
            return yield* new StateConflict({ message: "this address is linked to another account on this venue" })
          }
          return toLinkedAccount(outcome.row)
        }),
      )
      .handle("unlink", ({ path }) =>
        Effect.gen(function* () {
          const session = yield* requireSession
          const outcome = yield* unlinkIfUnused(session.master, path.venue).pipe(Effect.orDie)
          if (outcome._tag === "NotLinked")
            return yield* new NotFound({ message: `no account linked on ${path.venue}` })
          if (outcome._tag === "InUse") {
            return yield* new AccountInUse({ message: `the account is in use by an open ${outcome.use}` })
          }
          return toLinkedAccount(outcome.row)
        }),
      )
  }),
)

export const AdminHandlers = HttpApiBuilder.group(Api, "admin", (handlers) =>
  handlers.handle("setAccess", ({ path, payload }) =>
    Effect.gen(function* () {
      const admin = yield* requireAdmin
      const master = path.address.toLowerCase()
      yield* setAccess({
        master,
        access: payload.access,
        nowMs: yield* Clock.currentTimeMillis,
        by: admin.master,
      }).pipe(Effect.orDie)
      return { master_address: master, access: payload.access }
    }),
  ),
)
