import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { SignatureHex } from "../Auth/Api.ts"
import { SESSION_ONLY_ORDER_FIELDS } from "../Domain/CredentialVisibility.ts"
import { MAX_HASHLOCK_COUNT } from "../Domain/Hashlocks.ts"
import { Address, Amount, OrderId, Timestamp, VenueId } from "../Domain/Primitives.ts"
import { acceptsCredential } from "../Http/ApiDocs.ts"
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
import { Authentication } from "../Http/SecurityContract.ts"
import {
  CREATE_ORDER_REQUEST,
  ORDER_FOR_CREDENTIAL,
  ORDER_FUNDED,
  ORDER_FUNDING,
  ORDER_PREPARATION_MARGIN,
  ORDER_PREPARATION_WALLET,
  ORDER_QUOTES_CANCELLED,
  ORDER_SIGNATURES_REQUEST,
  QUOTE_SET_REQUEST,
} from "./Examples.ts"

const Bytes32 = Schema.String.pipe(Schema.pattern(/^0x[0-9a-fA-F]{64}$/), Schema.annotations({ identifier: "Bytes32" }))

/** A client id (client_order_id here; client_take_id, client_transfer_id): the caller's idempotency key. */
export const ClientId = Schema.String.pipe(
  Schema.pattern(/^[A-Za-z0-9_.:-]{1,64}$/),
  Schema.annotations({
    description:
      "your idempotency key: 1 to 64 characters of A-Z a-z 0-9 _ . : -, chosen and persisted before the first " +
      "attempt; the same id with the same parameters answers the same resource, other parameters 409 STATE_CONFLICT",
    examples: ["mm-hl-2025-11-25-01"],
  }),
)

/** Any JSON object, documented as one (the contract does not check its shape). */
const JsonObject = (description: string) => Schema.Unknown.annotations({ jsonSchema: { type: "object", description } })

/** One item an address signs (`to_sign` of an order and of a close). */
export const SignItem = Schema.Struct({
  kind: Schema.String.annotations({
    description: "what it is: venue_transfer, fund_order or permit (an order); close_offer (a close)",
  }),
  signer: Schema.String.annotations({ description: "the address that must sign it (lowercase)" }),
  typed_data: JsonObject(
    "EIP-712 typed data {domain, types, primaryType, message}, integers as decimal strings: check it against your " +
      "intent, then sign it as given with eth_signTypedData_v4",
  ),
}).annotations({ identifier: "SignItem" })

const QuoteSetView = Schema.Struct({
  sequence: Schema.Number,
  expires_at: Timestamp,
  quotes: Schema.Unknown.annotations({
    jsonSchema: {
      type: "array",
      items: { type: "object" },
      description: "the quotes as published (addresses lowercase)",
    },
  }),
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
  margin_move: Schema.NullOr(
    JsonObject(
      "the venue transfer funding the order from margin: {venue, amount, venue_ref (absent until acknowledged), " +
        "state, error, at}",
    ),
  ),
  transactions: Schema.Array(TransactionView),
  created_at: Timestamp,
  updated_at: Timestamp,
  client_order_id: Schema.String,
  quote_identity_id: Schema.String,
  quote_signer: Schema.String,
}).annotations({
  identifier: "Order",
  description:
    "A maker's order. state: preparing (sign items issued) → awaiting_margin (only with a venue_transfer: the " +
    "shortfall's withdrawal is with the venue, shown as margin_move) → funding (fund with the relayer) → funded " +
    "(OrderFunded indexed at the finalized head), or failed (see error), then closed once a close released its " +
    "funds. Amounts are base units of the venue's token; escrow_available (= quotable) is the indexed unlocked " +
    "amount, filled / received the sums of amount_out / amount_in of its settled fills. quote_set is the latest " +
    "set (active false once superseded, cancelled or lapsed); transactions are the relayed fund calls.",
  examples: [ORDER_FUNDING, ORDER_FUNDED, ORDER_QUOTES_CANCELLED],
})

/** A `quote` credential's view of its order (SESSION_ONLY_ORDER_FIELDS left out): no balances, no margin move. */
export const CredentialOrder = Order.pipe(Schema.omit(...SESSION_ONLY_ORDER_FIELDS)).annotations({
  identifier: "CredentialOrder",
  description:
    "The order as a maker credential sees it (the quote routes' answer to a credential): the Order without " +
    "escrow_available, quotable, filled, received and margin_move, since a credential never sees balances or " +
    "withdrawals. A master's session gets the whole Order.",
  examples: [ORDER_FOR_CREDENTIAL],
})

