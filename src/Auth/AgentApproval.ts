/**
 * The agent-approval venue's own proof (spec auth/challenge rule 3; DESIGN §7 Aster): instead of a SIWE or
 * generic link message, the account signs the venue's agent approval (`Message{msg}` typed data naming this
 * service's agent for the account, every permission false, 365 days). Used by sign-in (`POST /v1/auth/challenge`
 * with `venue`, then verify) and by linking (`POST /v1/accounts/challenge`, then `POST /v1/accounts`).
 *
 * Issue: the account's agent (its existing key, or a new one from SecureRandom, sealed at once) and the venue's
 * typed data with a fresh microsecond nonce; the challenge row keeps both, and expires when the venue's nonce
 * window closes. Confirm: the signature is 65 bytes, low s, by the account over exactly the stored typed data;
 * the nonce is still fresh; no link conflict; then the approval is registered with the venue, and only an
 * acknowledgement lets the caller save the agent and link the account with the approval's expiry.
 */
import { SqlClient } from "@effect/sql"
import { Clock, Effect, Option } from "effect"
import type { Address } from "viem"
import { ensureAccount } from "../Accounts/Repo.ts"
import {
  type AgentKeyring,
  findVenueAgent,
  generateAgentKey,
  linkConflict,
  linkWithAgentApproval,
  openAgentKey,
  saveApprovedAgent,
} from "../Accounts/VenueAgents.ts"
import type { DeploymentConfig, VenueConfig } from "../Config.ts"
import { ChallengeExpired, SignatureInvalid, StateConflict, VenueRefused, VenueUnavailable } from "../Domain/Errors.ts"
import { toRfc3339 } from "../Domain/Primitives.ts"
import { eoaSignature } from "../Domain/SignatureFailure.ts"
import { type TypedDataObject, typedDataDigest } from "../Domain/TypedData.ts"
import { recoverDigestSigner } from "../Domain/WithdrawalTypedData.ts"
import { randomBase64Url, randomUuid, sha256 } from "../SecureRandom.ts"
import type { AgentApproval, VenueAdapter } from "../Venues/VenueAdapter.ts"
import type { VenueAdaptersShape } from "../Venues/VenueAdapters.ts"
import { insertSession } from "./Repo.ts"

export interface AgentApprovalVenue {
  readonly venue: VenueConfig
  readonly approval: AgentApproval
  readonly adapter: VenueAdapter
}

/** The venue, when it is one that needs its own proof (an adapter with agent approvals). */
export const agentApprovalVenue = (
  deployment: DeploymentConfig,
  adapters: VenueAdaptersShape,
  venueId: string,
): Option.Option<AgentApprovalVenue> => {
  const venue = deployment.venues.find((v) => v.id === venueId)
  const adapter = adapters.get(venueId)
  return venue !== undefined && adapter?.agentApproval !== undefined
    ? Option.some({ venue, approval: adapter.agentApproval, adapter })
    : Option.none()
}

export interface IssuedApproval {
  readonly typedData: TypedDataObject
  /** The approval body (`msg`): what the challenge answers as `message`. */
  readonly message: string
  readonly agent: string
  readonly ciphertext: Buffer
  /** The challenge's end: the venue's nonce window after the nonce. */
  readonly expiresMs: number
}

/** The agent approval `user` signs now: the account's agent (reused, else a new sealed key) and fresh typed data. */
export const issueAgentApproval = (v: AgentApprovalVenue, ring: AgentKeyring, user: string) =>
  Effect.gen(function* () {
    const address = user.toLowerCase()
    const existing = yield* findVenueAgent(v.venue.id, address).pipe(Effect.orDie)
    const reusable = Option.filter(
      existing,
      (row) => openAgentKey(ring, v.venue.id, address, row.agent_address, row.key_ciphertext) !== undefined,
    )
    const agent = Option.isSome(reusable)
      ? { agent: reusable.value.agent_address, ciphertext: reusable.value.key_ciphertext }
      : yield* generateAgentKey(ring, v.venue.id, address)
    const now = yield* Clock.currentTimeMillis
    const prepared = yield* v.approval
      .agentApprovalTypedData({ user: address as Address, agent: agent.agent as Address, nowMicros: now * 1000 })
      .pipe(Effect.orDie)
    return {
      typedData: prepared.typedData,
      message: prepared.message,
      agent: agent.agent,
      ciphertext: agent.ciphertext,
      expiresMs: now + v.venue.venue_api.agent_approval_window_ms,
    } satisfies IssuedApproval
  })

