import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { Address, Amount, Timestamp, VenueId } from "../Domain/Primitives.ts"
import {
  AccessRequired,
  ChainUnavailable,
  Forbidden,
  InsufficientBalance,
  InvalidRequest,
  NoLiquidity,
  NotFound,
  PayerNotLinked,
  StateConflict,
  VenueUnavailable,
  WithdrawalPending,
} from "../Http/Errors.ts"
import { RequestBody } from "../Http/RequestBody.ts"
import { Authentication } from "../Http/SecurityContract.ts"
import { ClientId } from "../Orders/Api.ts"
import { Withdrawal } from "../Withdrawals/Api.ts"
import {
  EXAMPLE_CREATE_TRANSFER_REQUEST,
  EXAMPLE_PAY_KEY_REQUEST,
  EXAMPLE_TRANSFER,
  EXAMPLE_TRANSFER_SETTLED,
  EXAMPLE_TRANSFERS_PAGE,
} from "./Examples.ts"

/** Spec: transfers page. */
export const TRANSFERS_PAGE = 100

export const TransferWithdrawalPreparation = Schema.Struct({
  /**
   * The amount signed, base units of `from`'s token: what the payer's wallet lacked at creation, plus the venue's
   * withdrawal fee where the venue takes one out of the amount (Aster), so that the shortfall arrives whole.
   */
  amount: Schema.String,
  typed_data: Schema.Unknown,
  created_at: Timestamp,
}).annotations({ identifier: "TransferWithdrawalPreparation" })

/** The spec's Transfer intent, field for field. */
export const TransferIntent = Schema.Struct({
  id: Schema.String,
  client_transfer_id: Schema.String,
  client_take_id: Schema.String,
  from: Schema.String,
  to: Schema.String,
  amount_in: Schema.String,
  min_out: Schema.String,
  max_parts: Schema.Int,
  payer: Schema.String,
  recipient: Schema.String,
  from_chain_id: Schema.Int,
  to_chain_id: Schema.Int,
  withdrawal_preparation: Schema.NullOr(TransferWithdrawalPreparation),
  withdrawal: Schema.NullOr(Withdrawal),
  take_id: Schema.NullOr(Schema.String),
  take_final: Schema.NullOr(Schema.Boolean),
  cancelled_at: Schema.NullOr(Timestamp),
  created_at: Timestamp,
}).annotations({ identifier: "TransferIntent", examples: [EXAMPLE_TRANSFER, EXAMPLE_TRANSFER_SETTLED] })