/**
 * What the quote routes answer: the whole Order to a session, CredentialOrder to a credential. (HttpApi documents a
 * success union by its members, an anyOf, so each member carries its own examples.)
 */
const QuoteRouteAnswer = Schema.Union(Order, CredentialOrder)

export const OrderPreparation = Schema.Struct({ order: Order, to_sign: Schema.Array(SignItem) }).annotations({
  identifier: "OrderPreparation",
  description:
    "The order and what its owner signs, in this order: venue_transfer (only when the wallet lacked the amount), " +
    "fund_order, permit.",
  examples: [ORDER_PREPARATION_WALLET, ORDER_PREPARATION_MARGIN],
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
}).annotations({ examples: [QUOTE_SET_REQUEST] })

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
        }).annotations({ examples: [CREATE_ORDER_REQUEST] }),
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
      .annotate(OpenApi.Summary, "Create a maker order")
      .annotate(
        OpenApi.Description,
        "Creates the order (state preparing) and answers what the owner signs to fund it: the escrow's FundOrder " +
          "(this operator, the identity's quote signer, a deadline one hour ahead) and an EIP-2612 permit, in the " +
          "domain of the escrow the order is funded on for its life (the venue's v2 escrow when it has one and " +
          "settlement.escrow_version is 2, the default; else v1). amount is in base units of the " +
          "venue's token; owner_address must be your linked account on venue, quote_identity_id a live identity " +
          "of yours (else 404 NOT_FOUND); receive_venue must differ from venue and amount be positive (400). When " +
          "the owner's wallet on the escrow chain holds less than amount, to_sign begins with a venue_transfer: " +
          "the venue's withdrawal typed data moving the shortfall from the owner's margin to the owner's address " +
          "(422 INSUFFICIENT_BALANCE when the margin lacks it, 409 WITHDRAWAL_PENDING while another withdrawal of " +
          "the account is open, 409 STATE_CONFLICT when the venue's agent approval lapsed, 503 " +
          "VENUE_UNAVAILABLE); a venue the service has no API access to offers wallet funding only. A token read " +
          "that fails answers 503 CHAIN_UNAVAILABLE (retryable). Session only; a new order needs access granted " +
          "(403 ACCESS_REQUIRED). The same client_order_id with the same parameters answers the same order and " +
          "sign items, whatever the account's access since; other parameters answer 409 STATE_CONFLICT.",
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
        }).annotations({ examples: [ORDER_SIGNATURES_REQUEST] }),
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
      .annotate(OpenApi.Summary, "Sign an order's funding items")
      .annotate(
        OpenApi.Description,
        "The owner's signatures of every sign item of a preparing order, each checked against the owner before " +
          "anything changes (65 bytes, low s: 422 SIGNATURE_MALFORMED, SIGNATURE_MALLEABLE, SIGNATURE_INVALID). " +
          "Wallet funding: the service relays the escrow's `fund` (and pays gas) and the order goes funding. With " +
          "a venue_transfer item (its signature required, else 422 SIGNATURE_INVALID; a venue_transfer signature " +
          "for an order without one is a 400): the withdrawal is queued with the account's withdrawal desk and the " +
          "order goes awaiting_margin; `fund` is relayed once the withdrawal is relayed and the wallet holds the " +
          "amount. Refused: the venue transfer expired before it was signed (422 CHALLENGE_EXPIRED: create a new " +
          "order), another withdrawal of the account is open (409 WITHDRAWAL_PENDING), the owner is no longer " +
          "linked (404). A repeat once the order is awaiting_margin, funding or funded answers the order as it is " +
          "(signatures not checked again); a failed or closed order answers 409 STATE_CONFLICT, and so does a " +
          "preparing order with less than a minute left before its fund deadline (create a new order). Session only; " +
          "another master's order is 404.",
      ),
  )
  .add(
    HttpApiEndpoint.get("list", "/v1/orders")
      .setUrlParams(Schema.Struct({ client_order_id: ClientId }))
      .addSuccess(Schema.Struct({ data: Schema.Array(Order) }).annotations({ examples: [{ data: [ORDER_FUNDED] }] }))
      .addError(Forbidden)
      .annotate(OpenApi.Summary, "Find an order by its client id")
      .annotate(
        OpenApi.Description,
        "Recovery after a lost response to POST /v1/orders: data holds your order with this client_order_id, or " +
          "is empty when none was created (send the creation again with the same id and parameters). Then GET " +
          "/v1/orders/{id}/preparation gives its sign items. Session only. Answers x-event-cursor.",
      ),
  )
  .add(
    HttpApiEndpoint.get("get", "/v1/orders/:id")
      .setPath(Schema.Struct({ id: OrderId }))
      .addSuccess(Order)
      .addError(Forbidden)
      .addError(NotFound)
      .annotate(OpenApi.Summary, "Get an order")
      .annotate(
        OpenApi.Description,
        "One of your orders in its current state, with its latest quote set, margin move and fund transactions. " +
          "Session only; another master's order answers 404 NOT_FOUND. Answers x-event-cursor.",
      ),
  )
  .add(
    HttpApiEndpoint.get("preparation", "/v1/orders/:id/preparation")
      .setPath(Schema.Struct({ id: OrderId }))
      .addSuccess(OrderPreparation)
      .addError(Forbidden)
      .addError(NotFound)
      .annotate(OpenApi.Summary, "Recover an order's sign items")
      .annotate(
        OpenApi.Description,
        "The order's original sign items (the same to_sign POST /v1/orders answered) and its current state; " +
          "creates nothing. Check state and the FundOrder's deadline before signing a recovered intent. Session " +
          "only; another master's order answers 404 NOT_FOUND. Answers x-event-cursor.",
      ),
  )
  .add(
    HttpApiEndpoint.put("publishQuotes", "/v1/orders/:id/quotes")
      .setPath(Schema.Struct({ id: OrderId }))
      .setPayload(QuoteSetRequest)
      .addSuccess(QuoteRouteAnswer)
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
      .annotate(OpenApi.Summary, "Publish an order's quote set")
      .annotate(
        OpenApi.Description,
        "Publishes a quote set signed by the order's quote signer over the escrow-domain QuoteSet; it supersedes " +
          "the order's previous set and answers the order with it (to a credential, CredentialOrder: no balances). Each quote offers `supply` base units of the " +
          "order's token for every `receive` base units a taker pays on `venue` (its chain_id and token) to " +
          "`recipient`; min_fill is the smallest amount_out of one fill (at most supply); quote_size, at most the " +
          "order's quotable, caps what the set offers in all. valid_until and issued_at are Unix seconds. Refused, " +
          "storing nothing: valid_until not more than lock_cutoff_seconds or more than quote_validity_seconds_max " +
          "ahead, a quote naming an unknown venue, chain or token or the order's own venue, a zero supply or " +
          "receive, min_fill above supply (400 INVALID_REQUEST); quote_size zero or above the quotable (422 " +
          "INSUFFICIENT_BALANCE); a signature not by the quote signer (422 SIGNATURE_*); a sequence not above " +
          "every earlier one of the order (409 QUOTE_STALE: the same set twice is stale); the identity's lease not " +
          "live at identity_generation, or the identity revoked (409 LEASE_EXPIRED: renew and sign again). " +
          "An order on the v2 escrow also needs issued_at, hashlock_root, hashlock_count, hashlocks (the maker's " +
          "hashlocks by index; their Merkle root must be hashlock_root, their number hashlock_count, none twice) " +
          "and each quote's escrow (the taker venue's v2 escrow); the signature is over the v2 QuoteSet in the " +
          "order's v2 escrow domain, valid_until - issued_at at most settlement.max_quote_life_seconds, issued_at " +
          "not ahead of the service's clock by more than 30 s (400 otherwise). These fields on a v1 order: 400 " +
          "INVALID_REQUEST. Session, or a credential with scope quote bound to the order's identity (another " +
          "identity's or master's order is 404; a credential without the scope 403).",
      )
      .annotate(OpenApi.Override, acceptsCredential("quote")),
  )
  .add(
    HttpApiEndpoint.del("cancelQuotes", "/v1/orders/:id/quotes")
      .setPath(Schema.Struct({ id: OrderId }))
      .addSuccess(QuoteRouteAnswer)
      .addError(Forbidden)
      .addError(NotFound)
      .annotate(OpenApi.Summary, "Cancel an order's quote set")
      .annotate(
        OpenApi.Description,
        "Deactivates the order's active quote set (journaled once) and answers the order (to a credential, " +
          "CredentialOrder); a set already inactive, " +
          "or none, answers the order unchanged. Fills already admitted are not recalled. Session, or a credential " +
          "with scope quote bound to the order's identity (another identity's or master's order is 404; a " +
          "credential without the scope 403).",
      )
      .annotate(OpenApi.Override, acceptsCredential("quote")),
  )
  .middleware(Authentication)
  .annotate(OpenApi.Title, "Orders")
  .annotate(
    OpenApi.Description,
    "A maker's capital: create and fund an order on one venue's escrow, recover it by its client id, and publish " +
      "or cancel the quote sets its quote signer signs.",
  ) {}
