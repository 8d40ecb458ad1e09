import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { Amount, Timestamp, VenueId } from "../Domain/Primitives.ts"
import { HISTORY_CURSOR_MAX, HISTORY_LIMIT_DEFAULT, HISTORY_LIMIT_MAX } from "../Domain/Withdrawal.ts"
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
import { Authentication } from "../Http/SecurityContract.ts"
import {
  PREPARE_WITHDRAWAL_REQUEST,
  SUBMIT_WITHDRAWAL_REQUEST,
  WITHDRAWAL_HISTORY,
  WITHDRAWAL_PREPARATION,
  WITHDRAWAL_QUEUED,
  WITHDRAWAL_RELAYED,
} from "./Examples.ts"
import { WithdrawalTarget, WithdrawalView } from "./View.ts"

/** 65-byte r‖s‖v; the shape rules (v, low s) are checked by the Withdrawals service so each gets its own code. */
const Signature65 = Schema.String.pipe(Schema.pattern(/^0x[0-9a-fA-F]{130}$/))

/** The typed data object as handed back: checked against what prepare built, never relayed as given. */
const TypedDataBody = Schema.Record({ key: Schema.String, value: Schema.Unknown }).annotations({
  identifier: "TypedDataObject",
  description: "the typed_data returned by POST /v1/withdrawals/prepare, unchanged",
})

export const Withdrawal = WithdrawalView.annotations({
  identifier: "Withdrawal",
  description:
    "A withdrawal from a linked venue account: amount in base units of the venue's token, paid to destination. " +
    "state: queued → submitting → relayed (the venue acknowledged it; funds may still be on the way), failed " +
    "(refused or never sent; see error) or unknown (it may have reached the venue: reconciled against the venue's " +
    "records, never re-sent). relayed and failed are final. revision (a decimal string) grows with every change.",
  examples: [WITHDRAWAL_QUEUED, WITHDRAWAL_RELAYED],
})

export const WithdrawalPreparation = Schema.Struct({
  venue: Schema.String,
  amount: Schema.String,
  to: WithdrawalTarget,
  destination: Schema.String,
  typed_data: Schema.Unknown.annotations({
    jsonSchema: { type: "object", description: "the venue's EIP-712 typed data: sign it as given" },
  }),
  expires_at: Timestamp,
}).annotations({
  identifier: "WithdrawalPreparation",
  description:
    "The venue's own typed data for the transfer (its own units: Hyperliquid amounts in whole tokens, its nonce " +
    "in milliseconds), the destination it pays, and when the preparation expires.",
  examples: [WITHDRAWAL_PREPARATION],
})

const HistoryLimit = Schema.NumberFromString.pipe(
  Schema.int(),
  Schema.between(1, HISTORY_LIMIT_MAX),
  Schema.annotations({ description: `page size, 1 to ${HISTORY_LIMIT_MAX}, default ${HISTORY_LIMIT_DEFAULT}` }),
)

