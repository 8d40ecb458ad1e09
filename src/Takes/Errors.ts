import { Data } from "effect"

/**
 * Why `createTake` refused (src/Takes/Create.ts). Transport-neutral: the HTTP handlers of takes and transfers
 * map them to the API's codes (src/Http/TakeFailure.ts).
 */

/** A parameter is out of range (INVALID_REQUEST 400). */
export class TakeInvalid extends Data.TaggedError("TakeInvalid")<{ readonly message: string }> {}

/** `from` or `to` is not a configured venue (NOT_FOUND 404, as the preview answers). */
export class TakeVenueUnknown extends Data.TaggedError("TakeVenueUnknown")<{ readonly venue: string }> {}

/** The client id was used by this master with other parameters (STATE_CONFLICT 409). */
export class TakeConflict extends Data.TaggedError("TakeConflict")<{ readonly takeId: string }> {}

/** The payer is not the address this master linked on `from` (PAYER_NOT_LINKED 422). */
export class TakePayerNotLinked extends Data.TaggedError("TakePayerNotLinked")<{
  readonly venue: string
  readonly payer: string
}> {}

/** No route reaches `min_out` within `max_parts` over the live quotes (NO_LIQUIDITY 422). */
export class TakeNoLiquidity extends Data.TaggedError("TakeNoLiquidity")<{ readonly message: string }> {}

/** The `from` chain's node did not answer the permit reads (CHAIN_UNAVAILABLE 503, retryable). */
export class TakeChainUnavailable extends Data.TaggedError("TakeChainUnavailable")<{ readonly message: string }> {}

/** Settlement v2: the account left more locks unpaid than settlement.max_unpaid_locks (STATE_CONFLICT 409). */
export class TakeUnpaidLocks extends Data.TaggedError("TakeUnpaidLocks")<{
  readonly unpaid: number
  readonly limit: number
}> {}

export type TakeCreateError =
  | TakeInvalid
  | TakeVenueUnknown
  | TakeConflict
  | TakePayerNotLinked
  | TakeNoLiquidity
  | TakeChainUnavailable
  | TakeUnpaidLocks
