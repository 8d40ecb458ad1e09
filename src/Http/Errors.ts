import { HttpApiSchema } from "@effect/platform"
import { Effect, FiberRef, Schema } from "effect"
import { CurrentRequestId } from "./RequestId.ts"

/** Each code's `retryable` when the failing call does not say otherwise: the catalogue's own value. */
const retryableByDefault = new Map<string, boolean>()

/**
 * The error envelope `{error:{code,message,request_id,retryable}}`, one schema per code.
 *
 * Each schema carries its own `code` literal: HttpApi encodes failures through a union of every
 * declared error schema, and schemas of the same shape would all encode as the first member (wrong
 * statuses). The literal also gives OpenAPI an enum per status. `retryable` is the code's default
 * (spec Errors 2: a transport hint): `apiError` and `envelopeResponse` answer it unless a call knows
 * better (VENUE_UNAVAILABLE is retryable when the venue did not answer, not when it is not configured).
 */
const define = <const C extends string>(code: C, status: number, description: string, retryable = false) => {
  retryableByDefault.set(code, retryable)
  return Schema.Struct({
    error: Schema.Struct({
      code: Schema.Literal(code),
      message: Schema.String,
      request_id: Schema.String,
      retryable: retryable
        ? Schema.Boolean.annotations({ description: "true for this code: retry the same request" })
        : Schema.Boolean,
    }),
  }).annotations(
    HttpApiSchema.annotations({
      status,
      description,
      identifier: code
        .toLowerCase()
        .replace(/(^|_)([a-z])/g, (_, __, c: string) => c.toUpperCase())
        .concat("Error"),
    }),
  )
}

/** The catalogue's `retryable` for a code (false for a code it does not know). */
export const retryableFor = (code: string): boolean => retryableByDefault.get(code) ?? false

export type ApiErrorSchema = ReturnType<typeof define<string>>

export const InvalidRequest = define(
  "INVALID_REQUEST",
  400,
  "Malformed JSON, JSON nested deeper than 64 levels, a failed field, or an unknown field.",
)
export const Unauthorized = define("UNAUTHORIZED", 401, "Missing, malformed, unknown, expired or revoked bearer.")
export const Forbidden = define("FORBIDDEN", 403, "The principal may not use this route.")
export const AccessRequired = define("ACCESS_REQUIRED", 403, "New commitment while beta access is not granted.")
export const NotFound = define("NOT_FOUND", 404, "No such route or resource.")
export const MethodNotAllowed = define("METHOD_NOT_ALLOWED", 405, "The path exists, not for this method.")
export const StateConflict = define(
  "STATE_CONFLICT",
  409,
  "A client id reused with other parameters, or a state clash.",
)
export const AccountInUse = define("ACCOUNT_IN_USE", 409, "An open order, nonfinal fill or pending withdrawal uses it.")
export const LeaseExpired = define("LEASE_EXPIRED", 409, "The quote identity's lease is not live at this generation.")
export const QuoteStale = define("QUOTE_STALE", 409, "The quote set's sequence does not exceed the last one.")
export const ChallengeUsed = define("CHALLENGE_USED", 409, "The challenge nonce was already used.")
export const WithdrawalPending = define(
  "WITHDRAWAL_PENDING",
  409,
  "A queued, submitting or unknown withdrawal on this venue account blocks another.",
)
export const ClosePending = define("CLOSE_PENDING", 409, "A close of this order is already pending.")
export const CloseLimit = define(
  "CLOSE_LIMIT",
  409,
  "The owner has 10 pending closes on this chain; wait for one to end.",
)
export const OrderManaged = define(
  "ORDER_MANAGED",
  409,
  "This service operates the order: close it with POST /v1/closes, not by signature.",
)
export const UpgradeRequired = define(
  "UPGRADE_REQUIRED",
  426,
  "GET /v1/stream is a WebSocket: connect with Upgrade: websocket.",
)
export const PayloadTooLarge = define("PAYLOAD_TOO_LARGE", 413, "The request body exceeds 64 KiB.")
export const ChallengeUnknown = define("CHALLENGE_UNKNOWN", 422, "No challenge was issued with this nonce.")
export const ChallengeExpired = define("CHALLENGE_EXPIRED", 422, "The challenge or signed message has expired.")
export const ChallengeNotYetValid = define("CHALLENGE_NOT_YET_VALID", 422, "The signed message is not valid yet.")
export const SiweMalformed = define("SIWE_MALFORMED", 422, "The message is not a well-formed EIP-4361 message.")
export const SiweDomainMismatch = define("SIWE_DOMAIN_MISMATCH", 422, "The message names another domain.")
export const SiweUriMismatch = define("SIWE_URI_MISMATCH", 422, "The message names another URI.")
export const SiweChainMismatch = define("SIWE_CHAIN_MISMATCH", 422, "The message names another chain id.")
export const SiweAddressMismatch = define("SIWE_ADDRESS_MISMATCH", 422, "The message names another address.")
export const SiweNonceMismatch = define("SIWE_NONCE_MISMATCH", 422, "The message carries another nonce.")
export const SignatureMalformed = define("SIGNATURE_MALFORMED", 422, "Not a 65-byte r||s||v signature (v 0/1/27/28).")
export const SignatureMalleable = define("SIGNATURE_MALLEABLE", 422, "High-s signature (EIP-2): sign again.")
export const SignatureInvalid = define("SIGNATURE_INVALID", 422, "The signature is not by the required signer.")
export const BelowMinimum = define(
  "BELOW_MINIMUM",
  422,
  "The amount is below the minimum (a close: 1,000,000 base units, or the venue's release_minimum into margin).",
)
export const InsufficientBalance = define("INSUFFICIENT_BALANCE", 422, "The amount exceeds what is available.")
export const NoLiquidity = define(
  "NO_LIQUIDITY",
  422,
  "The live quotes cannot route this take (min_out not reachable within max_parts).",
)
export const PayerNotLinked = define(
  "PAYER_NOT_LINKED",
  422,
  "The payer is not the account this master linked on the take's from venue.",
)
export const VenueRefused = define("VENUE_REFUSED", 422, "The venue refused the request; the message says why.")
export const RateLimited = define(
  "RATE_LIMITED",
  429,
  "Budget exhausted; wait Retry-After seconds and retry the same request (retryable: true).",
  true,
)
export const Internal = define("INTERNAL", 500, "Unexpected failure; safe to retry the same request.", true)
export const ChainUnavailable = define("CHAIN_UNAVAILABLE", 503, "A chain node failed; retry later.", true)
export const VenueUnavailable = define("VENUE_UNAVAILABLE", 503, "The venue's API failed or is not configured.")

