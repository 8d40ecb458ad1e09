import { Effect } from "effect"
import type { VenueConfig } from "../Config.ts"
import { CLOSE_MINIMUM, isZeroOrder } from "../Domain/Close.ts"
import { BelowMinimum, OrderManaged } from "../Domain/Errors.ts"
import type { EscrowOrderRow } from "./Repo.ts"

/**
 * The close rules on an order's amounts (spec: close prepare rule 4), for a close by signature; `isManaged` says
 * whether this service operates an order (those close with POST /v1/closes).
 * A v2 order (not the zero id) is always closeable by its owner's signature, managed or not and whatever it
 * holds: v2's close is sticky — `closeWithSig` records closeRequested (no lock can be added any more, and each
 * lock that ends later pays the owner) even with nothing available, and succeeds on chain. It is the owner's
 * only way to stop a v2 order (v2's operatorClose releases what is available but sets nothing), so the API
 * never refuses it as nothing-to-close.
 */
export const closeable = (
  venue: VenueConfig,
  row: EscrowOrderRow,
  toMargin: boolean,
  isManaged: (operator: string) => boolean,
): Effect.Effect<void, BelowMinimum | OrderManaged> =>
  Effect.gen(function* () {
    if (row.escrow_version === 2 && !isZeroOrder(row.order_id)) return
    const available = BigInt(row.available)
    if (isZeroOrder(row.order_id)) {
      if (available === 0n) return yield* new BelowMinimum({ message: "the available balance is 0: nothing to close" })
      const minimum = BigInt(venue.release_minimum)
      if (toMargin && available < minimum) {
        return yield* new BelowMinimum({
          message:
            `a release of the available balance into margin needs at least ${minimum} base units on ${venue.id}; ` +
            "close it to the wallet (to_margin false) instead",
        })
      }
      return
    }
    if (isManaged(row.operator)) {
      return yield* new OrderManaged({ message: "this service operates the order: close it with POST /v1/closes" })
    }
    if (available < CLOSE_MINIMUM) {
      return yield* new BelowMinimum({
        message: `the order holds ${available} base units available; a close needs at least ${CLOSE_MINIMUM}`,
      })
    }
  })
