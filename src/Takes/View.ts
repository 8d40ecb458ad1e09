import { Effect, Option } from "effect"
import type { Address, Hex } from "viem"
import { payTakeTypedData } from "../Domain/EscrowTypedDataV2.ts"
import { toWireTypedData } from "../Domain/WireTypedData.ts"
import { type FillTransaction, type FillViewRow, findTakeDetail, type TakeDetail, type TakeRow } from "./Repo.ts"

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
  /** Settlement v2 only: the Fill digest (key of its lock and payment) and its hashlock index in the set. */
  readonly fill_digest?: string
  readonly hashlock_index?: number
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
  /** Settlement v2 only (absent on v1 takes): version 2, the client's pay key, payBy, when it authorised payment. */
  readonly escrow_version?: number
  readonly pay_key?: string
  readonly pay_by?: number
  readonly pay_authorized_at?: string | null
}

/**
 * One entry of `to_sign`: a `permit` (no fill_id), a `margin_move` (the Fill agreement of `fill_id`; v2 adds the Fill's
 * `digest`, which the client recomputes) or, v2 only, the pay key's `pay_authorization` (PayTake).
 */
export interface TakeSignItem {
  readonly kind: "permit" | "margin_move" | "pay_authorization"
  readonly signer: string
  // biome-ignore lint/suspicious/noExplicitAny: wire typed data is JSON
  readonly typed_data: any
  readonly fill_id?: string
  readonly digest?: string
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

/**
 * The pay key's item, offered only once every fill's lock is final and `locked` in the v2 index and payBy has not
 * passed: PayTake over the Fill digests in fill order (`to_sign` order), in the taker v2 escrow's domain (read from
 * the stored Fills, which name it). undefined otherwise (and always for v1).
 */
export const payAuthorizationItem = (
  t: TakeRow,
  fills: ReadonlyArray<Pick<FillViewRow, "fill" | "fill_digest" | "lock_state">>,
): TakeSignItem | undefined => {
  if (t.escrow_version !== 2 || t.pay_key_address === null || !t.pay_open || fills.length === 0) return undefined
  if (!fills.every((f) => f.fill_digest !== null && f.lock_state === "locked")) return undefined
  const first = fills[0]!.fill as { takerChainId: string; takerEscrow: string }
  return {
    kind: "pay_authorization",
    signer: t.pay_key_address,
    typed_data: toWireTypedData(
      payTakeTypedData(
        BigInt(first.takerChainId),
        first.takerEscrow as Address,
        fills.map((f) => f.fill_digest as Hex),
      ),
    ),
  }
}

const v2FillFields = (f: FillViewRow) =>
  f.fill_digest === null ? {} : { fill_digest: f.fill_digest, hashlock_index: f.hashlock_index ?? 0 }

const v2TakeFields = (t: TakeRow) =>
  t.escrow_version !== 2
    ? {}
    : {
        escrow_version: 2,
        pay_key: t.pay_key_address ?? "",
        pay_by: Number(t.pay_by),
        pay_authorized_at: t.pay_authorized_at === null ? null : t.pay_authorized_at.toISOString(),
      }

const fillView = (f: FillViewRow, txs: ReadonlyArray<FillTransaction>): TakeFillView => ({
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
  ...v2FillFields(f),
})

/** The view of a take read with its fills and their transactions (TakeDetail, one statement). */
export const takeViewOf = ({ take: t, fills, transactions: txs }: TakeDetail): TakeWithSignItems => {
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
    ...v2TakeFields(t),
  }
  const stored = t.to_sign as ReadonlyArray<TakeSignItem>
  const pay = payAuthorizationItem(t, fills)
  return { take, toSign: pay === undefined ? stored : [...stored, pay] }
}

/**
 * The take `id` with its `to_sign`, or None. No ownership check: callers compare `master` first (`takeOwnedBy`).
 */
export const takeView = (id: string) => Effect.map(findTakeDetail(id), Option.map(takeViewOf))

/** The take `id` if `master` owns it (another master's take is indistinguishable from none). */
export const takeOwnedBy = (id: string, master: string) =>
  Effect.map(
    findTakeDetail(id),
    Option.flatMap((d) => (d.take.master === master ? Option.some(takeViewOf(d)) : Option.none())),
  )
