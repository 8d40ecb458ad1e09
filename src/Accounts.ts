/**
 * Accounts (spec: Linked account, GET /v1/me, POST link of a venue account, DELETE /v1/accounts/{venue}): a master
 * address's account and the venue accounts linked to it, one per venue. A link proves the address: its signed
 * link message (EOAs locally, smart wallets through the venue's chain), or on the agent-approval venue that
 * venue's own approval (src/Auth/AgentApproval.ts); the master address links itself without a signature. An
 * account in use (open order, nonfinal fill, open withdrawal) is not unlinked. src/Accounts/Http.ts serves these.
 */
import { Clock, Effect, Layer, Option } from "effect"
import {
  insertLinkedAccount,
  type LinkedAccountRow,
  listLinkedAccounts,
  unlinkIfUnused,
} from "./Accounts/LinkedAccounts.ts"
import { consumeLinkChallenge, findAccount, insertLinkChallenge } from "./Accounts/Repo.ts"
import { VenueAdaptersLive } from "./Accounts/VenueAdaptersLive.ts"
import { agentKeyring, findAgentLinkChallenge, insertAgentLinkChallenge } from "./Accounts/VenueAgents.ts"
import { agentApprovalVenue, agentLink, issueAgentApproval, linkMasterWithLiveAgent } from "./Auth/AgentApproval.ts"
import { ChainClients } from "./Chain/ChainClients.ts"
import { AppConfig, siweSettings } from "./Config.ts"
import {
  AccountInUse,
  ChallengeExpired,
  ChallengeUnknown,
  ChallengeUsed,
  InvalidRequest,
  NotFound,
  StateConflict,
  VenueUnavailable,
} from "./Domain/Errors.ts"
import { buildLinkMessage } from "./Domain/LinkMessage.ts"
import { toRfc3339 } from "./Domain/Primitives.ts"
import { signatureOnlyFailure } from "./Domain/SignatureFailure.ts"
import { verifySiweSignature } from "./Domain/SiweSignature.ts"
import { randomHex, SecureRandom } from "./SecureRandom.ts"
import { bindSql } from "./Sql/Bind.ts"
import { SqlTest } from "./Sql/TestDatabase.ts"
import { VenueAdapters } from "./Venues/VenueAdapters.ts"

const LINK_TTL_MS = 10 * 60 * 1000

/** A linked account as the wire shows it (spec: Linked account). */
export const toLinkedAccount = (row: LinkedAccountRow) => ({
  venue: row.venue,
  address: row.address,
  venue_wallet: row.venue_wallet,
  expires_at: row.expires_at === null ? null : row.expires_at.toISOString(),
  linked_at: row.linked_at.toISOString(),
})

export interface LinkRequest {
  readonly venue: string
  readonly address: string
  readonly nonce?: string | undefined
  readonly signature?: string | undefined
}

