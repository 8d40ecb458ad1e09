/**
 * Local errors of the venue layer (Data.TaggedError: they do not cross HTTP or the cluster as such; callers map
 * them to the API's codes, e.g. VenueUnavailable → VENUE_UNAVAILABLE 503, WithdrawalRequestInvalid → 422).
 */
import { Data } from "effect"

/** A read from the venue failed: timeout, transport error, 5xx, or an answer we cannot parse. Retryable. */
export class VenueUnavailable extends Data.TaggedError("VenueUnavailable")<{
  readonly venue: string
  readonly reason: string
}> {}

/**
 * A withdrawal cannot be built as asked: amount zero or not representable at the venue's precision, a
 * destination the route does not allow, a bad time. Not retryable with the same input.
 */
export class WithdrawalRequestInvalid extends Data.TaggedError("WithdrawalRequestInvalid")<{
  readonly venue: string
  readonly reason: string
}> {}

/**
 * Typed data handed back for submission is not one this adapter builds (wrong primary type, domain, types,
 * environment or field shapes). Nothing was sent.
 */
export class TypedDataRejected extends Data.TaggedError("TypedDataRejected")<{
  readonly venue: string
  readonly reason: string
}> {}

/**
 * Aster: no usable agent key for the user. `transient` when the service could not read or open it (its store
 * failing, its keyring not matching): not the account's doing, and nothing was sent, so a retry may succeed.
 * Otherwise the account has none (never registered, expired): link it again.
 */
export class AgentUnavailable extends Data.TaggedError("AgentUnavailable")<{
  readonly user: string
  readonly reason: string
  readonly transient?: boolean
}> {}
