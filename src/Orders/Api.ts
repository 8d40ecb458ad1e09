import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { SignatureHex } from "../Auth/Api.ts"
import { MAX_HASHLOCK_COUNT } from "../Domain/Hashlocks.ts"
import { Address, Amount, OrderId, Timestamp, VenueId } from "../Domain/Primitives.ts"
import {
  AccessRequired,
  ChainUnavailable,
  ChallengeExpired,
  Forbidden,
  InsufficientBalance,
  InvalidRequest,
  LeaseExpired,
  NotFound,
  QuoteStale,
  SignatureInvalid,
  SignatureMalformed,
  SignatureMalleable,
  StateConflict,
  VenueUnavailable,
  WithdrawalPending,
} from "../Http/Errors.ts"
import { RequestBody } from "../Http/RequestBody.ts"
import { Authentication } from "../Http/Security.ts"

const Bytes32 = Schema.String.pipe(Schema.pattern(/^0x[0-9a-fA-F]{64}$/), Schema.annotations({ identifier: "Bytes32" }))

export const ClientId = Schema.String.pipe(Schema.pattern(/^[A-Za-z0-9_.:-]{1,64}$/))

export const SignItem = Schema.Struct({
  kind: Schema.String,
  signer: Schema.String,
  typed_data: Schema.Unknown,
}).annotations({ identifier: "SignItem" })

const QuoteSetView = Schema.Struct({
  sequence: Schema.Number,
  expires_at: Timestamp,
  quotes: Schema.Unknown,
  signature: Schema.String,
  created_at: Timestamp,
  valid_until: Timestamp,
  quote_size: Schema.String,
  identity_generation: Schema.String,
  active: Schema.Boolean,
  // Settlement v2 sets only (absent on v1): the signed issuedAt (Unix seconds) and the hashlock tree's root and
  // count. The hashlocks themselves are not shown (up to thousands; the maker derives them, the service uses them).
  issued_at: Schema.optional(Schema.Number),
  hashlock_root: Schema.optional(Schema.String),
  hashlock_count: Schema.optional(Schema.Number),
})

const TransactionView = Schema.Struct({
  kind: Schema.String,
  chain_id: Schema.Int,
  hash: Schema.NullOr(Schema.String),
  status: Schema.String,
  error: Schema.String,
  at: Timestamp,
})

export const Order = Schema.Struct({
  id: Schema.String,
  venue: Schema.String,
  receive_venue: Schema.String,
  owner_address: Schema.String,
  state: Schema.String,
  error: Schema.String,
  amount: Schema.String,
  escrow_available: Schema.String,
  quotable: Schema.String,
  filled: Schema.String,
  received: Schema.String,
  last_sequence: Schema.NullOr(Schema.Number),
  quote_set: Schema.NullOr(QuoteSetView),
  margin_move: Schema.NullOr(Schema.Unknown),
  transactions: Schema.Array(TransactionView),
  created_at: Timestamp,
  updated_at: Timestamp,
  client_order_id: Schema.String,
  quote_identity_id: Schema.String,
  quote_signer: Schema.String,
}).annotations({ identifier: "Order" })

export const OrderPreparation = Schema.Struct({ order: Order, to_sign: Schema.Array(SignItem) }).annotations({
  identifier: "OrderPreparation",
})

/** PUT /v1/orders/{id}/quotes (src/Orders/QuoteSetCheck.ts checks what the schema cannot). */
export const QuoteSetRequest = RequestBody("QuoteSetRequest", {
  sequence: Schema.Int.pipe(Schema.between(1, Number.MAX_SAFE_INTEGER)),
  valid_until: Schema.Int.pipe(Schema.positive()),
  quote_size: Amount,
  identity_generation: Schema.String.pipe(Schema.pattern(/^[0-9]{1,20}$/)),
  quotes: Schema.Array(
    Schema.Struct({
      venue: VenueId,
      chain_id: Schema.Int.pipe(Schema.positive()),
      token: Address,
      recipient: Address,
      supply: Amount,
      receive: Amount,
      min_fill: Amount,
      /** v2 orders only, required there: the taker venue's SettlementEscrowV2. */
      escrow: Schema.optional(Address),
    }),
  ).pipe(Schema.minItems(1), Schema.maxItems(8)),
  signature: SignatureHex,
  // v2 orders only, all required there (refused on a v1 order): see the description.
  issued_at: Schema.optional(Schema.Int.pipe(Schema.positive())),
  hashlock_root: Schema.optional(Bytes32),
  hashlock_count: Schema.optional(Schema.Int.pipe(Schema.between(1, MAX_HASHLOCK_COUNT))),
  hashlocks: Schema.optional(Schema.Array(Bytes32).pipe(Schema.minItems(1), Schema.maxItems(MAX_HASHLOCK_COUNT))),
})

