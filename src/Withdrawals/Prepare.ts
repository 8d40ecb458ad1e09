/**
 * Building a withdrawal preparation: the one path shared by POST /v1/withdrawals/prepare and a transfer intent's
 * funding withdrawal (POST /v1/transfers), so both answer typed data under the same rules (spec prepare rules
 * 1-4): the account's linked address signs, a queued, submitting or unknown withdrawal on the venue blocks
 * another, and the amount must fit the fresh withdrawable balance less what the venue acknowledged since.
 */
import { Clock, Effect, Option } from "effect"
import type { Address } from "viem"
import { findLinkedAccount } from "../Accounts/LinkedAccounts.ts"
import { AppConfig } from "../Config.ts"
import {
  InsufficientBalance,
  InvalidRequest,
  NotFound,
  ServiceUnavailable,
  StateConflict,
  VenueUnavailable,
  WithdrawalPending,
} from "../Domain/Errors.ts"
import { typedDataDigest } from "../Domain/TypedData.ts"
import type { WithdrawalTarget } from "../Domain/Withdrawal.ts"
import { randomUuid } from "../SecureRandom.ts"
import { VenueAdapters } from "../Venues/VenueAdapters.ts"
import type {
  AgentUnavailable,
  VenueUnavailable as VenueDown,
  WithdrawalRequestInvalid,
} from "../Venues/VenueErrors.ts"
import { acknowledgedSince, insertPreparation, nextNonceMs, openWithdrawalOf } from "./Repo.ts"

/** Adapter failures on the way to a preparation, as the API's codes. */
const venueFailure = (
  e: VenueDown | AgentUnavailable | WithdrawalRequestInvalid,
): Effect.Effect<never, VenueUnavailable | StateConflict | InvalidRequest | ServiceUnavailable> => {
  switch (e._tag) {
    case "VenueUnavailable":
      // The reason (a transport error naming hosts, the venue's 5xx page) is for the operator's log, not the client.
      return Effect.zipRight(
        Effect.logWarning("venue unavailable to a withdrawal preparation", { venue: e.venue, reason: e.reason }),
        new VenueUnavailable({ message: "the venue did not answer; retry", retryable: true }),
      )
    case "AgentUnavailable":
      // The service's own store or keyring failing is no fault of the account: retry, do not link again.
      return e.transient
        ? new ServiceUnavailable({ message: "the service could not read the account's agent approval; retry" })
        : new StateConflict({ message: `the service holds no live agent approval for this account (${e.reason})` })
    case "WithdrawalRequestInvalid":
      return new InvalidRequest({ message: e.reason })
  }
}

/** The session's linked account on a known venue, or the error that says why not. */
export const linkedAccountOn = (master: string, venueId: string) =>
  Effect.gen(function* () {
    const { deployment } = yield* AppConfig
    if (deployment.venues.find((v) => v.id === venueId) === undefined) {
      return yield* new NotFound({ message: `unknown venue ${venueId}; see GET /v1/venues` })
    }
    const link = yield* findLinkedAccount(master, venueId).pipe(Effect.orDie)
    if (Option.isNone(link)) {
      return yield* new NotFound({ message: `no account is linked on ${venueId}; POST /v1/accounts first` })
    }
    return link.value
  })

export interface PreparedWithdrawal {
  /** The `withdrawal_preparations` row; a submit of its typed data creates the withdrawal. */
  readonly id: string
  readonly venue: string
  readonly amount: bigint
  readonly to: WithdrawalTarget
  readonly destination: string
  readonly typedData: unknown
  readonly expiresMs: number
  readonly createdMs: number
}

/**
 * Builds and stores the venue's typed data for a withdrawal of `amount` base units from the master's linked account
 * on `venue`. Access and the session are the caller's to check.
 */
export const prepareWithdrawal = (p: {
  readonly master: string
  readonly venue: string
  readonly amount: bigint
  readonly to: WithdrawalTarget
  /** `amount` must reach the destination: the venue's fee goes on top (a transfer's funding withdrawal). */
  readonly feeOnTop?: boolean
}) =>
  Effect.gen(function* () {
    const { deployment } = yield* AppConfig
    const adapters = yield* VenueAdapters
    const link = yield* linkedAccountOn(p.master, p.venue)
    if (p.amount === 0n) return yield* new InvalidRequest({ message: "amount must be positive" })
    const adapter = adapters.get(p.venue)
    if (adapter === undefined) {
      return yield* new VenueUnavailable({ message: `the service has no API access to ${p.venue}` })
    }
    const now = yield* Clock.currentTimeMillis
    if (adapter.agentApproval !== undefined && (link.expires_at === null || link.expires_at.getTime() <= now)) {
      return yield* new StateConflict({
        message: `the agent approval behind the ${p.venue} link is missing or lapsed; link the account again`,
      })
    }
    const address = link.address as Address
    const open = yield* openWithdrawalOf(p.venue, address).pipe(Effect.orDie)
    if (Option.isSome(open)) {
      return yield* new WithdrawalPending({
        message: `withdrawal ${open.value.id} on ${p.venue} is ${open.value.state}; it must resolve first`,
      })
    }
    const balance = yield* adapter.withdrawable(address).pipe(Effect.catchAll(venueFailure))
    const acknowledged = yield* acknowledgedSince(p.venue, address, balance.readAtMs).pipe(Effect.orDie)
    const available = balance.amountBaseUnits > acknowledged ? balance.amountBaseUnits - acknowledged : 0n
    if (p.amount > available) {
      return yield* new InsufficientBalance({ message: `at most ${available} base units can be withdrawn now` })
    }
    const destination = (p.to === "signer" ? address : (link.venue_wallet ?? address)) as Address
    const nonceMs = yield* nextNonceMs(p.venue, address, now).pipe(Effect.orDie)
    const prepared = yield* adapter
      .buildWithdrawal({
        address,
        amountBaseUnits: p.amount,
        to: p.to,
        destination,
        nowMs: nonceMs,
        feeOnTop: p.feeOnTop === true,
      })
      .pipe(Effect.catchAll(venueFailure))
    // With the fee on top the signed amount exceeds `amount`: it too must fit what can be withdrawn.
    if (prepared.amountBaseUnits > available) {
      return yield* new InsufficientBalance({
        message: `${p.amount} base units and the venue's fee of ${prepared.feeBaseUnits} exceed the ${available} that can be withdrawn now`,
      })
    }
    const expires = Math.min(now + deployment.withdrawals.preparation_ttl_seconds * 1000, prepared.replayableUntilMs)
    const id = yield* randomUuid
    yield* insertPreparation({
      id,
      master: p.master,
      venue: p.venue,
      address,
      target: p.to,
      destination: prepared.destination.toLowerCase(),
      amount: prepared.amountBaseUnits,
      venueAmount: prepared.amount,
      action: prepared.action,
      nonce: prepared.nonce,
      typedData: prepared.typedData,
      digest: typedDataDigest(prepared.typedData).toLowerCase(),
      replayableUntilMs: prepared.replayableUntilMs,
      expiresMs: expires,
      nowMs: now,
    }).pipe(Effect.orDie)
    return {
      id,
      venue: p.venue,
      amount: prepared.amountBaseUnits,
      to: p.to,
      destination: prepared.destination.toLowerCase(),
      typedData: prepared.typedData,
      expiresMs: expires,
      createdMs: now,
    } satisfies PreparedWithdrawal
  })
