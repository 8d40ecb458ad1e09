import { Schema } from "effect"

/**
 * The error catalogue: one tagged error per wire code, each with its HTTP status and its default
 * `retryable` (spec Errors 2: a transport hint, never permission for a new intent). Domain, stores,
 * actors and entity protocols fail with these classes (they are schemas: they cross runners over
 * msgpack); `src/Http/Errors.ts` is the one encoder that turns them into the envelope
 * `{error:{code,message,request_id,retryable}}`. No other module writes a code string or an envelope.
 *
 * `retryable` on an instance overrides the code's default when the failing call knows better
 * (VENUE_UNAVAILABLE is retryable when the venue did not answer, not when it is not configured).
 * Handlers: `return yield* new NotFound({ message: "no such order" })`.
 */
const fields = { message: Schema.String, retryable: Schema.optional(Schema.Boolean) }

export class InvalidRequest extends Schema.TaggedError<InvalidRequest>()("InvalidRequest", fields) {
  static readonly code = "INVALID_REQUEST"
  static readonly status = 400
  static readonly retryable = false
  static readonly description =
    "Malformed JSON, JSON nested deeper than 64 levels, a failed field, or an unknown field."
}

export class Unauthorized extends Schema.TaggedError<Unauthorized>()("Unauthorized", fields) {
  static readonly code = "UNAUTHORIZED"
  static readonly status = 401
  static readonly retryable = false
  static readonly description = "Missing, malformed, unknown, expired or revoked bearer."
}

export class Forbidden extends Schema.TaggedError<Forbidden>()("Forbidden", fields) {
  static readonly code = "FORBIDDEN"
  static readonly status = 403
  static readonly retryable = false
  static readonly description = "The principal may not use this route."
}

export class AccessRequired extends Schema.TaggedError<AccessRequired>()("AccessRequired", fields) {
  static readonly code = "ACCESS_REQUIRED"
  static readonly status = 403
  static readonly retryable = false
  static readonly description = "New commitment while beta access is not granted."
}

export class NotFound extends Schema.TaggedError<NotFound>()("NotFound", fields) {
  static readonly code = "NOT_FOUND"
  static readonly status = 404
  static readonly retryable = false
  static readonly description = "No such route or resource."
}

export class MethodNotAllowed extends Schema.TaggedError<MethodNotAllowed>()("MethodNotAllowed", fields) {
  static readonly code = "METHOD_NOT_ALLOWED"
  static readonly status = 405
  static readonly retryable = false
  static readonly description = "The path exists, not for this method."
}

export class StateConflict extends Schema.TaggedError<StateConflict>()("StateConflict", fields) {
  static readonly code = "STATE_CONFLICT"
  static readonly status = 409
  static readonly retryable = false
  static readonly description = "A client id reused with other parameters, or a state clash."
}

export class AccountInUse extends Schema.TaggedError<AccountInUse>()("AccountInUse", fields) {
  static readonly code = "ACCOUNT_IN_USE"
  static readonly status = 409
  static readonly retryable = false
  static readonly description = "An open order, nonfinal fill or pending withdrawal uses it."
}

export class LeaseExpired extends Schema.TaggedError<LeaseExpired>()("LeaseExpired", fields) {
  static readonly code = "LEASE_EXPIRED"
  static readonly status = 409
  static readonly retryable = false
  static readonly description = "The quote identity's lease is not live at this generation."
}

export class QuoteStale extends Schema.TaggedError<QuoteStale>()("QuoteStale", fields) {
  static readonly code = "QUOTE_STALE"
  static readonly status = 409
  static readonly retryable = false
  static readonly description = "The quote set's sequence does not exceed the last one."
}

export class ChallengeUsed extends Schema.TaggedError<ChallengeUsed>()("ChallengeUsed", fields) {
  static readonly code = "CHALLENGE_USED"
  static readonly status = 409
  static readonly retryable = false
  static readonly description = "The challenge nonce was already used."
}

export class WithdrawalPending extends Schema.TaggedError<WithdrawalPending>()("WithdrawalPending", fields) {
  static readonly code = "WITHDRAWAL_PENDING"
  static readonly status = 409
  static readonly retryable = false
  static readonly description = "A queued, submitting or unknown withdrawal on this venue account blocks another."
}

export class ClosePending extends Schema.TaggedError<ClosePending>()("ClosePending", fields) {
  static readonly code = "CLOSE_PENDING"
  static readonly status = 409
  static readonly retryable = false
  static readonly description = "A close of this order is already pending."
}

