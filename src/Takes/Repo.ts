import { SqlClient, type SqlError, type Statement } from "@effect/sql"
import { Effect, Option } from "effect"
import { appendJournal, journalNotify, journalRowsInsert } from "../Sql/Journal.ts"

/**
 * Takes and their fills: rows, reads and the transitions this module owns (reserved → signed, reserved → expired).
 * States and columns: migrations/0011_takes.ts. Creation (routing, secrets, typed data) is src/Takes/Create.ts;
 * the wire view is src/Takes/View.ts; the Settlement actor drives fills from `signed` on.
 *
 * "Effective" state: a take still `reserved` whose `pay_deadline` has passed (database time) is shown and treated as
 * `expired` (its fills too), whether or not `expireUnsignedTakes` has marked it yet; its reservations no longer
 * count (src/Takes/QuoteCandidates.ts).
 */

export interface TakeRow {
  readonly id: string
  readonly master: string
  readonly client_take_id: string
  readonly from_venue: string
  readonly to_venue: string
  readonly amount_in: string
  readonly min_out: string
  readonly payer: string
  readonly recipient: string
  readonly max_parts: number
  readonly total_in: string
  readonly total_out: string
  /** Effective state (see above). */
  readonly state: string
  readonly pay_deadline: Date
  /** Unix seconds of pay_deadline. */
  readonly pay_deadline_seconds: string
  readonly to_sign: ReadonlyArray<unknown>
  readonly permit_signature: string | null
  readonly signed_at: Date | null
  readonly error: string
  readonly created_at: Date
  readonly updated_at: Date
  /** The pay window is still open (database time). */
  readonly open: boolean
  /** Settlement v2 (migrations/0019): 1 or 2; the rest is null for a v1 take. */
  readonly escrow_version: number
  /** The client's pay key, lowercase. */
  readonly pay_key_address: string | null
  /** payBy of every Fill (chain seconds). */
  readonly pay_by: string | null
  /** payBy has not passed (database time). */
  readonly pay_open: boolean
  readonly pay_authorization: string | null
  readonly pay_authorized_at: Date | null
}

export interface FillRow {
  readonly id: string
  readonly take_id: string
  readonly fill_key: string
  readonly order_id: string
  readonly maker_venue: string
  readonly taker_venue: string
  readonly sequence: string
  readonly quote_index: number
  readonly quote_identity_id: string
  readonly amount_in: string
  readonly amount_out: string
  readonly payer: string
  readonly payee: string
  readonly recipient: string
  readonly hashlock: string
  readonly maker_expiry: string
  readonly taker_expiry: string
  /** Effective state (see above). */
  readonly state: string
  readonly final: boolean
  readonly fill: Record<string, unknown>
  readonly signature: string | null
  readonly error: string
  readonly revealed_at: Date | null
  readonly settled_at: Date | null
  readonly created_at: Date
  readonly updated_at: Date
  /** v2: the Fill digest (key of the lock and the payment), its hashlock index and the pay key's cancel. */
  readonly fill_digest: string | null
  readonly hashlock_index: number | null
  readonly cancel_signature: string | null
  /** v2: the state of the fill's lock in the v2 escrow index (final rows only), or null while none is indexed. */
  readonly lock_state: string | null
}

const takeColumns = `
  t.id::text as id, t.master, t.client_take_id, t.from_venue, t.to_venue, t.amount_in::text as amount_in,
  t.min_out::text as min_out, t.payer, t.recipient, t.max_parts, t.total_in::text as total_in,
  t.total_out::text as total_out,
  case when t.state = 'reserved' and t.pay_deadline <= now() then 'expired' else t.state end as state,
  t.pay_deadline, extract(epoch from t.pay_deadline)::bigint::text as pay_deadline_seconds, t.to_sign,
  t.permit_signature, t.signed_at, t.error, t.created_at, t.updated_at, t.pay_deadline > now() as open,
  t.escrow_version::int as escrow_version, t.pay_key_address, t.pay_by::text as pay_by,
  coalesce(t.pay_by >= extract(epoch from now()), false) as pay_open, t.pay_authorization, t.pay_authorized_at`

const fillColumns = `
  f.id::text as id, f.take_id::text as take_id, f.fill_key, f.order_id, f.maker_venue, f.taker_venue,
  f.sequence::text as sequence, f.quote_index, f.quote_identity_id::text as quote_identity_id,
  f.amount_in::text as amount_in, f.amount_out::text as amount_out, f.payer, f.payee, f.recipient, f.hashlock,
  f.maker_expiry::text as maker_expiry, f.taker_expiry::text as taker_expiry,
  case when f.state = 'reserved' and t.pay_deadline <= now() then 'expired' else f.state end as state,
  f.final or (f.state = 'reserved' and t.pay_deadline <= now()) as final,
  f.fill, f.signature, f.error, f.revealed_at, f.settled_at, f.created_at, f.updated_at,
  f.fill_digest, f.hashlock_index, f.cancel_signature,
  (select l.state from escrow_v2_locks l where l.venue = f.maker_venue and l.fill_digest = f.fill_digest) as lock_state`

