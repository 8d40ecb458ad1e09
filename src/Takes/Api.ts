import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { SignatureHex } from "../Auth/Api.ts"
import { Address, Amount, Timestamp, VenueId } from "../Domain/Primitives.ts"
import {
  AccessRequired,
  ChainUnavailable,
  Forbidden,
  InvalidRequest,
  NoLiquidity,
  NotFound,
  PayerNotLinked,
  SignatureInvalid,
  SignatureMalformed,
  SignatureMalleable,
  StateConflict,
} from "../Http/Errors.ts"
import { RequestBody } from "../Http/RequestBody.ts"
import { Authentication } from "../Http/SecurityContract.ts"
import { ClientId } from "../Orders/Api.ts"
import {
  EXAMPLE_CREATE_TAKE_REQUEST,
  EXAMPLE_PREVIEW,
  EXAMPLE_PREVIEW_REQUEST,
  EXAMPLE_SIGNATURES_REQUEST,
  EXAMPLE_TAKE_WITH_SIGN_ITEMS,
} from "./Examples.ts"

/**
 * A take's idempotency key. `transfer:` is reserved: a transfer's take is created under `transfer:<transfer id>`
 * (src/Transfers/Repo.ts clientTakeIdOf), and a take of the caller's own under such an id would make that
 * transfer's take a 409 for good.
 */
const ClientTakeId = ClientId.pipe(
  Schema.filter((id) => !id.startsWith("transfer:"), {
    message: () => "client_take_id may not start with transfer: (reserved for transfers' takes)",
  }),
)

/** A quote exactly as the maker published and signed it (one entry of its quote set). */
export const QuoteView = Schema.Struct({
  venue: Schema.String,
  chain_id: Schema.Int,
  token: Schema.String,
  recipient: Schema.String,
  supply: Schema.String,
  receive: Schema.String,
  min_fill: Schema.String,
}).annotations({ identifier: "Quote" })

export const PreviewFill = Schema.Struct({
  order_id: Schema.String,
  quote: QuoteView,
  /** The quote's index in the signed set (the escrow's `quoteIndex`). */
  quote_index: Schema.Int,
  sequence: Schema.Int,
  amount_in: Schema.String,
  amount_out: Schema.String,
}).annotations({ identifier: "PreviewFill" })

export const TakePreview = Schema.Struct({
  from: Schema.String,
  to: Schema.String,
  amount_in: Schema.String,
  fills: Schema.Array(PreviewFill),
  total_in: Schema.String,
  total_out: Schema.String,
}).annotations({ identifier: "TakePreview", examples: [EXAMPLE_PREVIEW] })

const TakeTransaction = Schema.Struct({
  /** The escrow function: lock, pay, claim, claimPayment, cancelLock, refund, refundPayment. */
  kind: Schema.String,
  chain_id: Schema.Int,
  hash: Schema.NullOr(Schema.String),
  status: Schema.String,
  error: Schema.String,
  at: Timestamp,
}).annotations({ identifier: "TakeTransaction" })

export const TakeFill = Schema.Struct({
  fill_id: Schema.UUID,
  order_id: Schema.String,
  sequence: Schema.Int,
  quote_index: Schema.Int,
  amount_in: Schema.String,
  amount_out: Schema.String,
  payee: Schema.String,
  hashlock: Schema.String,
  maker_expiry: Schema.Int,
  taker_expiry: Schema.Int,
  state: Schema.String,
  final: Schema.Boolean,
  error: Schema.String,
  transactions: Schema.Array(TakeTransaction),
  /** Settlement v2 only: the Fill digest (key of its lock and its payment). */
  fill_digest: Schema.optional(Schema.String),
  /** Settlement v2 only: the Fill's hashlock index in its quote set. */
  hashlock_index: Schema.optional(Schema.Int),
}).annotations({ identifier: "TakeFill" })

