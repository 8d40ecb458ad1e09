import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import {
  RECENT_TRADES,
  TRADE_CURSOR_MAX,
  TRADE_HISTORY_LIMIT_DEFAULT,
  TRADE_HISTORY_LIMIT_MAX,
} from "../Domain/CursorLimits.ts"
import { Timestamp, VenueId } from "../Domain/Primitives.ts"
import { Forbidden, InvalidRequest, NotFound, Unauthorized } from "../Http/Errors.ts"
import { RECENT_TRADES_ANSWER, TRADE_HISTORY } from "./Examples.ts"

/** EIP-712 typed data in wire form, documented as an object (the proof's verifier checks it, not the schema). */
const WireTypedData = Schema.Unknown.annotations({
  jsonSchema: { type: "object", description: "EIP-712 typed data {domain, types, primaryType, message} in wire form" },
})

export const RecentTrade = Schema.Struct({
  id: Schema.String,
  /** The venue the taker paid on (amount_in is in its token's base units). */
  from: Schema.String,
  amount_in: Schema.String,
  amount_out: Schema.String,
  at: Timestamp,
}).annotations({ identifier: "RecentTrade" })

const SettlementTransaction = Schema.Struct({
  kind: Schema.Literal("lock", "pay", "claim", "claim_payment"),
  chain_id: Schema.Int,
  hash: Schema.String,
  block_number: Schema.Int,
}).annotations({ identifier: "SettlementTransaction" })

/** A v1 trade's proof (SettlementEscrow v1). */
export const TradeProofV1 = Schema.Struct({
  quote_set: Schema.NullOr(
    Schema.Struct({
      typed_data: WireTypedData,
      signature: Schema.String,
      signer: Schema.String,
    }),
  ),
  fill: Schema.Struct({
    typed_data: WireTypedData,
    signature: Schema.NullOr(Schema.String),
    signer: Schema.String,
    quote_index: Schema.Int,
  }),
  secret: Schema.NullOr(Schema.String),
  transactions: Schema.Array(SettlementTransaction),
}).annotations({
  identifier: "TradeProofV1",
  description:
    "quote_set: the maker's signed QuoteSet (EIP-712, maker chain escrow domain, signer = the order's quote " +
    "signer); fill: the payer's signed Fill (taker chain escrow domain), naming the set's orderId and sequence and " +
    "priced on quotes[quote_index]; secret: keccak256(secret) = the Fill's hashlock; transactions: the settlement " +
    "transactions as indexed on chain. Typed data is in wire form (integers as decimal strings).",
})

/** A settlement-v2 trade's proof (SettlementEscrowV2; src/Domain/TradeProofV2.ts verifies one offline). */
export const TradeProofV2 = Schema.Struct({
  escrow_version: Schema.Literal(2),
  quote_set: Schema.NullOr(
    Schema.Struct({
      typed_data: WireTypedData,
      signature: Schema.String,
      signer: Schema.String,
      hashlock_index: Schema.Int,
      hashlock_proof: Schema.Array(Schema.String),
    }),
  ),
  fill: Schema.Struct({
    typed_data: WireTypedData,
    signature: Schema.NullOr(Schema.String),
    signer: Schema.String,
    quote_index: Schema.Int,
    digest: Schema.String,
  }),
  pay_authorization: Schema.NullOr(
    Schema.Struct({
      typed_data: WireTypedData,
      signature: Schema.String,
      signer: Schema.String,
    }),
  ),
  secret: Schema.NullOr(Schema.String),
  transactions: Schema.Array(SettlementTransaction),
}).annotations({
  identifier: "TradeProofV2",
  description:
    "escrow_version 2. quote_set: the maker's signed v2 QuoteSet (maker chain v2 escrow domain, signer = the " +
    "order's quote signer; owner, issuedAt, hashlockRoot, hashlockCount and each quote's taker escrow are signed) " +
    "with the fill's hashlock_index and the Merkle proof of (index, hashlock) under hashlockRoot; fill: the payer's " +
    "signed v2 Fill (taker chain v2 escrow domain) and its EIP-712 digest (the key of the lock and the payment); " +
    "pay_authorization: the Fill's payKey's PayTake over the take's Fill digests (taker chain v2 escrow domain); " +
    "secret: as the maker revealed it (claimPayment), keccak256(secret) = the Fill's hashlock; transactions: lock, " +
    "pay (payTake), claim_payment and claim as indexed final on chain. Typed data is in wire form.",
})