export interface FillTransaction {
  readonly fill_id: string
  /** The escrow function: lock, pay, claim, claimPayment, cancelLock, refund or refundPayment. */
  readonly kind: string
  readonly chain_id: number
  readonly hash: string | null
  readonly status: string
  readonly error: string
  readonly at: Date
}

/** A fill's relayer keys by escrow function (the `values` of takeDetail's transactions). */
const TRANSACTION_KEYS = `
  ('lock', f.lock_key), ('pay', f.pay_key), ('claim', f.claim_key), ('claimPayment', f.claim_payment_key),
  ('cancelLock', f.cancel_key), ('refund', f.refund_key), ('refundPayment', f.refund_payment_key)`

/**
 * The fields of a fill the take's view shows (View.ts): the only ones `takeDetail` reads into its JSON, so no
 * signature of a fill is loaded for a view.
 */
const FILL_VIEW_FIELDS = [
  "id",
  "order_id",
  "sequence",
  "quote_index",
  "amount_in",
  "amount_out",
  "payee",
  "hashlock",
  "maker_expiry",
  "taker_expiry",
  "state",
  "final",
  "fill",
  "error",
  "fill_digest",
  "hashlock_index",
  "lock_state",
] as const satisfies ReadonlyArray<keyof FillRow>

export type FillViewRow = Pick<FillRow, (typeof FILL_VIEW_FIELDS)[number]>

const FILL_VIEW_JSON = FILL_VIEW_FIELDS.map((f) => `'${f}', v.${f}`).join(", ")

/** A take with its fills (to_sign order) and their relayed transactions (submission order): what its view shows. */
export interface TakeDetail {
  readonly take: TakeRow
  readonly fills: ReadonlyArray<FillViewRow>
  readonly transactions: ReadonlyArray<FillTransaction>
}

/** `at` arrives as JSON text (json_agg); the rest as FillTransaction has it. */
type TransactionJson = Omit<FillTransaction, "at"> & { readonly at: string }

/**
 * The take matching `where` (over `takes t`) with its fills and transactions in one statement, both as JSON arrays
 * beside the take's columns: every take request reads a view, once or twice, and these were three round trips.
 * Fills in the order of `to_sign`'s margin_move items (the route's order: best price first); transactions from the
 * fills' relayer keys, in submission order.
 */
const takeDetail = (sql: SqlClient.SqlClient, where: Statement.Fragment) =>
  sql<TakeRow & { fills_json: ReadonlyArray<FillViewRow>; transactions_json: ReadonlyArray<TransactionJson> }>`
    select ${sql.unsafe(takeColumns)},
      coalesce((
        select json_agg(json_build_object(${sql.unsafe(FILL_VIEW_JSON)}) order by v.ord, v.fill_key) from (
          select ${sql.unsafe(fillColumns)}, (
            select e.ord from jsonb_array_elements(t.to_sign) with ordinality as e(item, ord)
            where e.item ->> 'fill_id' = f.id::text) as ord
          from fills f where f.take_id = t.id) v
      ), '[]') as fills_json,
      coalesce((
        select json_agg(x order by x.request_id) from (
          select f.id::text as fill_id, k.kind, r.chain_id::int as chain_id, r.tx_hash as hash, r.status,
                 coalesce(nullif(r.revert_reason, ''), r.error) as error, r.updated_at as at, r.id as request_id
          from fills f
          cross join lateral (values ${sql.unsafe(TRANSACTION_KEYS)}) as k(kind, key)
          join relayer_requests r on r.idempotency_key = k.key
          where f.take_id = t.id) x
      ), '[]') as transactions_json
    from takes t where ${where}`.pipe(
    Effect.map((rows) =>
      Option.map(Option.fromNullable(rows[0]), ({ fills_json, transactions_json, ...take }) => ({
        take,
        fills: fills_json,
        transactions: transactions_json.map((x) => ({ ...x, at: new Date(x.at) })),
      })),
    ),
  )

/** The take `id` with its fills and transactions (TakeDetail), or None. */
export const findTakeDetail = (id: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) => takeDetail(sql, sql`t.id = ${id}::uuid`))

/** The take of (master, client id) with its fills and transactions (TakeDetail), or None. */
export const findTakeDetailByClientId = (master: string, clientTakeId: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    takeDetail(sql, sql`t.master = ${master} and t.client_take_id = ${clientTakeId}`),
  )