export class Accounts extends Effect.Service<Accounts>()("Accounts", {
  effect: Effect.gen(function* () {
    const { deployment } = yield* AppConfig
    const clients = yield* ChainClients
    const adapters = yield* VenueAdapters
    const random = yield* SecureRandom
    const sql = yield* bindSql
    const { domain } = siweSettings(deployment)
    const ring = agentKeyring(deployment)
    const venues = new Set(deployment.venues.map((v) => v.id))
    /** Repository calls on the service's database, secrets from its SecureRandom. */
    const run = <A, E, R>(self: Effect.Effect<A, E, R>) => sql(self).pipe(Effect.provideService(SecureRandom, random))

    const knownVenue = (venue: string) =>
      venues.has(venue)
        ? Effect.void
        : Effect.fail(new NotFound({ message: `unknown venue ${venue}; see GET /v1/venues` }))

    const linkedOrConflict = (venue: string, outcome: { readonly _tag: string; readonly row?: LinkedAccountRow }) =>
      outcome._tag === "Linked" && outcome.row !== undefined
        ? Effect.succeed(toLinkedAccount(outcome.row))
        : outcome._tag === "VenueTaken"
          ? Effect.fail(new StateConflict({ message: `an account is already linked on ${venue}; unlink it first` }))
          : Effect.fail(new StateConflict({ message: "this address is linked to another account on this venue" }))

    /** The master's account (GET /v1/me less `admin`, which is the session's): a signed-in master always has one. */
    const account = Effect.fn("Accounts.account")(function* (master: string) {
      const row = yield* run(findAccount(master)).pipe(Effect.orDie)
      if (Option.isNone(row) || row.value.quote_identity_id === null) {
        return yield* Effect.dieMessage("a signed-in master has no account row")
      }
      const linked = yield* run(listLinkedAccounts(master)).pipe(Effect.orDie)
      return {
        master_address: row.value.master,
        created_at: row.value.created_at.toISOString(),
        accounts: linked.map(toLinkedAccount),
        quote_identity_id: row.value.quote_identity_id,
        access: row.value.access,
      }
    })

    /**
     * A one-use link challenge for `address` on `venue`, issued to `master` only: the generic link message (valid
     * ten minutes, personal_sign), or on the agent-approval venue its approval (typed data) instead.
     */
    const linkChallenge = Effect.fn("Accounts.linkChallenge")(function* (p: {
      readonly master: string
      readonly venue: string
      readonly address: string
    }) {
      yield* knownVenue(p.venue)
      const now = yield* Clock.currentTimeMillis
      const nonce = yield* run(randomHex(16))
      const address = p.address.toLowerCase()
      const approvalVenue = agentApprovalVenue(deployment, adapters, p.venue)
      if (Option.isSome(approvalVenue)) {
        const issued = yield* run(issueAgentApproval(approvalVenue.value, ring, address))
        yield* run(
          insertAgentLinkChallenge({
            nonce,
            master: p.master,
            venue: p.venue,
            address,
            message: issued.message,
            nowMs: now,
            expiresMs: issued.expiresMs,
            agent: { typedData: issued.typedData, agent: issued.agent, ciphertext: issued.ciphertext },
          }),
        ).pipe(Effect.orDie)
        return { nonce, message: issued.message, expires_at: toRfc3339(issued.expiresMs), typed_data: issued.typedData }
      }
      const expires = now + LINK_TTL_MS
      const message = buildLinkMessage({
        domain,
        venue: p.venue,
        address,
        master: p.master,
        nonce,
        issuedAtMs: now,
        expirationTimeMs: expires,
      })
      yield* run(
        insertLinkChallenge({
          nonce,
          master: p.master,
          venue: p.venue,
          address,
          message,
          nowMs: now,
          expiresMs: expires,
        }),
      ).pipe(Effect.orDie)
      return { nonce, message, expires_at: toRfc3339(expires) }
    })

    /**
     * Links `address` on `venue` to `master`: with the nonce and signature of its link challenge (the nonce is
     * spent whether or not the signature verifies), or without both for the master address itself (on the
     * agent-approval venue only while the service holds its live approval). One account per venue and an address
     * linked to one master per venue (STATE_CONFLICT otherwise).
     */
    const link = Effect.fn("Accounts.link")(function* (master: string, p: LinkRequest) {
      yield* knownVenue(p.venue)
      const address = p.address.toLowerCase()
      const now = yield* Clock.currentTimeMillis
      const isMaster = address === master
      const approvalVenue = agentApprovalVenue(deployment, adapters, p.venue)
      if (p.nonce === undefined || p.signature === undefined) {
        if (!isMaster || p.nonce !== undefined || p.signature !== undefined) {
          return yield* new InvalidRequest({ message: "nonce and signature are required unless address is the master" })
        }
        if (Option.isSome(approvalVenue)) {
          const linked = yield* run(linkMasterWithLiveAgent(approvalVenue.value, ring, master))
          if (Option.isNone(linked)) {
            return yield* new InvalidRequest({
              message: `${p.venue} needs its agent approval: POST /v1/accounts/challenge, sign typed_data, then link`,
            })
          }
          return yield* linkedOrConflict(p.venue, linked.value)
        }
      } else {
        const consumed = yield* run(consumeLinkChallenge(p.nonce, master, now)).pipe(Effect.orDie)
        if (consumed._tag === "Unknown")
          return yield* new ChallengeUnknown({ message: "no link challenge with this nonce" })
        if (consumed._tag === "AlreadyUsed")
          return yield* new ChallengeUsed({ message: "this link challenge was already used" })
        const challenge = consumed.challenge
        if (challenge.venue !== p.venue || challenge.address !== address) {
          return yield* new InvalidRequest({ message: "the nonce was issued for another venue or address" })
        }
        if (challenge.expires_at.getTime() <= now)
          return yield* new ChallengeExpired({ message: "the link challenge expired" })
        const agentChallenge = yield* run(findAgentLinkChallenge(p.nonce, master)).pipe(Effect.orDie)
        if (Option.isSome(agentChallenge)) {
          if (Option.isNone(approvalVenue)) {
            return yield* new VenueUnavailable({ message: `the service has no API access to ${p.venue} any more` })
          }
          const linked = yield* run(
            agentLink({
              v: approvalVenue.value,
              master,
              address,
              challenge: agentChallenge.value,
              signature: p.signature,
            }),
          )
          return yield* linkedOrConflict(p.venue, linked)
        }
        yield* verifySiweSignature({
          message: challenge.message,
          signature: p.signature as `0x${string}`,
          address: address as `0x${string}`,
          client: clients.venue(p.venue),
        }).pipe(Effect.catchAll(signatureOnlyFailure))
      }
      const outcome = yield* run(
        insertLinkedAccount({ master, venue: p.venue, address, venueWallet: null, expiresMs: null, nowMs: now }),
      ).pipe(Effect.orDie)
      if (outcome._tag === "VenueTaken") {
        return yield* new StateConflict({ message: `an account is already linked on ${p.venue}; unlink it first` })
      }
      if (outcome._tag === "AddressTaken") {
        return yield* new StateConflict({ message: "this address is linked to another account on this venue" })
      }
      return toLinkedAccount(outcome.row)
    })

    /** Unlinks the master's account on `venue` unless an open order, a nonfinal fill or an open withdrawal uses it. */
    const unlink = Effect.fn("Accounts.unlink")(function* (master: string, venue: string) {
      const now = yield* Clock.currentTimeMillis
      const outcome = yield* run(unlinkIfUnused(master, venue, now)).pipe(Effect.orDie)
      if (outcome._tag === "NotLinked") return yield* new NotFound({ message: `no account linked on ${venue}` })
      if (outcome._tag === "InUse") {
        return yield* new AccountInUse({ message: `the account is in use by an open ${outcome.use}` })
      }
      return toLinkedAccount(outcome.row)
    })

    return { account, linkChallenge, link, unlink } as const
  }),
  dependencies: [VenueAdaptersLive],
}) {
  /**
   * The service on a throw-away database (SqlTest); the test gives the AppConfig, ChainClients (smart-wallet link
   * signatures), SecureRandom and VenueAdapters (the agent-approval venue).
   */
  static readonly Test = Accounts.DefaultWithoutDependencies.pipe(Layer.provideMerge(SqlTest))
}