// V2 first: its escrow_version literal picks it; a v1 proof has none (V1 would also accept a v2 object, minus fields).
export const TradeProof = Schema.Union(TradeProofV2, TradeProofV1).annotations({ identifier: "TradeProof" })

export const TradeHistoryItem = Schema.Struct({
  id: Schema.String,
  from: Schema.String,
  to: Schema.String,
  amount_in: Schema.String,
  amount_out: Schema.String,
  at: Timestamp,
  /** The maker's order (bytes32). */
  order_id: Schema.String,
  proof: TradeProof,
}).annotations({ identifier: "TradeHistoryItem" })

const HistoryLimit = Schema.NumberFromString.pipe(
  Schema.int(),
  Schema.between(1, TRADE_HISTORY_LIMIT_MAX),
  Schema.annotations({
    description: `page size, 1 to ${TRADE_HISTORY_LIMIT_MAX}, default ${TRADE_HISTORY_LIMIT_DEFAULT}`,
  }),
)

/**
 * Public market data. No Authentication middleware: `GET /v1/trades` and `scope=all` ignore any bearer (like the
 * take preview); `scope=mine` authenticates the Authorization header itself and needs a master session.
 */
export class TradesApi extends HttpApiGroup.make("trades")
  .add(
    HttpApiEndpoint.get("recent", "/v1/trades")
      .setUrlParams(Schema.Struct({ a: VenueId, b: VenueId }))
      .addSuccess(
        Schema.Struct({ a: Schema.String, b: Schema.String, trades: Schema.Array(RecentTrade) }).annotations({
          examples: [RECENT_TRADES_ANSWER],
        }),
      )
      .addError(InvalidRequest)
      .addError(NotFound)
      .annotate(OpenApi.Summary, "Get a venue pair's recent trades")
      .annotate(
        OpenApi.Description,
        `The last ${RECENT_TRADES} fills settled between venues a and b, in either direction, latest first: from is ` +
          "the venue the taker paid on, amount_in in base units of its token, amount_out in base units of the " +
          "other venue's token. a and b are required and must differ (400 INVALID_REQUEST); a venue that is not " +
          "configured answers 404 NOT_FOUND. Public: needs no token and ignores any. Answers x-event-cursor: " +
          "replay `trade.settled` events after it.",
      ),
  )
  .add(
    HttpApiEndpoint.get("history", "/v1/trades/history")
      .setUrlParams(
        Schema.Struct({
          scope: Schema.optional(Schema.Literal("all", "mine")),
          after: Schema.optional(Schema.String.pipe(Schema.minLength(1), Schema.maxLength(TRADE_CURSOR_MAX))),
          limit: Schema.optional(HistoryLimit),
          a: Schema.optional(VenueId),
          b: Schema.optional(VenueId),
        }),
      )
      .addSuccess(
        Schema.Struct({
          data: Schema.Array(TradeHistoryItem),
          next_cursor: Schema.NullOr(Schema.String),
          has_more: Schema.Boolean,
        }).annotations({ examples: [TRADE_HISTORY] }),
      )
      .addError(InvalidRequest)
      .addError(Unauthorized)
      .addError(Forbidden)
      .addError(NotFound)
      .annotate(OpenApi.Summary, "Page through settled trades with proofs")
      .annotate(
        OpenApi.Description,
        "Settled trades, newest first by settlement time and id, each with its proof (both signed agreements, the " +
          "revealed secret and the settlement transactions; a settlement-v2 trade also its hashlock proof, Fill " +
          "digest and pay authorization) that a third party checks offline with an EIP-712 library. scope=all " +
          "(default) is public and ignores any bearer; scope=mine needs a master session (401 UNAUTHORIZED " +
          "without, or with an unknown, expired or revoked one; 403 FORBIDDEN for a maker credential) and keeps " +
          "trades where the account is the maker or the taker, before pagination. a and b together select one " +
          "pair (either direction); one without the other, or the same venue twice, is a 400; an unknown venue " +
          `a 404. limit 1 to ${TRADE_HISTORY_LIMIT_MAX} (default ${TRADE_HISTORY_LIMIT_DEFAULT}). Follow ` +
          `next_cursor (opaque, at most ${TRADE_CURSOR_MAX} characters, null on the last page, valid only with ` +
          "the same scope, account, a and b, else 400) in `after` while has_more. Answers x-event-cursor: replay " +
          "`trade.settled` events after it.",
      )
      .annotate(OpenApi.Override, { security: [{}, { session: [] }] }),
  )
  .annotate(OpenApi.Title, "Trades")
  .annotate(
    OpenApi.Description,
    "Public market data: settled fills between venues, each with a proof a third party checks offline.",
  ) {}