/** Maker orders: prepare (sign items), give signatures (relayed), read, recover. Session only. */
export class OrdersApi extends HttpApiGroup.make("orders")
  .add(
    HttpApiEndpoint.post("create", "/v1/orders")
      .setPayload(
        RequestBody("CreateOrderRequest", {
          client_order_id: ClientId,
          venue: VenueId,
          receive_venue: VenueId,
          owner_address: Address,
          amount: Amount,
          quote_identity_id: Schema.UUID,
        }),
      )
      .addSuccess(OrderPreparation)
      .addError(Forbidden)
      .addError(AccessRequired)
      .addError(NotFound)
      .addError(InvalidRequest)
      .addError(StateConflict)
      .addError(ChainUnavailable)
      .addError(InsufficientBalance)
      .addError(WithdrawalPending)
      .addError(VenueUnavailable)
      .annotate(
        OpenApi.Description,
        "Creates the order (state preparing) and answers what the owner signs to fund it: the escrow's FundOrder " +
          "(this operator, the identity's quote signer) and an EIP-2612 permit. When the owner's wallet on the " +
          "escrow chain holds less than amount, to_sign begins with a venue_transfer: the venue's withdrawal " +
          "typed data moving the shortfall from the owner's margin to the owner's address (422 " +
          "INSUFFICIENT_BALANCE when the margin lacks it, 409 WITHDRAWAL_PENDING while another withdrawal of the " +
          "account is open). The same client_order_id with the same parameters answers the same order; other " +
          "parameters answer 409 STATE_CONFLICT.",
      ),
  )
  .add(
    HttpApiEndpoint.post("sign", "/v1/orders/:id/signatures")
      .setPath(Schema.Struct({ id: OrderId }))
      .setPayload(
        RequestBody("OrderSignaturesRequest", {
          fund_order: SignatureHex,
          permit: SignatureHex,
          venue_transfer: Schema.optional(SignatureHex),
        }),
      )
      .addSuccess(Order)
      .addError(Forbidden)
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
        "The owner's signatures of every sign item. Wallet funding: the service relays `fund` and the order goes " +
          "funding. With a venue_transfer item (its signature required, else 422 SIGNATURE_INVALID): the withdrawal " +
          "is queued with the WithdrawalDesk and the order goes awaiting_margin; `fund` is relayed once the " +
          "withdrawal is relayed and the wallet holds the amount.",
      ),
  )
  .add(
    HttpApiEndpoint.get("list", "/v1/orders")
      .setUrlParams(Schema.Struct({ client_order_id: ClientId }))
      .addSuccess(Schema.Struct({ data: Schema.Array(Order) }))
      .addError(Forbidden),
  )
  .add(
    HttpApiEndpoint.get("get", "/v1/orders/:id")
      .setPath(Schema.Struct({ id: OrderId }))
      .addSuccess(Order)
      .addError(Forbidden)
      .addError(NotFound),
  )
  .add(
    HttpApiEndpoint.get("preparation", "/v1/orders/:id/preparation")
      .setPath(Schema.Struct({ id: OrderId }))
      .addSuccess(OrderPreparation)
      .addError(Forbidden)
      .addError(NotFound)
      .annotate(
        OpenApi.Description,
        "The order's original signing payloads and its current state; creates nothing. Check state and deadlines " +
          "before signing a recovered intent.",
      ),
  )
  .add(
    HttpApiEndpoint.put("publishQuotes", "/v1/orders/:id/quotes")
      .setPath(Schema.Struct({ id: OrderId }))
      .setPayload(QuoteSetRequest)
      .addSuccess(Order)
      .addError(Forbidden)
      .addError(NotFound)
      .addError(InvalidRequest)
      .addError(LeaseExpired)
      .addError(QuoteStale)
      .addError(InsufficientBalance)
      .addError(SignatureMalformed)
      .addError(SignatureMalleable)
      .addError(SignatureInvalid)
      .addError(ChainUnavailable)
      .annotate(
        OpenApi.Description,
        "Publishes a quote set signed by the order's quote signer over the escrow-domain QuoteSet. Sequence strictly " +
          "increasing, valid_until within quote_validity_seconds_max, generation current and lease live; it " +
          "supersedes the order's previous set. Session, or a quote credential bound to the order's identity. " +
          "An order on the v2 escrow also needs issued_at, hashlock_root, hashlock_count, hashlocks (the maker's " +
          "hashlocks by index; their Merkle root must be hashlock_root, their number hashlock_count) and each " +
          "quote's escrow (the taker venue's v2 escrow); the signature is over the v2 QuoteSet in the order's v2 " +
          "escrow domain, valid_until - issued_at at most settlement.max_quote_life_seconds, issued_at not ahead of " +
          "the service's clock by more than 30 s. These fields on a v1 order: 400 INVALID_REQUEST.",
      ),
  )
  .add(
    HttpApiEndpoint.del("cancelQuotes", "/v1/orders/:id/quotes")
      .setPath(Schema.Struct({ id: OrderId }))
      .addSuccess(Order)
      .addError(Forbidden)
      .addError(NotFound)
      .annotate(OpenApi.Description, "Deactivates the order's quote set."),
  )
  .middleware(Authentication)
  .annotate(OpenApi.Title, "Orders") {}