/** Every code with its status; the README's error table and the OpenAPI document mirror it. */
export const ALL_ERRORS = [
  InvalidRequest,
  Unauthorized,
  Forbidden,
  AccessRequired,
  NotFound,
  MethodNotAllowed,
  StateConflict,
  AccountInUse,
  LeaseExpired,
  QuoteStale,
  ChallengeUsed,
  WithdrawalPending,
  ClosePending,
  CloseLimit,
  OrderManaged,
  PayloadTooLarge,
  UpgradeRequired,
  ChallengeUnknown,
  ChallengeExpired,
  ChallengeNotYetValid,
  SiweMalformed,
  SiweDomainMismatch,
  SiweUriMismatch,
  SiweChainMismatch,
  SiweAddressMismatch,
  SiweNonceMismatch,
  SignatureMalformed,
  SignatureMalleable,
  SignatureInvalid,
  BelowMinimum,
  InsufficientBalance,
  NoLiquidity,
  PayerNotLinked,
  VenueRefused,
  RateLimited,
  Internal,
  ChainUnavailable,
  VenueUnavailable,
] as const

export const codeOf = (schema: {
  readonly fields: {
    readonly error: { readonly fields: { readonly code: { readonly literals: ReadonlyArray<unknown> } } }
  }
}) => schema.fields.error.fields.code.literals[0] as string

export const envelopeBody = (code: string, message: string, requestId: string, retryable: boolean) => ({
  error: { code, message, request_id: requestId, retryable },
})

/** The envelope type for one code; distributes over a union of codes. */
export type Envelope<C> = C extends string
  ? {
      readonly error: {
        readonly code: C
        readonly message: string
        readonly request_id: string
        readonly retryable: boolean
      }
    }
  : never

/**
 * Fails with the given error for the current request: `yield* apiError(NotFound, "no such order")`;
 * `retryable` defaults to the code's (true for RATE_LIMITED, INTERNAL, CHAIN_UNAVAILABLE).
 */
export const apiError = <C extends string>(
  schema: Schema.Schema<Envelope<C>, Envelope<C>> & {
    readonly fields: {
      readonly error: { readonly fields: { readonly code: { readonly literals: ReadonlyArray<unknown> } } }
    }
  },
  message: string,
  retryable: boolean = retryableFor(codeOf(schema)),
): Effect.Effect<never, Envelope<C>> =>
  Effect.flatMap(FiberRef.get(CurrentRequestId), (request_id) =>
    Effect.fail({ error: { code: codeOf(schema), message, request_id, retryable } } as Envelope<C>),
  )