export class CloseLimit extends Schema.TaggedError<CloseLimit>()("CloseLimit", fields) {
  static readonly code = "CLOSE_LIMIT"
  static readonly status = 409
  static readonly retryable = false
  static readonly description = "The owner has 10 pending closes on this chain; wait for one to end."
}

export class OrderManaged extends Schema.TaggedError<OrderManaged>()("OrderManaged", fields) {
  static readonly code = "ORDER_MANAGED"
  static readonly status = 409
  static readonly retryable = false
  static readonly description = "This service operates the order: close it with POST /v1/closes, not by signature."
}

export class PayloadTooLarge extends Schema.TaggedError<PayloadTooLarge>()("PayloadTooLarge", fields) {
  static readonly code = "PAYLOAD_TOO_LARGE"
  static readonly status = 413
  static readonly retryable = false
  static readonly description = "The request body exceeds 64 KiB."
}

export class UpgradeRequired extends Schema.TaggedError<UpgradeRequired>()("UpgradeRequired", fields) {
  static readonly code = "UPGRADE_REQUIRED"
  static readonly status = 426
  static readonly retryable = false
  static readonly description = "GET /v1/stream is a WebSocket: connect with Upgrade: websocket."
}

export class ChallengeUnknown extends Schema.TaggedError<ChallengeUnknown>()("ChallengeUnknown", fields) {
  static readonly code = "CHALLENGE_UNKNOWN"
  static readonly status = 422
  static readonly retryable = false
  static readonly description = "No challenge was issued with this nonce."
}

export class ChallengeExpired extends Schema.TaggedError<ChallengeExpired>()("ChallengeExpired", fields) {
  static readonly code = "CHALLENGE_EXPIRED"
  static readonly status = 422
  static readonly retryable = false
  static readonly description = "The challenge or signed message has expired."
}

export class ChallengeNotYetValid extends Schema.TaggedError<ChallengeNotYetValid>()("ChallengeNotYetValid", fields) {
  static readonly code = "CHALLENGE_NOT_YET_VALID"
  static readonly status = 422
  static readonly retryable = false
  static readonly description = "The signed message is not valid yet."
}

export class SiweMalformed extends Schema.TaggedError<SiweMalformed>()("SiweMalformed", fields) {
  static readonly code = "SIWE_MALFORMED"
  static readonly status = 422
  static readonly retryable = false
  static readonly description = "The message is not a well-formed EIP-4361 message."
}

export class SiweDomainMismatch extends Schema.TaggedError<SiweDomainMismatch>()("SiweDomainMismatch", fields) {
  static readonly code = "SIWE_DOMAIN_MISMATCH"
  static readonly status = 422
  static readonly retryable = false
  static readonly description = "The message names another domain."
}

export class SiweUriMismatch extends Schema.TaggedError<SiweUriMismatch>()("SiweUriMismatch", fields) {
  static readonly code = "SIWE_URI_MISMATCH"
  static readonly status = 422
  static readonly retryable = false
  static readonly description = "The message names another URI."
}

export class SiweChainMismatch extends Schema.TaggedError<SiweChainMismatch>()("SiweChainMismatch", fields) {
  static readonly code = "SIWE_CHAIN_MISMATCH"
  static readonly status = 422
  static readonly retryable = false
  static readonly description = "The message names another chain id."
}

export class SiweAddressMismatch extends Schema.TaggedError<SiweAddressMismatch>()("SiweAddressMismatch", fields) {
  static readonly code = "SIWE_ADDRESS_MISMATCH"
  static readonly status = 422
  static readonly retryable = false
  static readonly description = "The message names another address."
}

export class SiweNonceMismatch extends Schema.TaggedError<SiweNonceMismatch>()("SiweNonceMismatch", fields) {
  static readonly code = "SIWE_NONCE_MISMATCH"
  static readonly status = 422
  static readonly retryable = false
  static readonly description = "The message carries another nonce."
}

export class SignatureMalformed extends Schema.TaggedError<SignatureMalformed>()("SignatureMalformed", fields) {
  static readonly code = "SIGNATURE_MALFORMED"
  static readonly status = 422
  static readonly retryable = false
  static readonly description = "Not a 65-byte r||s||v signature (v 0/1/27/28)."
}

export class SignatureMalleable extends Schema.TaggedError<SignatureMalleable>()("SignatureMalleable", fields) {
  static readonly code = "SIGNATURE_MALLEABLE"
  static readonly status = 422
  static readonly retryable = false
  static readonly description = "High-s signature (EIP-2): sign again."
}

