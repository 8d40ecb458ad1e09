import { HttpApiBuilder } from "@effect/platform"
import { Clock, Effect, Either, Option, Redacted } from "effect"
import type { Address, Hex } from "viem"
import { AppConfig } from "../Config.ts"
import { toRfc3339 } from "../Domain/Primitives.ts"
import { canonicalSignature } from "../Domain/Signature.ts"
import { checkSignatureShape } from "../Domain/Siwe.ts"
import { HISTORY_LIMIT_DEFAULT } from "../Domain/Withdrawal.ts"
import { decodeHistoryCursor, encodeHistoryCursor, historyCursorKey } from "../Domain/WithdrawalCursor.ts"
import { digestOfUntrusted, recoverDigestSigner } from "../Domain/WithdrawalTypedData.ts"
import { randomUuid } from "../SecureRandom.ts"
import { findLinkedAccount } from "../Store/LinkedAccounts.ts"
import {
  acknowledgedSince,
  createWithdrawal,
  findPreparationByDigest,
  findWithdrawal,
  historyPage,
  insertPreparation,
  nextNonceMs,
  openWithdrawalOf,
  type WithdrawalRow,
} from "../Store/Withdrawals.ts"
import { snapshotCursor } from "../Stream/SnapshotCursor.ts"
import { typedDataDigest } from "../Venues/TypedData.ts"
import { VenueAdapters } from "../Venues/VenueAdapters.ts"
import type {
  AgentUnavailable,
  VenueUnavailable as VenueDown,
  WithdrawalRequestInvalid,
} from "../Venues/VenueErrors.ts"
import { Api } from "./Api.ts"
import {
  apiError,
  ChallengeExpired,
  type Envelope,
  InsufficientBalance,
  InvalidRequest,
  NotFound,
  SignatureInvalid,
  StateConflict,
  VenueUnavailable,
  WithdrawalPending,
} from "./Errors.ts"
import { requireAccess, requireSession } from "./Guards.ts"
import { shapeFailure } from "./SignatureFailure.ts"

export const withdrawalView = (r: WithdrawalRow) => ({
  id: r.id,
  venue: r.venue,
  address: r.address,
  amount: r.amount,
  to: r.target,
  destination: r.destination,
  state: r.state,
  venue_ref: r.venue_ref,
  error: r.error,
  created_at: r.created_at.toISOString(),
  updated_at: r.updated_at.toISOString(),
  relayed_at: r.relayed_at === null ? null : r.relayed_at.toISOString(),
  revision: r.revision,
})

const NOT_PREPARED =
  "typed_data is not a withdrawal prepared for this account: POST /v1/withdrawals/prepare and submit its typed_data unchanged"

/** Adapter failures on the way to a preparation, as the API's codes. */
const venueFailure = (
  e: VenueDown | AgentUnavailable | WithdrawalRequestInvalid,
): Effect.Effect<never, Envelope<"VENUE_UNAVAILABLE" | "STATE_CONFLICT" | "INVALID_REQUEST">> => {
  switch (e._tag) {
    case "VenueUnavailable":
      return apiError(VenueUnavailable, `the venue did not answer: ${e.reason}`, true)
    case "AgentUnavailable":
      return apiError(StateConflict, `the service holds no live agent approval for this account (${e.reason})`)
    case "WithdrawalRequestInvalid":
      return apiError(InvalidRequest, e.reason)
  }
}

