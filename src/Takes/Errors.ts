import { Data, type Effect } from "effect"
import {
  ChainUnavailable,
  InvalidRequest,
  NoLiquidity,
  NotFound,
  PayerNotLinked,
  StateConflict,
} from "../Domain/Errors.ts"

/**
 * Why a take's creation refused (src/Takes/Create.ts, src/Takes.ts createTake). The transfer desk keeps them as the
 * reason a transfer has no take yet; the Takes and Transfers services answer them as catalogue errors (takeFailure).
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

/** A refusal of take creation as the catalogue error the API answers (POST /v1/takes, the transfer routes). */
export const takeFailure = (
  e: TakeCreateError,
): Effect.Effect<
  never,
  InvalidRequest | NotFound | StateConflict | PayerNotLinked | NoLiquidity | ChainUnavailable
> => {
  switch (e._tag) {
    case "TakeInvalid":
      return new InvalidRequest({ message: e.message })
    case "TakeVenueUnknown":
      return new NotFound({ message: `unknown venue ${e.venue}` })
    case "TakeConflict":
      return new StateConflict({ message: "client_take_id was used with other parameters" })
    case "TakePayerNotLinked":
      return new PayerNotLinked({ message: `payer is not your linked account on ${e.venue}` })
    case "TakeNoLiquidity":
      return new NoLiquidity({ message: e.message })
    case "TakeChainUnavailable":
      return new ChainUnavailable({ message: "the from chain's node did not answer; retry", retryable: true })
    case "TakeUnpaidLocks":
      return new StateConflict({
        message: `this account left ${e.unpaid} locks unpaid (limit ${e.limit}): no new take until they are settled`,
      })
  }
}
