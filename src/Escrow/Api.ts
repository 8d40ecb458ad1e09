import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { LEGACY_CURSOR_MAX } from "../Domain/CursorLimits.ts"
import { SPOT_DEX } from "../Domain/EscrowTypedData.ts"
import { Amount, OrderId, VenueId } from "../Domain/Primitives.ts"
import { acceptsCredential } from "../Http/ApiDocs.ts"
import {
  AccessRequired,
  BelowMinimum,
  ChainUnavailable,
  ChallengeExpired,
  CloseLimit,
  ClosePending,
  Forbidden,
  InvalidRequest,
  NotFound,
  OrderManaged,
  SignatureInvalid,
  SignatureMalformed,
  SignatureMalleable,
  StateConflict,
} from "../Http/Errors.ts"
import { RequestBody } from "../Http/RequestBody.ts"
import { Authentication } from "../Http/SecurityContract.ts"
import { SignItem } from "../Orders/Api.ts"
import {
  CLOSE_PREPARATION,
  CLOSE_PREPARE_REQUEST,
  CLOSE_REQUEST,
  ESCROW_LIST,
  ESCROW_ORDER_CLOSING,
  LEGACY_PAGE,
  MANAGED_CLOSE_REQUEST,
  MANAGED_ORDER_CLOSING,
} from "./Examples.ts"

/** Spec: Escrow order (entry of GET /v1/escrow, response of the close routes). */
export const EscrowOrder = Schema.Struct({
  venue: Schema.String,
  order_id: Schema.String,
  owner: Schema.String,
  available: Schema.String,
  operator: Schema.String,
  managed: Schema.Boolean,
  closing: Schema.Boolean,
}).annotations({
  identifier: "EscrowOrder",
  description:
    "An order (or, with the all-zero order_id, the owner's available balance) that your linked address owns in a " +
    "venue's escrow, as indexed at the finalized head. available: the unlocked amount a close releases, in base " +
    "units of the venue's token; operator: who operates it (the zero address for the balance); managed: this " +
    "service operates it (close it with POST /v1/closes); closing: a close of it is pending.",
  examples: [ESCROW_ORDER_CLOSING, MANAGED_ORDER_CLOSING],
})

/** Spec: Legacy escrow item. */
export const LegacyEscrowItem = Schema.Struct({
  chain_id: Schema.Int,
  escrow: Schema.String,
  owner: Schema.String,
  kind: Schema.String,
  id: Schema.String,
  amount: Schema.String,
  offer_id: Schema.String,
  refund_at: Schema.Int,
  reclaimable: Schema.Boolean,
}).annotations({
  identifier: "LegacyEscrowItem",
  description:
    "An unreclaimed offer in a retired escrow deployment: amount in base units, refund_at in Unix seconds, " +
    "reclaimable whether the contract lets the owner reclaim it now (both read on chain).",
})

/** 0 (perps, and the only value off the Hyperliquid-like venue) or 4294967295 (spot). */
const Dex = Schema.Int.pipe(Schema.between(0, SPOT_DEX)).annotations({
  description: "destination dex: 0 perps, 4294967295 spot (Hyperliquid-like venue); 0 elsewhere",
})

/** 65 bytes r‖s‖v; v and the low-s rule are checked by the Escrow service so each gets its own code. */
const Signature65 = Schema.String.pipe(Schema.pattern(/^0x[0-9a-fA-F]{130}$/))

export const ClosePreparation = Schema.Struct({
  venue: Schema.String,
  order_id: Schema.String,
  dex: Schema.Int,
  nonce: Schema.String,
  deadline: Schema.Int,
  to_sign: Schema.Array(SignItem),
  to_margin: Schema.Boolean,
}).annotations({
  identifier: "ClosePreparation",
  description:
    "The terms of a close (nonce a decimal string, deadline Unix seconds) and its one close_offer item, to send " +
    "back with the owner's signature to POST /v1/escrow/close.",
  examples: [CLOSE_PREPARATION],
})