export class SignatureInvalid extends Schema.TaggedError<SignatureInvalid>()("SignatureInvalid", fields) {
  static readonly code = "SIGNATURE_INVALID"
  static readonly status = 422
  static readonly retryable = false
  static readonly description = "The signature is not by the required signer."
}

export class BelowMinimum extends Schema.TaggedError<BelowMinimum>()("BelowMinimum", fields) {
  static readonly code = "BELOW_MINIMUM"
  static readonly status = 422
  static readonly retryable = false
  static readonly description =
    "The amount is below the minimum (a close: 1,000,000 base units, or the venue's release_minimum into margin)."
}

export class InsufficientBalance extends Schema.TaggedError<InsufficientBalance>()("InsufficientBalance", fields) {
  static readonly code = "INSUFFICIENT_BALANCE"
  static readonly status = 422
  static readonly retryable = false
  static readonly description = "The amount exceeds what is available."
}

export class NoLiquidity extends Schema.TaggedError<NoLiquidity>()("NoLiquidity", fields) {
  static readonly code = "NO_LIQUIDITY"
  static readonly status = 422
  static readonly retryable = false
  static readonly description = "The live quotes cannot route this take (min_out not reachable within max_parts)."
}

export class PayerNotLinked extends Schema.TaggedError<PayerNotLinked>()("PayerNotLinked", fields) {
  static readonly code = "PAYER_NOT_LINKED"
  static readonly status = 422
  static readonly retryable = false
  static readonly description = "The payer is not the account this master linked on the take's from venue."
}

export class VenueRefused extends Schema.TaggedError<VenueRefused>()("VenueRefused", fields) {
  static readonly code = "VENUE_REFUSED"
  static readonly status = 422
  static readonly retryable = false
  static readonly description = "The venue refused the request; the message says why."
}

export class RateLimited extends Schema.TaggedError<RateLimited>()("RateLimited", fields) {
  static readonly code = "RATE_LIMITED"
  static readonly status = 429
  static readonly retryable = true
  static readonly description =
    "Budget exhausted; wait Retry-After seconds and retry the same request (retryable: true)."
}

export class Internal extends Schema.TaggedError<Internal>()("Internal", fields) {
  static readonly code = "INTERNAL"
  static readonly status = 500
  static readonly retryable = true
  static readonly description = "Unexpected failure; safe to retry the same request."
}

export class ChainUnavailable extends Schema.TaggedError<ChainUnavailable>()("ChainUnavailable", fields) {
  static readonly code = "CHAIN_UNAVAILABLE"
  static readonly status = 503
  static readonly retryable = true
  static readonly description = "A chain node failed; retry later."
}

export class VenueUnavailable extends Schema.TaggedError<VenueUnavailable>()("VenueUnavailable", fields) {
  static readonly code = "VENUE_UNAVAILABLE"
  static readonly status = 503
  static readonly retryable = false
  static readonly description = "The venue's API failed or is not configured."
}

export class ServiceUnavailable extends Schema.TaggedError<ServiceUnavailable>()("ServiceUnavailable", fields) {
  static readonly code = "SERVICE_UNAVAILABLE"
  static readonly status = 503
  static readonly retryable = true
  static readonly description =
    "A part of the service (an actor, the cluster) did not answer in time; retry the same request."
}

/** Every class of the catalogue, in the README's order. */
export const CATALOGUE = [
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
  ServiceUnavailable,
] as const

/** A class of the catalogue (its statics: code, status, retryable, description). */
export type CatalogueClass = (typeof CATALOGUE)[number]

/** An error of the catalogue. */
export type CatalogueError = InstanceType<CatalogueClass>

/** A wire code of the catalogue. */
export type ErrorCode = CatalogueClass["code"]

const byTag: ReadonlyMap<string, CatalogueClass> = new Map(CATALOGUE.map((C) => [C._tag, C]))

/** The class of a catalogue error (its code, status and default retryable). */
export const classOf = (e: CatalogueError): CatalogueClass => byTag.get(e._tag) as CatalogueClass

/** Whether `u` is an error of the catalogue. */
export const isCatalogueError = (u: unknown): u is CatalogueError =>
  typeof u === "object" && u !== null && CATALOGUE.some((C) => u instanceof C)

/** The error's `retryable`: its own when set, else its code's. */
export const retryableOf = (e: CatalogueError): boolean => e.retryable ?? classOf(e).retryable
