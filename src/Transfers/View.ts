import { Effect } from "effect"
import { withdrawalsOfPreparations } from "../Withdrawals/Repo.ts"
import { withdrawalView } from "../Withdrawals/View.ts"
import type { TransferRow } from "./Repo.ts"

/**
 * The spec's Transfer intent for each row, in order. The withdrawal shown is the one submitted from the intent's
 * preparation (at most one), read in one query for the whole page.
 */
export const transferViews = (rows: ReadonlyArray<TransferRow>) =>
  Effect.gen(function* () {
    const preparations = rows.flatMap((r) => (r.preparation_id === null ? [] : [r.preparation_id]))
    const withdrawals = yield* withdrawalsOfPreparations(preparations).pipe(Effect.orDie)
    return rows.map((r) => {
      const withdrawal = r.preparation_id === null ? undefined : withdrawals.get(r.preparation_id)
      return {
        id: r.id,
        client_transfer_id: r.client_transfer_id,
        client_take_id: r.client_take_id,
        from: r.from_venue,
        to: r.to_venue,
        amount_in: r.amount_in,
        min_out: r.min_out,
        max_parts: r.max_parts,
        payer: r.payer,
        recipient: r.recipient,
        from_chain_id: r.from_chain_id,
        to_chain_id: r.to_chain_id,
        withdrawal_preparation:
          r.preparation_amount === null || r.preparation_created_at === null
            ? null
            : {
                amount: r.preparation_amount,
                typed_data: r.preparation_typed_data,
                created_at: r.preparation_created_at.toISOString(),
              },
        withdrawal: withdrawal === undefined ? null : withdrawalView(withdrawal),
        take_id: r.take_id,
        take_final: r.take_final,
        cancelled_at: r.cancelled_at === null ? null : r.cancelled_at.toISOString(),
        created_at: r.created_at.toISOString(),
      }
    })
  })