/** Withdrawals from a linked venue account: prepare (typed data to sign), submit (relayed by the desk), read. */
export class WithdrawalsApi extends HttpApiGroup.make("withdrawals")
  .add(
    HttpApiEndpoint.post("prepare", "/v1/withdrawals/prepare")
      .setPayload(
        RequestBody("PrepareWithdrawalRequest", { venue: VenueId, amount: Amount, to: WithdrawalTarget }).annotations({
          examples: [PREPARE_WITHDRAWAL_REQUEST],
        }),
      )
      .addSuccess(WithdrawalPreparation)
      .addError(Forbidden)
      .addError(AccessRequired)
      .addError(NotFound)
      .addError(InvalidRequest)
      .addError(StateConflict)
      .addError(WithdrawalPending)
      .addError(InsufficientBalance)
      .addError(VenueUnavailable)
      .annotate(OpenApi.Summary, "Prepare a withdrawal")
      .annotate(
        OpenApi.Description,
        "The venue's typed data for a transfer of `amount` base units from your linked account on `venue`, " +
          "within the fresh withdrawable balance less the transfers the venue acknowledged since that read (422 " +
          "INSUFFICIENT_BALANCE above it). `to: signer` pays the linked address on the escrow chain, `to: wallet` " +
          "the account's venue wallet (else the linked address); destination says which. Stores the preparation " +
          "and sends nothing. Refused: an unknown venue or no linked account there (404 NOT_FOUND); amount 0 or " +
          "not representable by the venue (400); a queued, submitting or unknown withdrawal on the account (409 " +
          "WITHDRAWAL_PENDING); the agent approval behind the link lapsed (409 STATE_CONFLICT: link again); the " +
          "venue not answering (503 VENUE_UNAVAILABLE, retryable) or the service without API access to it (503, " +
          "not retryable). Validate the typed data, then sign it with the linked address (eth_signTypedData_v4) " +
          "and submit it before `expires_at` (withdrawals.preparation_ttl_seconds, 600 s by default, or the " +
          "venue's nonce window if shorter). Session only; access granted (403 ACCESS_REQUIRED).",
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
        }).annotations({ examples: [SUBMIT_WITHDRAWAL_REQUEST] }),
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
      .annotate(OpenApi.Summary, "Submit a signed withdrawal")
      .annotate(
        OpenApi.Description,
        "Queues the signed withdrawal and answers it (queued). typed_data must be exactly what prepare returned " +
          "for this account, with the same venue, amount and to (400 INVALID_REQUEST otherwise), signed by the " +
          "linked address: 65 bytes, low s (422 SIGNATURE_MALFORMED, SIGNATURE_MALLEABLE, SIGNATURE_INVALID). The " +
          "service relays its own stored copy once: queued → submitting → relayed, failed or unknown; an unknown " +
          "one is reconciled against venue evidence, never re-sent. The same prepared typed data submitted again " +
          "answers the same withdrawal, whatever happened since. Refused for a new one: the preparation expired " +
          "(422 CHALLENGE_EXPIRED: prepare again), another withdrawal of the account open (409 " +
          "WITHDRAWAL_PENDING), the account unlinked (404). Never sign a new transfer to work around an unknown. " +
          "Session only; a new withdrawal needs access granted (403 ACCESS_REQUIRED); a repeat does not.",
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
          next_cursor: Schema.String,
          has_more: Schema.Boolean,
        }).annotations({ examples: [WITHDRAWAL_HISTORY] }),
      )
      .addError(Forbidden)
      .addError(InvalidRequest)
      .annotate(OpenApi.Summary, "List your withdrawals")
      .annotate(
        OpenApi.Description,
        `The account's withdrawals, newest first by creation time and id, each in its current state with its ` +
          `revision; limit 1 to ${HISTORY_LIMIT_MAX} (default ${HISTORY_LIMIT_DEFAULT}). Follow next_cursor (opaque, at most ` +
          `${HISTORY_CURSOR_MAX} characters; on the last page too, where it answers an empty page) in \`after\` ` +
          "while has_more; a cursor not " +
          "issued to your account answers 400 INVALID_REQUEST. A walk over several pages is not a snapshot: " +
          "follow changes by event replay from x-event-cursor. Session only.",
      ),
  )
  .add(
    HttpApiEndpoint.get("get", "/v1/withdrawals/:id")
      .setPath(Schema.Struct({ id: Schema.UUID }))
      .addSuccess(Withdrawal)
      .addError(Forbidden)
      .addError(NotFound)
      .annotate(OpenApi.Summary, "Get a withdrawal")
      .annotate(
        OpenApi.Description,
        "One withdrawal of the account, in its current state; venue_ref and relayed_at are absent until the " +
          "venue acknowledged it. Another master's withdrawal answers 404 NOT_FOUND. Session only. Answers " +
          "x-event-cursor.",
      ),
  )
  .middleware(Authentication)
  .annotate(OpenApi.Title, "Withdrawals")
  .annotate(
    OpenApi.Description,
    "Transfers out of a linked venue account: the venue's typed data to sign, the signed transfer relayed once, " +
      "and its state.",
  ) {}