/** What a verified, venue-acknowledged approval lets the caller record. */
export interface ConfirmedApproval {
  readonly agent: string
  readonly ciphertext: Buffer
  /** The agent's expiry at the venue (the link's `expires_at`). */
  readonly expiresMs: number
}

/**
 * Checks the signature over the stored approval, the nonce's freshness and link conflicts for `master`, then
 * registers the approval with the venue. Nothing is written here.
 */
export const confirmAgentApproval = (p: {
  readonly v: AgentApprovalVenue
  readonly master: string
  readonly user: string
  readonly typedData: unknown
  readonly agent: string
  readonly ciphertext: Buffer
  readonly signature: string
}) =>
  Effect.gen(function* () {
    const signature = yield* eoaSignature(
      p.signature,
      "the venue accepts only an EOA's 65-byte signature of its approval",
    )
    const typedData = p.typedData as TypedDataObject
    const signer = yield* recoverDigestSigner(typedDataDigest(typedData), signature)
    if (signer !== p.user.toLowerCase()) {
      return yield* new SignatureInvalid({ message: `the approval must be signed by ${p.user.toLowerCase()}` })
    }
    const msg = String(typedData.message.msg ?? "")
    const nonceMicros = Number(/(?:^|&)nonce=([0-9]+)(?:&|$)/.exec(msg)?.[1] ?? "0")
    const expiresMs = Number(/(?:^|&)expired=([0-9]+)(?:&|$)/.exec(msg)?.[1] ?? "0")
    const now = yield* Clock.currentTimeMillis
    if (now - Math.floor(nonceMicros / 1000) > p.v.venue.venue_api.agent_approval_window_ms) {
      return yield* new ChallengeExpired({
        message: "the approval is older than the venue's nonce window; ask again and sign at once",
      })
    }
    const conflict = yield* linkConflict(p.master, p.v.venue.id, p.user).pipe(Effect.orDie)
    if (Option.isSome(conflict)) {
      return yield* new StateConflict({
        message:
          conflict.value === "VenueTaken"
            ? `another account is already linked on ${p.v.venue.id}; unlink it first`
            : `this address is linked to another account on ${p.v.venue.id}`,
      })
    }
    const outcome = yield* p.v.approval
      .registerAgent({ address: p.user.toLowerCase() as Address, typedData, signature })
      .pipe(Effect.orDie)
    switch (outcome._tag) {
      case "Acknowledged":
        return { agent: p.agent, ciphertext: p.ciphertext, expiresMs } satisfies ConfirmedApproval
      // What the venue or the transport said (hosts, a 5xx page) goes to the operator's log, not to the client.
      case "Unknown":
        yield* Effect.logWarning("agent approval not confirmed by the venue", { reason: outcome.reason })
        return yield* new VenueUnavailable({
          message: "the venue did not confirm the approval; ask for a new challenge and sign again",
          retryable: true,
        })
      case "Refused":
        if (!outcome.sent) {
          yield* Effect.logWarning("agent approval not sent: the venue could not be reached", { error: outcome.error })
          return yield* new VenueUnavailable({ message: "the venue could not be reached; retry", retryable: true })
        }
        if (outcome.code === "-4225") {
          return yield* new ChallengeExpired({
            message: `the venue refused a stale approval (${outcome.error}); sign a new one`,
          })
        }
        if (outcome.code === "-1022")
          return yield* new SignatureInvalid({ message: `the venue refused the signature: ${outcome.error}` })
        return yield* new VenueRefused({
          message: `the venue refused the approval (${outcome.code}): ${outcome.error}`,
        })
    }
  })

/**
 * Sign-in through the agent approval: confirm it with the venue, then in one transaction save the agent, link the
 * venue account to the master (the signer) with the approval's expiry, and open the session.
 */
