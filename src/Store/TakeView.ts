import { Effect, Option } from "effect"
import { type FillRow, type FillTransaction, findTake, type TakeRow, takeFills, takeTransactions } from "./Takes.ts"

/**
 * A take as the API shows it (POST /v1/takes, POST /v1/takes/{id}/signatures, GET /v1/takes/{id}; transfers embed
 * it). Amounts are decimal strings of base units (`amount_in` of the `from` token, `amount_out` of the `to` token),
 * timestamps RFC 3339, expiries Unix seconds. Never shows secrets or signatures: `to_sign` is what the payer signs.
 */
export interface TakeTransactionView {
  readonly kind: string
  readonly chain_id: number
  readonly hash: string | null
  readonly status: string
  readonly error: string
  readonly at: string
}

export interface TakeFillView {
  readonly fill_id: string
  readonly order_id: string
  readonly sequence: number
  readonly quote_index: number
  readonly amount_in: string
  readonly amount_out: string
  readonly payee: string
  readonly hashlock: string
  readonly maker_expiry: number
  readonly taker_expiry: number
  readonly state: string
  readonly final: boolean
  readonly error: string
  readonly transactions: ReadonlyArray<TakeTransactionView>
}

export interface TakeView {
  readonly id: string
  readonly client_take_id: string
  readonly from: string
  readonly to: string
  readonly amount_in: string
  readonly min_out: string
  readonly payer: string
  readonly recipient: string
  readonly max_parts: number
  readonly total_in: string
  readonly total_out: string
  readonly state: string
  readonly final: boolean
  readonly pay_deadline: string
  readonly signed_at: string | null
  readonly error: string
  readonly created_at: string
  readonly updated_at: string
  readonly fills: ReadonlyArray<TakeFillView>
}

/** One entry of `to_sign`: a `permit` (no fill_id) or a `margin_move` (the Fill agreement of `fill_id`). */
export interface TakeSignItem {
  readonly kind: "permit" | "margin_move"
  readonly signer: string
  // biome-ignore lint/suspicious/noExplicitAny: wire typed data is JSON
  readonly typed_data: any
  readonly fill_id?: string
}

export interface TakeWithSignItems {
  readonly take: TakeView
  readonly toSign: ReadonlyArray<TakeSignItem>
}

const transactionView = (t: FillTransaction): TakeTransactionView => ({
  kind: t.kind,
  chain_id: t.chain_id,
  hash: t.hash,
  status: t.status,
  error: t.error,
  at: t.at.toISOString(),
})

const fillView = (f: FillRow, txs: ReadonlyArray<FillTransaction>): TakeFillView => ({
  fill_id: f.id,
  order_id: f.order_id,
  sequence: Number(f.sequence),
  quote_index: f.quote_index,
  amount_in: f.amount_in,
  amount_out: f.amount_out,
  payee: f.payee,
  hashlock: f.hashlock,
  maker_expiry: Number(f.maker_expiry),
  taker_expiry: Number(f.taker_expiry),
  state: f.state,
  final: f.final,
  error: f.error,
  transactions: txs.filter((t) => t.fill_id === f.id).map(transactionView),
})

/** The view of a loaded take row (reads its fills and their transactions). */
export const takeViewOf = (t: TakeRow) =>
  Effect.gen(function* () {
    const [fills, txs] = yield* Effect.all([takeFills(t.id), takeTransactions(t.id)])
    const take: TakeView = {
      id: t.id,
      client_take_id: t.client_take_id,
      from: t.from_venue,
      to: t.to_venue,
      amount_in: t.amount_in,
      min_out: t.min_out,
      payer: t.payer,
      recipient: t.recipient,
      max_parts: t.max_parts,
      total_in: t.total_in,
      total_out: t.total_out,
      state: t.state,
      final: fills.length > 0 && fills.every((f) => f.final),
      pay_deadline: t.pay_deadline.toISOString(),
      signed_at: t.signed_at === null ? null : t.signed_at.toISOString(),
      error: t.error,
      created_at: t.created_at.toISOString(),
      updated_at: t.updated_at.toISOString(),
      fills: fills.map((f) => fillView(f, txs)),
    }
    return { take, toSign: t.to_sign as ReadonlyArray<TakeSignItem> } satisfies TakeWithSignItems
  })

/**
 * The take `id` with its `to_sign`, or None. No ownership check: callers compare `master` first (`takeOwnedBy`).
 */
export const takeView = (id: string) =>
  Effect.flatMap(findTake(id), (row) =>
    Option.isNone(row) ? Effect.succeedNone : Effect.map(takeViewOf(row.value), Option.some),
  )

/** The take `id` if `master` owns it (another master's take is indistinguishable from none). */
export const takeOwnedBy = (id: string, master: string) =>
  Effect.flatMap(findTake(id), (row) =>
    Option.isSome(row) && row.value.master === master
      ? Effect.map(takeViewOf(row.value), Option.some)
      : Effect.succeedNone,
  )
