/**
 * An order as every route of the orders group answers it (the Order schema of src/Orders/Api.ts): the row, its
 * relayed transactions, its latest quote set and its margin move.
 */
import { Effect, Option } from "effect"
import { SESSION_ONLY_ORDER_FIELDS } from "../Domain/CredentialVisibility.ts"
import type { QuoteSetRow } from "./QuoteSets.ts"
import { latestQuoteSet } from "./QuoteSets.ts"
import { type OrderRow, orderTransactions } from "./Repo.ts"

/** One item the owner signs (orders.to_sign, in this order: venue_transfer when present, fund_order, permit). */
export interface SignItem {
  readonly kind: "venue_transfer" | "fund_order" | "permit"
  readonly signer: string
  // biome-ignore lint/suspicious/noExplicitAny: wire typed data is JSON
  readonly typed_data: any
}

/** The order view's `quote_set`; a v2 set adds issued_at and its hashlock root and count (not the hashlocks). */
export const quoteSetView = (q: QuoteSetRow) => ({
  sequence: Number(q.sequence),
  expires_at: q.valid_until.toISOString(),
  quotes: q.quotes,
  signature: q.signature,
  created_at: q.created_at.toISOString(),
  valid_until: q.valid_until.toISOString(),
  quote_size: q.quote_size,
  identity_generation: q.identity_generation,
  active: q.active,
  ...(q.hashlock_root === null
    ? {}
    : { issued_at: Number(q.issued_at), hashlock_root: q.hashlock_root, hashlock_count: q.hashlock_count! }),
})

/** The wire view of an order (reads its transactions and latest quote set; needs the database). */
export const orderView = (row: OrderRow) =>
  Effect.zipWith(
    orderTransactions(row.id).pipe(Effect.orDie),
    latestQuoteSet(row.id).pipe(Effect.orDie),
    (txs, quoteSet) => ({
      id: row.id,
      venue: row.venue,
      receive_venue: row.receive_venue,
      owner_address: row.owner_address,
      state: row.state,
      error: row.error,
      amount: row.amount,
      escrow_available: row.escrow_available,
      quotable: row.escrow_available,
      filled: row.filled,
      received: row.received,
      last_sequence: Option.isSome(quoteSet) ? Number(quoteSet.value.sequence) : null,
      quote_set: Option.isSome(quoteSet) ? quoteSetView(quoteSet.value) : null,
      margin_move:
        row.venue_transfer_id === null
          ? null
          : {
              venue: row.venue,
              amount: row.vt_amount,
              // Absent until the venue acknowledged the transfer, as on the withdrawal itself.
              ...(row.vt_venue_ref === null ? {} : { venue_ref: row.vt_venue_ref }),
              state: row.vt_state,
              error: row.vt_error,
              at: row.vt_at?.toISOString() ?? null,
            },
      transactions: txs.map((t) => ({ ...t, at: t.at.toISOString() })),
      created_at: row.created_at.toISOString(),
      updated_at: row.updated_at.toISOString(),
      client_order_id: row.client_order_id,
      quote_identity_id: row.quote_identity_id,
      quote_signer: row.quote_signer,
    }),
  )

export type OrderView = Effect.Effect.Success<ReturnType<typeof orderView>>

export type CredentialOrderView = Omit<OrderView, (typeof SESSION_ONLY_ORDER_FIELDS)[number]>

/** The order as a `quote` credential sees it (PUT and DELETE /v1/orders/{id}/quotes). */
export const credentialOrderView = (view: OrderView): CredentialOrderView => {
  const shown: Record<string, unknown> = { ...view }
  for (const field of SESSION_ONLY_ORDER_FIELDS) delete shown[field]
  return shown as CredentialOrderView
}

/** An order with what its owner signs (POST /v1/orders, GET /v1/orders/{id}/preparation). */
export interface OrderPreparation {
  readonly order: OrderView
  readonly to_sign: ReadonlyArray<SignItem>
}
