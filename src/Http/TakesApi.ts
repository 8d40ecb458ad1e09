import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { Amount, VenueId } from "../Domain/Primitives.ts"
import { InvalidRequest, NotFound } from "./Errors.ts"
import { RequestBody } from "./RequestBody.ts"

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
}).annotations({ identifier: "TakePreview" })

/**
 * Takes. The preview is public (a bearer, when sent, is not needed and not checked): it routes without committing
 * anything. The take itself (session only, with its own middleware) comes in a separate group.
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
        }),
      )
      .addSuccess(TakePreview)
      .addError(InvalidRequest)
      .addError(NotFound)
      .annotate(
        OpenApi.Description,
        "How a take of `amount_in` (base units of `from`'s token) would be routed now over live quote sets of funded " +
          "orders on `to` that accept payment on `from`: best price first, at most `max_parts` fills (default and " +
          "ceiling: limits.take_parts_max), each at least its quote's min_fill and at most limits.fill_max, within " +
          "each order's quotable and each set's quote_size. amount_out rounds down and amount_in is the least the " +
          "price accepts, so total_in may be below the request. Reserves nothing; no liquidity answers empty fills.",
      ),
  )
  .annotate(OpenApi.Title, "Takes") {}