/** Escrow balances, closes (by the owner's signature, or managed by this service), and the legacy scan. */
export class EscrowApi extends HttpApiGroup.make("escrow")
  .add(
    HttpApiEndpoint.get("list", "/v1/escrow")
      .addSuccess(Schema.Struct({ data: Schema.Array(EscrowOrder) }).annotations({ examples: [ESCROW_LIST] }))
      .addError(Forbidden)
      .annotate(OpenApi.Summary, "List your escrowed funds")
      .annotate(
        OpenApi.Description,
        "The orders that hold funds (available or locked) for the master's linked address on each venue, in both " +
          "of its escrows (v1 and v2), plus that address's zero-id (available) balance when non-zero, from the " +
          "escrow index (finalized blocks); one with a close pending is listed even once it holds nothing. " +
          "`closing` is true while a close is pending. Ordered by venue, then order id. Session only (403 for a " +
          "maker credential). Answers x-event-cursor (snapshot + replay).",
      ),
  )
  .add(
    HttpApiEndpoint.get("legacy", "/v1/escrow/legacy")
      .setUrlParams(Schema.Struct({ cursor: Schema.optional(Schema.String.pipe(Schema.maxLength(LEGACY_CURSOR_MAX))) }))
      .addSuccess(
        Schema.Struct({
          data: Schema.Array(LegacyEscrowItem),
          next_cursor: Schema.String,
          has_more: Schema.Boolean,
        }).annotations({ examples: [LEGACY_PAGE] }),
      )
      .addError(Forbidden)
      .addError(InvalidRequest)
      .addError(ChainUnavailable)
      .annotate(OpenApi.Summary, "Scan retired escrows for your offers")
      .annotate(
        OpenApi.Description,
        "Scans the retired escrow deployments for offers of the master and its linked addresses, at most " +
          "limits.legacy_page_blocks (default and maximum 8,000) blocks of one contract per page; reclaimed offers " +
          "are left out. Start without a cursor and follow next_cursor (even after an empty page) until has_more " +
          "is false. The cursor is opaque (at most 256 characters) and bound to your account: one edited, made up, " +
          "issued to another account, or naming a deployment no longer scanned answers 400 INVALID_REQUEST. " +
          "Amounts and reclaimable are read on chain; a node failure answers 503 CHAIN_UNAVAILABLE (retry the same " +
          "cursor), never an empty page. A session, or a credential with scope read (403 without it).",
      )
      .annotate(OpenApi.Override, acceptsCredential("read")),
  )
  .add(
    HttpApiEndpoint.post("prepare", "/v1/escrow/close/prepare")
      .setPayload(
        RequestBody("ClosePrepareRequest", {
          venue: VenueId,
          order_id: OrderId,
          to_margin: Schema.optional(Schema.Boolean),
          dex: Schema.optional(Dex),
        }).annotations({ examples: [CLOSE_PREPARE_REQUEST] }),
      )
      .addSuccess(ClosePreparation)
      .addError(Forbidden)
      .addError(AccessRequired)
      .addError(NotFound)
      .addError(InvalidRequest)
      .addError(OrderManaged)
      .addError(ClosePending)
      .addError(BelowMinimum)
      .annotate(OpenApi.Summary, "Prepare a close by signature")
      .annotate(
        OpenApi.Description,
        "The terms of a close and the CloseOffer the order's owner (your linked address on venue) signs with " +
          "eth_signTypedData_v4: a random nonce, a deadline one hour ahead, dex (default 0; 0 perps or 4294967295 " +
          "spot on the Hyperliquid-like venue, 0 elsewhere) and to_margin (default true: into the owner's margin " +
          "on the venue; false sends the funds to the owner's wallet and requires dex 0; else 400). The all-zero " +
          "order_id names the owner's available balance. Refused: no linked account on venue, or no such order " +
          "of it indexed (404 NOT_FOUND); a managed order (409 ORDER_MANAGED: use POST /v1/closes); an order " +
          "holding less than 1,000,000 base units available (not the zero id), an empty balance, or a zero-id " +
          "release into margin below the venue's release_minimum (422 BELOW_MINIMUM); a close of it pending (409 " +
          "CLOSE_PENDING). The CloseOffer is in the domain of the escrow holding the order (version 1 or 2). An " +
          "order on the v2 escrow is closeable by signature whatever it holds and whoever operates it: the close " +
          "is sticky (no new fill can lock it, and later releases pay the owner). Stores nothing: each call draws " +
          "a new nonce. Session only; access granted (403 ACCESS_REQUIRED).",
      ),
  )
  .add(
    HttpApiEndpoint.post("close", "/v1/escrow/close")
      .setPayload(
        RequestBody("CloseRequest", {
          venue: VenueId,
          order_id: OrderId,
          dex: Dex,
          nonce: Amount,
          deadline: Schema.Int.pipe(Schema.positive()),
          signature: Signature65,
          to_margin: Schema.optional(Schema.Boolean),
        }).annotations({ examples: [CLOSE_REQUEST] }),
      )
      .addSuccess(EscrowOrder)
      .addError(Forbidden)
      .addError(AccessRequired)
      .addError(NotFound)
      .addError(InvalidRequest)
      .addError(OrderManaged)
      .addError(ClosePending)
      .addError(CloseLimit)
      .addError(StateConflict)
      .addError(BelowMinimum)
      .addError(ChallengeExpired)
      .addError(SignatureMalformed)
      .addError(SignatureMalleable)
      .addError(SignatureInvalid)
      .addError(ChainUnavailable)
      .annotate(OpenApi.Summary, "Close an escrow order by signature")
      .annotate(
        OpenApi.Description,
        "Relays the owner's signed CloseOffer (the terms from prepare, the signature 65 bytes r||s||v with low s) " +
          "through closeWithSig, paying gas, and answers the escrow order with closing true. The domain the owner " +
          "signed names the escrow (version 1 or 2) the close goes to. The same terms again (the same CloseOffer " +
          "digest) answer that close's order as it is now, whatever happened since, without a new close. Refused: " +
          "a malformed or high-s signature (422 SIGNATURE_MALFORMED, SIGNATURE_MALLEABLE); one not by the owner " +
          "(422 SIGNATURE_INVALID; a contract owner is asked on chain, 503 CHAIN_UNAVAILABLE when the node " +
          "fails); a deadline passed (422 CHALLENGE_EXPIRED: prepare and sign again) or more than an hour ahead " +
          "(400); the prepare rules (404, 409 ORDER_MANAGED, 422 BELOW_MINIMUM); another close of the order " +
          "pending (409 CLOSE_PENDING); 10 closes of the owner pending on the chain (409 CLOSE_LIMIT); the nonce " +
          "used by another close (409 STATE_CONFLICT: prepare again). closing turns false when the transaction is " +
          "final (funds in margin or the wallet, or in the zero-id balance when the venue refused the deposit), " +
          "when it reverts (close again with a new signature), or one minute after the deadline. Session only; a " +
          "new close needs access granted (403 ACCESS_REQUIRED).",
      ),
  )
  .add(
    HttpApiEndpoint.post("managedClose", "/v1/closes")
      .setPayload(
        RequestBody("ManagedCloseRequest", {
          venue: VenueId,
          order_id: OrderId,
          to_margin: Schema.optional(Schema.Boolean),
          dex: Schema.optional(Dex),
        }).annotations({ examples: [MANAGED_CLOSE_REQUEST] }),
      )
      .addSuccess(EscrowOrder)
      .addError(Forbidden)
      .addError(AccessRequired)
      .addError(NotFound)
      .addError(InvalidRequest)
      .addError(StateConflict)
      .addError(ClosePending)
      .addError(CloseLimit)
      .addError(BelowMinimum)
      .annotate(OpenApi.Summary, "Close a managed order")
      .annotate(
        OpenApi.Description,
        "Closes a managed order (operated by this service, e.g. one made with POST /v1/orders) of your linked " +
          "address through the escrow's operatorClose, paying gas, and answers the escrow order with closing true; " +
          "the funds go only to the owner: into margin (to_margin, default true; dex as for prepare, default 0) or " +
          "to the owner's wallet (to_margin false, dex 0). Same queue and closing states as a close by signature; " +
          "the same terms while pending answer the same close. Refused: no linked account or no such order (404); " +
          "the zero id, which has no operator (400: close it by signature); an order this service does not " +
          "operate (409 STATE_CONFLICT: close it by signature); another close of the order pending (409 " +
          "CLOSE_PENDING); 10 closes of the owner pending on the chain (409 CLOSE_LIMIT); nothing available (422 " +
          "BELOW_MINIMUM). On the v2 escrow this releases what is available but is not sticky: only the owner's " +
          "signed close stops the order. Session only; a new close needs access granted (403 ACCESS_REQUIRED).",
      ),
  )
  .middleware(Authentication)
  .annotate(OpenApi.Title, "Escrow")
  .annotate(
    OpenApi.Description,
    "What your linked addresses hold in the venues' escrows, and its closes: by the owner's signature, or by this " +
      "service for the orders it operates; and the scan of retired escrow deployments.",
  ) {}