export const Take = Schema.Struct({
  id: Schema.UUID,
  client_take_id: Schema.String,
  from: Schema.String,
  to: Schema.String,
  amount_in: Schema.String,
  min_out: Schema.String,
  payer: Schema.String,
  recipient: Schema.String,
  max_parts: Schema.Int,
  total_in: Schema.String,
  total_out: Schema.String,
  state: Schema.String,
  final: Schema.Boolean,
  pay_deadline: Timestamp,
  signed_at: Schema.NullOr(Timestamp),
  error: Schema.String,
  created_at: Timestamp,
  updated_at: Timestamp,
  fills: Schema.Array(TakeFill),
  /** Settlement v2 only (absent on a v1 take): 2. */
  escrow_version: Schema.optional(Schema.Int),
  /** Settlement v2 only: the client's pay key (lowercase), named in every Fill. */
  pay_key: Schema.optional(Schema.String),
  /** Settlement v2 only: payBy of every Fill (chain Unix seconds): the payment must be made by then. */
  pay_by: Schema.optional(Schema.Int),
  /** Settlement v2 only: when the pay key's payment authorisation was accepted. */
  pay_authorized_at: Schema.optional(Schema.NullOr(Timestamp)),
}).annotations({ identifier: "Take" })

export const TakeSignItem = Schema.Struct({
  kind: Schema.String,
  signer: Schema.String,
  typed_data: Schema.Unknown,
  fill_id: Schema.optional(Schema.UUID),
  /** Settlement v2 `margin_move`: the Fill's EIP-712 digest, as the client must recompute it. */
  digest: Schema.optional(Schema.String),
}).annotations({ identifier: "TakeSignItem" })

export const TakeWithSignItems = Schema.Struct({ take: Take, to_sign: Schema.Array(TakeSignItem) }).annotations({
  identifier: "TakeWithSignItems",
  examples: [EXAMPLE_TAKE_WITH_SIGN_ITEMS],
})

/**
 * Takes. The preview is public (a bearer, when sent, is not needed and not checked): it routes without committing
 * anything. The take routes carry the Authentication middleware per endpoint (session only).
 */