export const agentSignIn = (p: {
  readonly deployment: DeploymentConfig
  readonly adapters: VenueAdaptersShape
  readonly challenge: {
    readonly venue: string | null
    readonly address: string
    readonly typedData: unknown
    readonly agent: string
    readonly ciphertext: Buffer
  }
  readonly signature: string
  readonly initialAccess: "granted" | "required"
  readonly sessionMs: number
}) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const v = agentApprovalVenue(p.deployment, p.adapters, p.challenge.venue ?? "")
    if (Option.isNone(v)) {
      return yield* new VenueUnavailable({ message: `the service has no API access to ${p.challenge.venue} any more` })
    }
    const master = p.challenge.address.toLowerCase()
    const confirmed = yield* confirmAgentApproval({
      v: v.value,
      master,
      user: master,
      typedData: p.challenge.typedData,
      agent: p.challenge.agent,
      ciphertext: p.challenge.ciphertext,
      signature: p.signature,
    })
    const now = yield* Clock.currentTimeMillis
    const token = `st_${yield* randomBase64Url(32)}`
    const sessionId = yield* randomUuid
    const identityId = yield* randomUuid
    const expires = now + p.sessionMs
    const linked = yield* sql
      .withTransaction(
        Effect.gen(function* () {
          yield* ensureAccount({ master, access: p.initialAccess, identityId, nowMs: now })
          const outcome = yield* linkWithAgentApproval({
            master,
            venue: v.value.venue.id,
            address: master,
            expiresMs: confirmed.expiresMs,
            nowMs: now,
          })
          if (outcome._tag !== "Linked") return outcome
          yield* saveApprovedAgent({
            venue: v.value.venue.id,
            address: master,
            agent: confirmed.agent,
            ciphertext: confirmed.ciphertext,
            expiresMs: confirmed.expiresMs,
            nowMs: now,
          })
          yield* insertSession({ id: sessionId, tokenHash: sha256(token), master, nowMs: now, expiresMs: expires })
          return outcome
        }),
      )
      .pipe(Effect.orDie)
    if (linked._tag !== "Linked") {
      return yield* new StateConflict({
        message: `the ${v.value.venue.id} account could not be linked (${linked._tag})`,
      })
    }
    return { token, expires_at: toRfc3339(expires), master_address: master }
  })

/**
 * Linking through the agent approval (`POST /v1/accounts` with a nonce from the venue's link challenge): confirm
 * it with the venue, then save the agent and link with the approval's expiry in one transaction.
 */
export const agentLink = (p: {
  readonly v: AgentApprovalVenue
  readonly master: string
  readonly address: string
  readonly challenge: { readonly typedData: unknown; readonly agent: string; readonly ciphertext: Buffer }
  readonly signature: string
}) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const confirmed = yield* confirmAgentApproval({
      v: p.v,
      master: p.master,
      user: p.address,
      typedData: p.challenge.typedData,
      agent: p.challenge.agent,
      ciphertext: p.challenge.ciphertext,
      signature: p.signature,
    })
    const now = yield* Clock.currentTimeMillis
    return yield* saveAndLink(sql, p.v, p.master, p.address, confirmed, now)
  })

/**
 * The master address links itself on the agent-approval venue without a new signature only when the service
 * already holds a live approved agent for it (e.g. it signed in through the approval); the link takes that
 * approval's expiry. Otherwise the venue's own proof is required.
 */
export const linkMasterWithLiveAgent = (v: AgentApprovalVenue, ring: AgentKeyring, master: string) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const now = yield* Clock.currentTimeMillis
    const agent = yield* findVenueAgent(v.venue.id, master).pipe(Effect.orDie)
    const live = Option.filter(
      agent,
      (row) =>
        row.expires_at !== null &&
        row.expires_at.getTime() > now &&
        openAgentKey(ring, v.venue.id, master, row.agent_address, row.key_ciphertext) !== undefined,
    )
    if (Option.isNone(live)) return Option.none()
    const outcome = yield* sql
      .withTransaction(
        linkWithAgentApproval({
          master,
          venue: v.venue.id,
          address: master,
          expiresMs: live.value.expires_at!.getTime(),
          nowMs: now,
        }),
      )
      .pipe(Effect.orDie)
    return Option.some(outcome)
  })

const saveAndLink = (
  sql: SqlClient.SqlClient,
  v: AgentApprovalVenue,
  master: string,
  address: string,
  confirmed: ConfirmedApproval,
  now: number,
) =>
  sql
    .withTransaction(
      Effect.gen(function* () {
        const outcome = yield* linkWithAgentApproval({
          master,
          venue: v.venue.id,
          address,
          expiresMs: confirmed.expiresMs,
          nowMs: now,
        })
        if (outcome._tag === "Linked") {
          yield* saveApprovedAgent({
            venue: v.venue.id,
            address,
            agent: confirmed.agent,
            ciphertext: confirmed.ciphertext,
            expiresMs: confirmed.expiresMs,
            nowMs: now,
          })
        }
        return outcome
      }),
    )
    .pipe(Effect.orDie)
