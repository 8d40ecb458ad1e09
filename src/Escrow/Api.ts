import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { SPOT_DEX } from "../Domain/EscrowTypedData.ts"
import { LEGACY_CURSOR_MAX } from "../Domain/LegacyCursor.ts"
import { Amount, OrderId, VenueId } from "../Domain/Primitives.ts"
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
import { Authentication } from "../Http/Security.ts"
import { SignItem } from "../Orders/Api.ts"

/** Spec: Escrow order (entry of GET /v1/escrow, response of the close routes). */
export const EscrowOrder = Schema.Struct({
  venue: Schema.String,
  order_id: Schema.String,
  owner: Schema.String,
  available: Schema.String,
  operator: Schema.String,
  managed: Schema.Boolean,
  closing: Schema.Boolean,
}).annotations({ identifier: "EscrowOrder" })

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
}).annotations({ identifier: "LegacyEscrowItem" })

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
}).annotations({ identifier: "ClosePreparation" })

/** Escrow balances, closes (by the owner's signature, or managed by this service), and the legacy scan. */
export class EscrowApi extends HttpApiGroup.make("escrow")
  .add(
    HttpApiEndpoint.get("list", "/v1/escrow")
      .addSuccess(Schema.Struct({ data: Schema.Array(EscrowOrder) }))
      .addError(Forbidden)
      .annotate(
        OpenApi.Description,
        "The orders that hold funds for the master's linked address on each venue, plus that address's zero-id " +
          "(available) balance when non-zero, from the escrow index (finalized blocks). `closing` is true while a " +
          "close is pending. Answers x-event-cursor (snapshot + replay).",
      ),
  )
  .add(
    HttpApiEndpoint.get("legacy", "/v1/escrow/legacy")
      .setUrlParams(Schema.Struct({ cursor: Schema.optional(Schema.String.pipe(Schema.maxLength(LEGACY_CURSOR_MAX))) }))
      .addSuccess(
        Schema.Struct({ data: Schema.Array(LegacyEscrowItem), next_cursor: Schema.String, has_more: Schema.Boolean }),
      )
      .addError(Forbidden)
      .addError(InvalidRequest)
      .addError(ChainUnavailable)
      .annotate(
        OpenApi.Description,
        "Scans the retired escrow deployments for offers of the master and its linked addresses, at most 8,000 " +
          "blocks of one contract per page. Follow next_cursor (even after an empty page) until has_more is false. " +
          "Amounts and reclaimable are read on chain; a node failure answers 503 CHAIN_UNAVAILABLE, never an " +
          "empty page. A session, or a credential with scope read.",
      ),
  )
  .add(
    HttpApiEndpoint.post("prepare", "/v1/escrow/close/prepare")
      .setPayload(
        RequestBody("ClosePrepareRequest", {
          venue: VenueId,
          order_id: OrderId,
          to_margin: Schema.optional(Schema.Boolean),
          dex: Schema.optional(Dex),
        }),
      )
      .addSuccess(ClosePreparation)
      .addError(Forbidden)
      .addError(AccessRequired)
      .addError(NotFound)
      .addError(InvalidRequest)
      .addError(OrderManaged)
      .addError(ClosePending)
      .addError(BelowMinimum)
      .annotate(
        OpenApi.Description,
        "The terms of a close and the CloseOffer the order's owner (your linked address) signs: a random nonce, a " +
          "deadline one hour ahead, dex and to_margin (default true; false sends the funds to the owner's wallet " +
          "and requires dex 0). Refused for a managed order, an order below 1,000,000 base units (not the zero " +
          "id), a pending close, and a zero-id release into margin below the venue's release_minimum. The " +
          "CloseOffer is in the domain of the escrow holding the order (version 1 or 2). An order on the v2 escrow " +
          "is closeable by signature whatever it holds and whoever operates it: the close is sticky (no new fill " +
          "can lock it, and later releases pay the owner).",
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
        }),
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
      .annotate(
        OpenApi.Description,
        "Relays the owner's signed CloseOffer (the terms from prepare) and answers the escrow order with closing " +
          "true. At most 10 pending closes per owner and chain (CLOSE_LIMIT); the same terms again return the same " +
          "close. closing turns false when the transaction is final (funds in margin or the wallet, or in the " +
          "zero-id balance when the venue refused the deposit), when it reverts (close again with a new " +
          "signature), or one minute after the deadline. The domain the owner signed names the escrow (version 1 " +
          "or 2) the close goes to.",
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
        }),
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
      .annotate(
        OpenApi.Description,
        "Closes a managed order (operated by this service) of your linked address through the escrow's " +
          "operatorClose; the funds go only to the owner. Same queue and closing states as a close by signature; " +
          "the same terms while pending return the same close. On the v2 escrow this releases what is available " +
          "but is not sticky: only the owner's signed close stops the order.",
      ),
  )
  .middleware(Authentication)
  .annotate(OpenApi.Title, "Escrow") {}