export class TakesApi extends HttpApiGroup.make("takes")
  .add(
    HttpApiEndpoint.post("preview", "/v1/takes/preview")
      .setPayload(
        RequestBody("TakePreviewRequest", {
          from: VenueId,
          to: VenueId,
          amount_in: Amount,
          max_parts: Schema.optional(Schema.Int.pipe(Schema.between(1, 8))),
        }).annotations({ examples: [EXAMPLE_PREVIEW_REQUEST] }),
      )
      .addSuccess(TakePreview)
      .addError(InvalidRequest)
      .addError(NotFound)
      .annotate(OpenApi.Summary, "Preview how a take would be routed")
      .annotate(
        OpenApi.Description,
        "How a take of `amount_in` (base units of `from`'s token) would be routed now over live quote sets of funded " +
          "orders on `to` that accept payment on `from`: best price first, at most `max_parts` fills (default and " +
          "ceiling: limits.take_parts_max), each at least its quote's min_fill and at most limits.fill_max, within " +
          "each order's quotable and each set's quote_size. amount_out rounds down and amount_in is the least the " +
          "price accepts, so total_in may be below the request. Reserves nothing; no liquidity answers empty fills.",
      ),
  )
  .add(
    HttpApiEndpoint.post("create", "/v1/takes")
      .setPayload(
        RequestBody("CreateTakeRequest", {
          client_take_id: ClientTakeId,
          from: VenueId,
          to: VenueId,
          amount_in: Amount,
          min_out: Amount,
          payer: Address,
          recipient: Address,
          max_parts: Schema.Int.pipe(Schema.between(1, 8)),
          pay_key: Schema.optional(Address),
        }).annotations({ examples: [EXAMPLE_CREATE_TAKE_REQUEST] }),
      )
      .addSuccess(TakeWithSignItems)
      .addError(Forbidden)
      .addError(AccessRequired)
      .addError(NotFound)
      .addError(InvalidRequest)
      .addError(StateConflict)
      .addError(NoLiquidity)
      .addError(PayerNotLinked)
      .addError(ChainUnavailable)
      .middleware(Authentication)
      .annotate(OpenApi.Summary, "Create a take: reserve fills and get the items to sign")
      .annotate(
        OpenApi.Description,
        "Routes the take as the preview would, reserves the fills at once (they reduce the orders' quotable) and " +
          "answers the take (state reserved) with `to_sign`: one EIP-2612 `permit` of the `from` token for total_in " +
          "to the `from` escrow (deadline = the fills' maker_expiry), then one `margin_move` per fill (the taker's Fill, with " +
          "fill_id). `payer` must be this master's linked account on `from` (else PAYER_NOT_LINKED); `recipient` " +
          "receives on `to`, into margin. min_out not reachable within max_parts: NO_LIQUIDITY, nothing reserved. " +
          "Sign within limits.pay_window_seconds or the reservations release and the take expires. The same " +
          "client_take_id with the same parameters answers the same take and to_sign; other parameters 409 " +
          "STATE_CONFLICT. Settlement v2 (settlement.escrow_version 2, both venues with a v2 escrow): `pay_key` " +
          "(the client's fresh key's address) is required (else 400 INVALID_REQUEST); the take routes over v2 " +
          "orders only, each Fill names the pay key, payBy (`pay_by`, one for the take) and a hashlock of the " +
          "maker's set, each `margin_move` carries the Fill's `digest`, the permit's spender is the `from` v2 " +
          "escrow with deadline payBy, and pay_deadline leaves time to lock and authorise payment before payBy. " +
          "Without v2, `pay_key` is ignored.",
      ),
  )
  .add(
    HttpApiEndpoint.post("sign", "/v1/takes/:id/signatures")
      .setPath(Schema.Struct({ id: Schema.UUID }))
      .setPayload(
        RequestBody("TakeSignaturesRequest", {
          permit: Schema.optional(SignatureHex),
          fills: Schema.optional(
            Schema.Array(RequestBody("FillSignature", { fill_id: Schema.UUID, signature: SignatureHex })).pipe(
              Schema.minItems(1),
              Schema.maxItems(8),
            ),
          ),
          pay_authorization: Schema.optional(SignatureHex),
          cancels: Schema.optional(
            Schema.Array(RequestBody("CancelSignature", { fill_id: Schema.UUID, signature: SignatureHex })).pipe(
              Schema.minItems(1),
              Schema.maxItems(8),
            ),
          ),
        }).annotations({ examples: [EXAMPLE_SIGNATURES_REQUEST] }),
      )
      .addSuccess(TakeWithSignItems)
      .addError(Forbidden)
      .addError(NotFound)
      .addError(InvalidRequest)
      .addError(StateConflict)
      .addError(SignatureMalformed)
      .addError(SignatureMalleable)
      .addError(SignatureInvalid)
      .middleware(Authentication)
      .annotate(OpenApi.Summary, "Sign a take: the payer's items, or the pay key's")
      .annotate(
        OpenApi.Description,
        "The payer's signatures of `to_sign`: `permit` and one entry per fill {fill_id, signature} (every fill " +
          "exactly once), 65-byte low-s ECDSA signatures by the payer. Accepted while the take is reserved and its " +
          "pay window is open: the take and its fills go signed and settlement starts. The same signatures again " +
          "answer the same take (200). After pay_deadline (or once the take ended otherwise): 409 STATE_CONFLICT. " +
          "Settlement v2, the pay key's signatures instead (one kind per request): `pay_authorization` = the " +
          "`pay_authorization` item of `to_sign` (PayTake over the take's Fill digests, offered once every lock is " +
          "final, until payBy) signed by the pay key: stored once (a repeat answers 200 unchanged); posted before " +
          "every lock is final in the service's index, it is held up to 2 s for the index's next page of the " +
          "maker venue, then 409 STATE_CONFLICT, retryable; after payBy 409 STATE_CONFLICT; another signer 422 " +
          "SIGNATURE_INVALID. `cancels`: " +
          "{fill_id, signature} of CancelFill(Fill digest) by the pay key in the `to` v2 escrow's domain; a fill " +
          "keeps its first cancel; the service relays it only on the abort path (no payment by payBy).",
      ),
  )
  .add(
    HttpApiEndpoint.get("get", "/v1/takes/:id")
      .setPath(Schema.Struct({ id: Schema.UUID }))
      .addSuccess(TakeWithSignItems)
      .addError(Forbidden)
      .addError(NotFound)
      .middleware(Authentication)
      .annotate(OpenApi.Summary, "Get a take, its fills and its items to sign")
      .annotate(
        OpenApi.Description,
        "The take, each fill's state and transactions, and the original `to_sign` (recovery: check state and " +
          "pay_deadline before signing again). Another master's take is 404. Answers x-event-cursor.",
      ),
  )
  .annotate(OpenApi.Title, "Takes") {}