/** Transfer intents: an optional venue withdrawal `to: signer` that prefunds the payer's wallet, then a take. */
export class TransfersApi extends HttpApiGroup.make("transfers")
  .add(
    HttpApiEndpoint.post("create", "/v1/transfers")
      .setPayload(
        RequestBody("CreateTransferRequest", {
          client_transfer_id: Schema.optional(ClientId),
          from: VenueId,
          to: VenueId,
          amount_in: Amount,
          min_out: Amount,
          payer: Address,
          recipient: Address,
          max_parts: Schema.optional(Schema.Int.pipe(Schema.between(1, 8))),
        }).annotations({ examples: [EXAMPLE_CREATE_TRANSFER_REQUEST] }),
      )
      .addSuccess(TransferIntent, { status: 201 })
      // An identical repeat of client_transfer_id: the existing intent (the handler sets 200; documented here).
      .addSuccess(TransferIntent.annotations({ description: "An identical repeat: the existing intent." }), {
        status: 200,
      })
      .addError(Forbidden)
      .addError(AccessRequired)
      .addError(NotFound)
      .addError(InvalidRequest)
      .addError(StateConflict)
      .addError(WithdrawalPending)
      .addError(InsufficientBalance)
      .addError(NoLiquidity)
      .addError(PayerNotLinked)
      .addError(ChainUnavailable)
      .addError(VenueUnavailable)
      .annotate(OpenApi.Summary, "Create a transfer intent (201 new, 200 repeat)")
      .annotate(
        OpenApi.Description,
        "Creates a transfer intent: 201 for a new one, 200 with the same intent for an identical repeat of " +
          "`client_transfer_id`, 409 STATE_CONFLICT for its reuse with other parameters. Persist " +
          "`client_transfer_id` before the first attempt: when omitted the server assigns a UUID, and a lost " +
          "response then cannot be recovered by id. `payer` is your linked address on `from`. When its wallet " +
          "on `from`'s chain holds amount_in, the take is created at once (`take_id`; sign its to_sign from " +
          "GET /v1/takes/{id}). Otherwise `withdrawal_preparation` is the venue withdrawal of the shortfall to " +
          "the payer (to: signer; a venue fee taken out of the amount, as Aster's, is added to it): sign its typed_data and submit it with POST /v1/withdrawals; once it is " +
          "relayed and the wallet holds amount_in, the service creates the take. No intent is created while a " +
          "withdrawal of the payer's account is unknown (WITHDRAWAL_PENDING): never sign around it.",
      ),
  )
  .add(
    HttpApiEndpoint.get("list", "/v1/transfers")
      .setUrlParams(Schema.Struct({ cursor: Schema.optional(Schema.String) }))
      .addSuccess(
        Schema.Struct({ items: Schema.Array(TransferIntent), next_cursor: Schema.NullOr(Schema.String) }).annotations({
          examples: [EXAMPLE_TRANSFERS_PAGE],
        }),
      )
      .addError(Forbidden)
      .addError(InvalidRequest)
      .annotate(OpenApi.Summary, "List your transfer intents, newest first")
      .annotate(
        OpenApi.Description,
        `Your transfer intents, newest first, at most ${TRANSFERS_PAGE} per page, completed and cancelled ` +
          "included. Follow next_cursor (the last item's id) in `cursor` until it is null. Answers x-event-cursor.",
      ),
  )
  .add(
    HttpApiEndpoint.post("cancel", "/v1/transfers/:id/cancel")
      .setPath(Schema.Struct({ id: Schema.UUID }))
      .addSuccess(TransferIntent)
      .addError(Forbidden)
      .addError(NotFound)
      .addError(StateConflict)
      .annotate(OpenApi.Summary, "Cancel a transfer intent before its take exists")
      .annotate(
        OpenApi.Description,
        "Cancels the intent before its take is created (take_id null): cancelled_at is set and no take follows. " +
          "A repeat answers the cancelled intent; once the take exists, STATE_CONFLICT. A withdrawal already " +
          "submitted is not recalled: its funds stay in the payer's wallet.",
      ),
  )
  .add(
    HttpApiEndpoint.put("payKey", "/v1/transfers/:id/take/pay-key")
      .setPath(Schema.Struct({ id: Schema.UUID }))
      .setPayload(
        RequestBody("TransferPayKeyRequest", { pay_key: Address }).annotations({ examples: [EXAMPLE_PAY_KEY_REQUEST] }),
      )
      .addSuccess(TransferIntent)
      .addError(Forbidden)
      .addError(AccessRequired)
      .addError(NotFound)
      .addError(InvalidRequest)
      .addError(StateConflict)
      .addError(NoLiquidity)
      .addError(PayerNotLinked)
      .addError(ChainUnavailable)
      .annotate(OpenApi.Summary, "Give the pay key a transfer's v2 take will name")
      .annotate(
        OpenApi.Description,
        "Settlement v2 (the deployment's settlement.escrow_version 2, the default, with both venues on a v2 escrow; " +
          "the take's escrow_version says which): the take route of a transfer's take, keyed by " +
          "the transfer id because the take does not exist yet. A v2 take's Fills name your client's pay key " +
          "(an ephemeral key it makes and keeps; POST /v1/takes carries it as pay_key), which the transfer body " +
          "cannot carry: the transfer waits for it (take_id null) and no Fill is reserved, nor its pay window " +
          "(payBy) started, before it is given here. When the payer's wallet already covered amount_in at " +
          "creation (no withdrawal_preparation), the take is created in this request (take_id set; a refusal " +
          "such as NO_LIQUIDITY stores nothing: repeat it or cancel). Otherwise the key is stored and the " +
          "service creates the take once the funding withdrawal is relayed and the wallet holds amount_in; " +
          "follow take_id in GET /v1/transfers. Then sign its to_sign from GET /v1/takes/{id} and authorise " +
          "payment with the pay key as for any v2 take. Set once: the same key again answers the intent " +
          "unchanged, another key STATE_CONFLICT; a cancelled intent STATE_CONFLICT; a v1 transfer " +
          "INVALID_REQUEST (its take names no pay key).",
      ),
  )
  .middleware(Authentication)
  .annotate(OpenApi.Title, "Transfers") {}
