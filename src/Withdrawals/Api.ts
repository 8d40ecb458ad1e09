import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { Amount, Timestamp, VenueId } from "../Domain/Primitives.ts"
import { HISTORY_CURSOR_MAX, HISTORY_LIMIT_MAX } from "../Domain/Withdrawal.ts"
import {
  AccessRequired,
  ChallengeExpired,
  Forbidden,
  InsufficientBalance,
  InvalidRequest,
  NotFound,
  SignatureInvalid,
  SignatureMalformed,
  SignatureMalleable,
  StateConflict,
  VenueUnavailable,
  WithdrawalPending,
} from "../Http/Errors.ts"
import { RequestBody } from "../Http/RequestBody.ts"
import { Authentication } from "../Http/Security.ts"

export const WithdrawalTarget = Schema.Literal("wallet", "signer").annotations({
  identifier: "WithdrawalTarget",
  description: "signer: the linked address on the escrow chain; wallet: the account's venue wallet",
})

/** 65-byte r‖s‖v; the shape rules (v, low s) are checked by the Withdrawals service so each gets its own code. */
const Signature65 = Schema.String.pipe(Schema.pattern(/^0x[0-9a-fA-F]{130}$/))

/** The typed data object as handed back: checked against what prepare built, never relayed as given. */
const TypedDataBody = Schema.Record({ key: Schema.String, value: Schema.Unknown }).annotations({
  identifier: "TypedDataObject",
  description: "the typed_data returned by POST /v1/withdrawals/prepare, unchanged",
})

export const Withdrawal = Schema.Struct({
  id: Schema.String,
  venue: Schema.String,
  /** The venue account (linked address) that signed it. */
  address: Schema.String,
  amount: Schema.String,
  to: Schema.NullOr(WithdrawalTarget),
  destination: Schema.String,
  state: Schema.Literal("queued", "submitting", "relayed", "failed", "unknown"),
  /** The venue's reference of the transfer: absent until the venue acknowledged it (spec types it string). */
  venue_ref: Schema.optional(Schema.String).annotations({
    description: "the venue's reference; absent until the venue acknowledged the transfer (never null)",
  }),
  error: Schema.String,
  created_at: Timestamp,
  updated_at: Timestamp,
  /** When the venue acknowledged it: absent until then (spec types it timestamp, never null). */
  relayed_at: Schema.optional(Timestamp).annotations({
    description: "when the venue acknowledged the transfer; absent until then (never null)",
  }),
  revision: Schema.String,
}).annotations({ identifier: "Withdrawal" })

export const WithdrawalPreparation = Schema.Struct({
  venue: Schema.String,
  amount: Schema.String,
  to: WithdrawalTarget,
  destination: Schema.String,
  typed_data: Schema.Unknown,
  expires_at: Timestamp,
}).annotations({ identifier: "WithdrawalPreparation" })

const HistoryLimit = Schema.NumberFromString.pipe(
  Schema.int(),
  Schema.between(1, HISTORY_LIMIT_MAX),
  Schema.annotations({ description: `page size, 1 to ${HISTORY_LIMIT_MAX}, default 100` }),
)

/** Withdrawals from a linked venue account: prepare (typed data to sign), submit (relayed by the desk), read. */
export class WithdrawalsApi extends HttpApiGroup.make("withdrawals")
  .add(
    HttpApiEndpoint.post("prepare", "/v1/withdrawals/prepare")
      .setPayload(RequestBody("PrepareWithdrawalRequest", { venue: VenueId, amount: Amount, to: WithdrawalTarget }))
      .addSuccess(WithdrawalPreparation)
      .addError(Forbidden)
      .addError(AccessRequired)
      .addError(NotFound)
      .addError(InvalidRequest)
      .addError(StateConflict)
      .addError(WithdrawalPending)
      .addError(InsufficientBalance)
      .addError(VenueUnavailable)
      .annotate(
        OpenApi.Description,
        "The venue's typed data for a transfer of `amount` base units from the linked account, within the fresh " +
          "withdrawable balance less the transfers acknowledged since that read. `to: signer` pays the linked " +
          "address on the escrow chain, `to: wallet` the account's venue wallet. A queued, submitting or unknown " +
          "withdrawal on the venue answers WITHDRAWAL_PENDING. Validate the typed data, then sign it with " +
          "eth_signTypedData_v4 and submit it before `expires_at`.",
      ),
  )
  .add(
    HttpApiEndpoint.post("submit", "/v1/withdrawals")
      .setPayload(
        RequestBody("SubmitWithdrawalRequest", {
          venue: VenueId,
          amount: Amount,
          to: WithdrawalTarget,
          typed_data: TypedDataBody,
          signature: Signature65,
        }),
      )
      .addSuccess(Withdrawal)
      .addError(Forbidden)
      .addError(AccessRequired)
      .addError(NotFound)
      .addError(InvalidRequest)
      .addError(StateConflict)
      .addError(WithdrawalPending)
      .addError(ChallengeExpired)
      .addError(SignatureMalformed)
      .addError(SignatureMalleable)
      .addError(SignatureInvalid)
      .annotate(
        OpenApi.Description,
        "Queues the signed withdrawal. typed_data must be exactly what prepare returned for this account, signed " +
          "by the linked address (low s). The service relays it once: queued → submitting → relayed, failed or " +
          "unknown; an unknown one is reconciled against venue evidence, never re-sent. The same prepared typed " +
          "data submitted again answers the same withdrawal. Never sign a new transfer to work around an unknown.",
      ),
  )
  .add(
    HttpApiEndpoint.get("history", "/v1/withdrawals/history")
      .setUrlParams(
        Schema.Struct({
          after: Schema.optional(Schema.String.pipe(Schema.minLength(1), Schema.maxLength(HISTORY_CURSOR_MAX))),
          limit: Schema.optional(HistoryLimit),
        }),
      )
      .addSuccess(
        Schema.Struct({
          data: Schema.Array(Withdrawal),
          next_cursor: Schema.NullOr(Schema.String),
          has_more: Schema.Boolean,
        }),
      )
      .addError(Forbidden)
      .addError(InvalidRequest)
      .annotate(
        OpenApi.Description,
        "The account's withdrawals, newest first by creation time and id, each in its current state with its " +
          "revision. Follow next_cursor (opaque, at most 512 characters) in `after` while has_more. A walk over " +
          "several pages is not a snapshot: follow changes by event replay from x-event-cursor.",
      ),
  )
  .add(
    HttpApiEndpoint.get("get", "/v1/withdrawals/:id")
      .setPath(Schema.Struct({ id: Schema.UUID }))
      .addSuccess(Withdrawal)
      .addError(Forbidden)
      .addError(NotFound)
      .annotate(OpenApi.Description, "One withdrawal of the account, in its current state."),
  )
  .middleware(Authentication)
  .annotate(OpenApi.Title, "Withdrawals") {}