export const WithdrawalsHandlers = HttpApiBuilder.group(Api, "withdrawals", (handlers) =>
  Effect.gen(function* () {
    const { deployment } = yield* AppConfig
    const adapters = yield* VenueAdapters
    const settings = deployment.withdrawals
    const cursorKey = historyCursorKey(Buffer.from(Redacted.value(deployment.operator_key).slice(2), "hex"))
    const venueOf = (id: string) => deployment.venues.find((v) => v.id === id)

    /** The session's linked account on a known venue, or the error that says why not. */
    const linkedAccount = (master: string, venueId: string) =>
      Effect.gen(function* () {
        if (venueOf(venueId) === undefined)
          return yield* apiError(NotFound, `unknown venue ${venueId}; see GET /v1/venues`)
        const link = yield* findLinkedAccount(master, venueId).pipe(Effect.orDie)
        if (Option.isNone(link)) {
          return yield* apiError(NotFound, `no account is linked on ${venueId}; POST /v1/accounts first`)
        }
        return link.value
      })

    return handlers
      .handle("prepare", ({ payload }) =>
        Effect.gen(function* () {
          const session = yield* requireSession
          yield* requireAccess(session.master)
          const link = yield* linkedAccount(session.master, payload.venue)
          const amount = BigInt(payload.amount)
          if (amount === 0n) return yield* apiError(InvalidRequest, "amount must be positive")
          const adapter = adapters.get(payload.venue)
          if (adapter === undefined) {
            return yield* apiError(VenueUnavailable, `the service has no API access to ${payload.venue}`)
          }
          const now = yield* Clock.currentTimeMillis
          if (adapter.agentApproval !== undefined && (link.expires_at === null || link.expires_at.getTime() <= now)) {
            return yield* apiError(
              StateConflict,
              `the agent approval behind the ${payload.venue} link is missing or lapsed; link the account again`,
            )
          }
          const address = link.address as Address
          const open = yield* openWithdrawalOf(payload.venue, address).pipe(Effect.orDie)
          if (Option.isSome(open)) {
            return yield* apiError(
              WithdrawalPending,
              `withdrawal ${open.value.id} on ${payload.venue} is ${open.value.state}; it must resolve first`,
            )
          }
          const balance = yield* adapter.withdrawable(address).pipe(Effect.catchAll(venueFailure))
          const acknowledged = yield* acknowledgedSince(payload.venue, address, balance.readAtMs).pipe(Effect.orDie)
          const available = balance.amountBaseUnits > acknowledged ? balance.amountBaseUnits - acknowledged : 0n
          if (amount > available) {
            return yield* apiError(InsufficientBalance, `at most ${available} base units can be withdrawn now`)
          }
          const destination = (payload.to === "signer" ? address : (link.venue_wallet ?? address)) as Address
          const nonceMs = yield* nextNonceMs(payload.venue, address, now).pipe(Effect.orDie)
          const prepared = yield* adapter
            .buildWithdrawal({ address, amountBaseUnits: amount, to: payload.to, destination, nowMs: nonceMs })
            .pipe(Effect.catchAll(venueFailure))
          const expires = Math.min(now + settings.preparation_ttl_seconds * 1000, prepared.replayableUntilMs)
          yield* insertPreparation({
            id: yield* randomUuid,
            master: session.master,
            venue: payload.venue,
            address,
            target: payload.to,
            destination: prepared.destination.toLowerCase(),
            amount,
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
            venue: payload.venue,
            amount: amount.toString(),
            to: payload.to,
            destination: prepared.destination.toLowerCase(),
            typed_data: prepared.typedData,
            expires_at: toRfc3339(expires),
          }
        }),
      )
      .handle("submit", ({ payload }) =>
        Effect.gen(function* () {
          const session = yield* requireSession
          yield* requireAccess(session.master)
          yield* linkedAccount(session.master, payload.venue)
          // Shape first (65 bytes, v, low s): nothing is looked up for a signature no venue would accept.
          yield* checkSignatureShape(payload.signature).pipe(Effect.catchAll(shapeFailure))
          const signature = Either.getOrThrow(canonicalSignature(payload.signature as Hex))
          const digest = digestOfUntrusted(payload.typed_data)
          if (Either.isLeft(digest)) return yield* apiError(InvalidRequest, `${NOT_PREPARED} (${digest.left})`)
          const found = yield* findPreparationByDigest(digest.right).pipe(Effect.orDie)
          if (Option.isNone(found) || found.value.master !== session.master) {
            return yield* apiError(InvalidRequest, NOT_PREPARED)
          }
          const prep = found.value
          if (
            prep.venue !== payload.venue ||
            BigInt(prep.amount) !== BigInt(payload.amount) ||
            prep.target !== payload.to
          ) {
            return yield* apiError(InvalidRequest, "venue, amount and to must be those the typed data was prepared for")
          }
          const signer = yield* recoverDigestSigner(digest.right, signature)
          if (signer !== prep.address) {
            return yield* apiError(
              SignatureInvalid,
              `the typed data must be signed by the linked address ${prep.address}`,
            )
          }
          const now = yield* Clock.currentTimeMillis
          const outcome = yield* createWithdrawal({
            id: yield* randomUuid,
            preparation: prep,
            signature,
            nowMs: now,
            expired: prep.expires_at.getTime() <= now,
          }).pipe(Effect.orDie)
          switch (outcome._tag) {
            case "Created":
            case "Existing":
              return withdrawalView(outcome.row)
            case "Expired":
              return yield* apiError(ChallengeExpired, "the preparation expired; prepare and sign again")
            case "NotLinked":
              return yield* apiError(NotFound, `the account that prepared this withdrawal is no longer linked`)
            case "Pending":
              return yield* apiError(
                WithdrawalPending,
                `withdrawal ${outcome.id} on ${payload.venue} is still open; it must resolve first`,
              )
          }
        }),
      )
      .handle("get", ({ path }) =>
        Effect.gen(function* () {
          const session = yield* requireSession
          yield* snapshotCursor
          const row = yield* findWithdrawal(path.id).pipe(Effect.orDie)
          if (Option.isNone(row) || row.value.master !== session.master) {
            return yield* apiError(NotFound, "no such withdrawal")
          }
          return withdrawalView(row.value)
        }),
      )
      .handle("history", ({ urlParams }) =>
        Effect.gen(function* () {
          const session = yield* requireSession
          const limit = urlParams.limit ?? HISTORY_LIMIT_DEFAULT
          let after: Parameters<typeof historyPage>[1]
          if (urlParams.after !== undefined) {
            const decoded = decodeHistoryCursor(cursorKey, session.master, urlParams.after)
            if (Either.isLeft(decoded)) return yield* apiError(InvalidRequest, decoded.left)
            after = decoded.right
          }
          yield* snapshotCursor
          const page = yield* historyPage(session.master, after, limit).pipe(Effect.orDie)
          const last = page.rows[page.rows.length - 1]
          return {
            data: page.rows.map(withdrawalView),
            next_cursor:
              page.hasMore && last !== undefined
                ? encodeHistoryCursor(cursorKey, session.master, {
                    createdMicros: BigInt(last.created_us),
                    id: last.id,
                  })
                : null,
            has_more: page.hasMore,
          }
        }),
      )
  }),
)
