/**
 * The take of a transfer intent: created through the takes' own `createTake` (same routing, reservations and sign
 * items as POST /v1/takes) under the transfer's client take id, and recorded on the transfer in the same
 * transaction, so a transfer never points at a take that did not commit and never gets two. A v2 transfer's take
 * names the pay key the client gave (PUT /v1/transfers/{id}/take/pay-key); without one createTake refuses it, so
 * no Fill is reserved and no pay window starts before the key is there.
 */
import { SqlClient } from "@effect/sql"
import { Effect, Option } from "effect"
import { ChainClients } from "../Chain/ChainClients.ts"
import { readTokenBalance } from "../Chain/TokenReads.ts"
import { AppConfig } from "../Config.ts"
import { type CreateTakeInput, createTake } from "../Takes.ts"
import { attachTake, lockTransfer, type TransferRow } from "./Repo.ts"

export const takeInputOf = (t: TransferRow): CreateTakeInput => ({
  master: t.master,
  clientTakeId: t.client_take_id,
  from: t.from_venue,
  to: t.to_venue,
  amountIn: BigInt(t.amount_in),
  minOut: BigInt(t.min_out),
  payer: t.payer,
  recipient: t.recipient,
  maxParts: t.max_parts,
  payKey: t.pay_key ?? undefined,
})

/**
 * The payer's token balance on the `from` chain, in base units; None when the node did not answer (callers
 * answer CHAIN_UNAVAILABLE or try later, never assume a balance).
 */
export const payerBalance = (venueId: string, payer: string) =>
  Effect.gen(function* () {
    const { deployment } = yield* AppConfig
    const venue = deployment.venues.find((v) => v.id === venueId)
    const client = (yield* ChainClients).venue(venueId)
    if (venue === undefined || client === undefined) return Option.none<bigint>()
    return yield* readTokenBalance(client, venue.token, payer).pipe(Effect.option)
  })

export type TakeOutcome =
  | { readonly _tag: "Created"; readonly takeId: string }
  /** Cancelled, or another desk or request recorded a take first: nothing done. */
  | { readonly _tag: "Skipped" }

/**
 * Creates and records the take of a waiting transfer. Fails with createTake's errors (nothing written then).
 * The transfer row stays locked while the take is routed, so a concurrent cancel waits and then finds the take.
 */
export const takeForTransfer = (t: TransferRow) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql.withTransaction(
      Effect.gen(function* () {
        const locked = yield* lockTransfer(t.id)
        if (Option.isNone(locked) || locked.value.take_id !== null || locked.value.cancelled_at !== null) {
          return { _tag: "Skipped" } as TakeOutcome
        }
        const created = yield* createTake(takeInputOf(t))
        const attached = yield* attachTake(t.id, created.take.id)
        if (!attached) return yield* Effect.dieMessage(`transfer ${t.id} changed under its row lock`)
        return { _tag: "Created", takeId: created.take.id } as TakeOutcome
      }),
    ),
  )