export type SignOutcome =
  | { readonly _tag: "Signed" }
  | { readonly _tag: "AlreadySigned" }
  | { readonly _tag: "Closed"; readonly state: string }
  | { readonly _tag: "Missing" }

/**
 * Stores the payer's signatures (already verified by the caller) and moves the take and its fills reserved →
 * signed, with the `take.signed` journal row, in one statement (atomic alone: one round trip, where a transaction
 * was six), while the pay window is open (database time). The take's update is guarded by its state, so it takes the
 * row's lock and re-checks the guard on the newest version: a concurrent sweep or second signer cannot interleave.
 * `AlreadySigned` when the take is past `reserved` but was signed (a retry); `Closed` when the window has passed or
 * the take ended otherwise.
 */
export const signTake = (p: {
  readonly takeId: string
  readonly master: string
  readonly permitSignature: string
  readonly fillSignatures: ReadonlyMap<string, string>
}): Effect.Effect<SignOutcome, SqlError.SqlError, SqlClient.SqlClient> =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const entry = {
      kind: "take.signed",
      master: p.master,
      payload: { take_id: p.takeId, state: "signed", fill_ids: [...p.fillSignatures.keys()] },
    }
    // `before`: the take as this statement's snapshot saw it, which says why nothing was updated.
    const [row] = yield* sql<{ updated: boolean; state: string | null; open: boolean | null; signed: boolean | null }>`
      with take as (
        update takes set state = 'signed', permit_signature = ${p.permitSignature}, signed_at = now(),
          updated_at = now()
        where id = ${p.takeId}::uuid and master = ${p.master} and state = 'reserved' and signed_at is null
          and pay_deadline > now()
        returning id
      ), fills as (
        update fills f set state = 'signed', signature = s.signature, updated_at = now()
        from unnest(${[...p.fillSignatures.keys()]}::uuid[], ${[...p.fillSignatures.values()]}::text[])
          as s(id, signature)
        where f.id = s.id and f.take_id = ${p.takeId}::uuid and f.state = 'reserved' and exists (select 1 from take)
        returning f.id
      ), appended as (${journalRowsInsert(sql, [entry], sql`exists (select 1 from take)`)})
      select exists (select 1 from take) as updated, before.state, before.open, before.signed,
        (select count(*)::int from (${journalNotify(sql, [])}) n where exists (select 1 from appended)) as notified
      from (select 1) one
      left join (
        select state, pay_deadline > now() as open, signed_at is not null as signed
        from takes where id = ${p.takeId}::uuid and master = ${p.master}
      ) before on true`
    const { updated, state, open, signed } = row!
    if (updated) return { _tag: "Signed" } as SignOutcome
    if (state === null) return { _tag: "Missing" } as SignOutcome
    // Not updated though the snapshot shows it open and unsigned: another transaction changed it meanwhile (a second
    // signer, the sweep); the statement again, on a snapshot that sees that change.
    if (state === "reserved" && open === true && signed === false) return yield* signTake(p)
    if (signed) return { _tag: "AlreadySigned" } as SignOutcome
    return { _tag: "Closed", state: state === "reserved" ? "expired" : state } as SignOutcome
  })

/**
 * The sweep of unsigned takes: every take still `reserved` whose pay window has passed (database time) becomes
 * `expired`, its `reserved` fills `expired` with final = true, one `take.expired` journal row each; all in one
 * transaction. Nothing is on chain for them. Reservations were already released at the deadline (the sweep only
 * makes it visible in the rows and frees ACCOUNT_IN_USE). Rows another transaction holds are left for the next run.
 * Returns how many takes it expired. Call it periodically (the Settlement actor does).
 */
export const expireUnsignedTakes = (limit = 500, takeId?: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql.withTransaction(
      Effect.gen(function* () {
        const expired = yield* sql<{ id: string; master: string }>`
          update takes t set state = 'expired', error = 'the pay window passed before the signatures came',
            updated_at = now()
          where t.id in (
            select id from takes where state = 'reserved' and pay_deadline <= now()
              ${takeId === undefined ? sql`` : sql`and id = ${takeId}::uuid`}
            order by pay_deadline limit ${limit} for update skip locked)
          returning t.id::text as id, t.master`
        if (expired.length === 0) return 0
        const ids = expired.map((t) => t.id)
        yield* sql`
          update fills set state = 'expired', final = true, updated_at = now(),
            error = 'the pay window passed before the signatures came'
          where take_id in ${sql.in(ids)} and state = 'reserved'`
        for (const t of expired) {
          yield* appendJournal({ kind: "take.expired", master: t.master, payload: { take_id: t.id, state: "expired" } })
        }
        return expired.length
      }),
    ),
  )
