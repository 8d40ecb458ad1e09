import { SqlClient, type Statement } from "@effect/sql"
import { Effect } from "effect"
import { type FadePolicy, fadeFlagged } from "../Domain/FadePolicy.ts"
import { appendJournal } from "../Sql/Journal.ts"
import { identityFades } from "./FadeRecord.ts"
import { advanceFill, type FillRow, finishFill, OUTCOMES_COLUMN, type SettlingFill } from "./Repo.ts"

/**
 * The Settlement actor's rows for settlement-v2 fills (takes.escrow_version = 2; migrations 0019, 0020). Reads gather,
 * per nonfinal v2 fill, what the pure decision (src/Domain/SettlementStepV2.ts) needs; writes reuse v1's guarded
 * state changes (src/Settlement/Repo.ts) inside one transaction with what v2 adds to them:
 * - the last lock of a take seen final journals `take.pay_authorization_requested` once (takes row locked first, so
 *   two fills of one take advancing at once cannot both miss, or both write, it);
 * - on-chain evidence for fades and unpaid locks (settlement_v2_marks, once per fill) and the identity's flag.
 */

export interface SettlingFillV2 extends FillRow {
  readonly fill_digest: string
  readonly sequence: string
  readonly quote_index: number
  readonly maker_expiry: string
  readonly taker_expiry: string
  readonly pay_by: string
  // biome-ignore lint/suspicious/noExplicitAny: the wire v2 Fill (jsonb)
  readonly fill: any
  readonly signature: string | null
  readonly hashlock_proof: ReadonlyArray<string>
  readonly cancel_signature: string | null
  readonly permit_signature: string | null
  // biome-ignore lint/suspicious/noExplicitAny: the take's sign items (jsonb)
  readonly take_to_sign: any
  readonly pay_authorization: string | null
  readonly pay_requested: boolean
  /** Every fill of the take is at locked or beyond (each lock final) and none ended otherwise. */
  readonly take_locks_final: boolean
  /** Some fill of the take has a cancelLock relayed (cancel_key stored): the take is never paid. */
  readonly take_cancelling: boolean
  /** The quote set the fill was routed over (v2 columns). */
  readonly qs_identity_generation: string
  readonly qs_quote_size: string
  readonly qs_issued_at: string
  readonly qs_valid_until: Date
  readonly qs_hashlock_root: string
  readonly qs_hashlock_count: number
  // biome-ignore lint/suspicious/noExplicitAny: stored quotes (jsonb)
  readonly qs_quotes: any
  readonly qs_signature: string
  /** The finalized v2 index of both sides, by Fill digest. */
  readonly lock_state: "locked" | "claimed" | "refunded" | "cancelled" | null
  readonly lock_secret: string | null
  readonly payment_state: "held" | "claimed" | "refunded" | null
  readonly payment_secret: string | null
  readonly public_secret: string | null
  /** The maker's reveal mined on the taker chain, not necessarily final (escrow_v2_seen_secrets), or null. */
  readonly seen_secret: string | null
  /** That reveal's block is above the height the taker chain's index has taken in (final events only). */
  readonly reveal_pending: boolean
  readonly outcomes: SettlingFill["outcomes"]
}

/** The columns of a settling v2 fill (f: fills, t: its take, o: its order, q: its quote set, l/p: the v2 index). */
const SETTLING_V2_COLUMNS = `f.id, f.created_at::text as created_key, f.take_id, f.order_id, f.state, f.fill_key,
  f.fill_digest, f.maker_venue, f.taker_venue, f.sequence::text, f.quote_index, f.amount_in::text, f.amount_out::text,
  f.maker_expiry::text, f.taker_expiry::text, f.pay_by::text, f.fill, f.signature, f.hashlock_proof,
  f.cancel_signature, f.lock_key, f.pay_key, f.claim_key, f.claim_payment_key, f.cancel_key, f.refund_key,
  f.refund_payment_key, f.error,
  t.master as taker_master, t.permit_signature, t.to_sign as take_to_sign, t.pay_authorization,
  t.pay_authorization_requested_at is not null as pay_requested,
  not exists (select 1 from fills g where g.take_id = f.take_id
    and g.state not in ('locked', 'paying', 'paid', 'claiming', 'claimed', 'settled')) as take_locks_final,
  exists (select 1 from fills g where g.take_id = f.take_id and g.cancel_key is not null) as take_cancelling,
  o.master as maker_master, f.quote_identity_id as identity_id,
  q.identity_generation::text as qs_identity_generation, q.quote_size::text as qs_quote_size,
  q.issued_at::text as qs_issued_at, q.valid_until as qs_valid_until, q.hashlock_root as qs_hashlock_root,
  q.hashlock_count as qs_hashlock_count, q.quotes as qs_quotes, q.signature as qs_signature,
  l.state as lock_state, l.secret as lock_secret, p.state as payment_state, p.secret as payment_secret,
  (select s.secret from escrow_v2_secrets s where s.fill_digest = f.fill_digest
     and s.venue in (f.maker_venue, f.taker_venue) limit 1) as public_secret,
  (select r.secret from escrow_v2_seen_secrets r where r.venue = f.taker_venue and r.fill_digest = f.fill_digest
     and r.hashlock = lower(f.hashlock)) as seen_secret,
  exists (select from escrow_v2_seen_secrets r join escrow_v2_cursor c on c.venue = r.venue
    where r.venue = f.taker_venue and r.fill_digest = f.fill_digest and r.block_number > c.indexed_block)
    as reveal_pending,
  ${OUTCOMES_COLUMN}`

/** The nonfinal v2 fills settlement drives, oldest first, as a query over `where` (its own conditions). */
const settlingV2 = (sql: SqlClient.SqlClient, where: Statement.Fragment, limit: number) => sql<SettlingFillV2>`
  select ${sql.literal(SETTLING_V2_COLUMNS)}
  from fills f
  join takes t on t.id = f.take_id
  join orders o on o.id = f.order_id
  join quote_sets q on q.order_id = f.order_id and q.sequence = f.sequence
  left join escrow_v2_locks l on l.venue = f.maker_venue and l.fill_digest = f.fill_digest
  left join escrow_v2_payments p on p.venue = f.taker_venue and p.fill_digest = f.fill_digest
  where not f.final and f.state in ('signed', 'locking', 'locked', 'paying', 'paid', 'claiming', 'claimed')
    and t.escrow_version = 2 ${where}
  order by f.created_at, f.id
  limit ${limit}`

/** v2 fills settlement drives: signed and beyond, not final; oldest first, paged like v1's (`takeId`: one take's). */
export const settlingFillsV2 = (
  limit: number,
  after: { readonly createdKey: string; readonly id: string } | null = null,
  takeId?: string,
) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    settlingV2(
      sql,
      sql`${takeId === undefined ? sql`` : sql`and f.take_id = ${takeId}::uuid`}
        ${after === null ? sql`` : sql`and (f.created_at, f.id) > (${after.createdKey}::timestamptz, ${after.id}::uuid)`}`,
      limit,
    ),
  )

/** What a take's Settlement entity reads first each pass. */
export interface TakeAndFills {
  readonly state: string
  readonly escrow_version: number
  readonly window_ms: number
  /** A signed v2 take's first page of settling fills (settlingFillsV2 of the take); else empty. */
  readonly fills: ReadonlyArray<SettlingFillV2>
}

/**
 * The take a Settlement entity drives (its state, version and pay window in database time) and, when it is a signed
 * v2 take, the first `limit` of its settling fills: one statement, one snapshot, where a pass used to read the take
 * and then its fills. Undefined: no such take.
 */
export const takeAndFillsToSettle = (takeId: string, limit: number) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<
      SettlingFillV2 & { readonly take_state: string; readonly take_version: number; readonly take_window_ms: number }
    >`
      select t0.state as take_state, t0.escrow_version::int as take_version,
             greatest(0, extract(epoch from (t0.pay_deadline - now())) * 1000)::float8 as take_window_ms, s.*
      from takes t0
      left join lateral (${settlingV2(sql, sql`and f.take_id = t0.id`, limit)}) s
        on t0.state = 'signed' and t0.escrow_version = 2
      where t0.id = ${takeId}::uuid`.pipe(
      Effect.map((rows): TakeAndFills | undefined => {
        const first = rows[0]
        if (first === undefined) return undefined
        return {
          state: first.take_state,
          escrow_version: first.take_version,
          window_ms: first.take_window_ms,
          fills: rows.filter((r) => r.id !== null),
        }
      }),
    ),
  )

export interface TakeFillV2 {
  readonly id: string
  // biome-ignore lint/suspicious/noExplicitAny: the wire v2 Fill (jsonb)
  readonly fill: any
  readonly signature: string | null
  readonly fill_digest: string
}

/**
 * A take's fills in `to_sign` order (the order of its `margin_move` items: the order the pay key's PayTake lists
 * the digests in, and so payTake's).
 */
export const takeFillsV2 = (takeId: string) =>
  Effect.flatMap(
    SqlClient.SqlClient,
    (sql) => sql<TakeFillV2>`
      select f.id, f.fill, f.signature, f.fill_digest
      from fills f join takes t on t.id = f.take_id
      left join lateral (select i.n from jsonb_array_elements(t.to_sign) with ordinality as i(item, n)
        where i.item->>'kind' = 'margin_move' and i.item->>'fill_id' = f.id::text) pos on true
      where f.take_id = ${takeId}::uuid
      order by pos.n nulls last, f.id`,
  )

/**
 * A nonfinal step reached. `locked`: when it is the take's last lock, `take.pay_authorization_requested` (once).
 * `paid` with `chance`: the payment is final while the lock is live with ≥ reveal_cutoff before takerExpiry, so a
 * reveal could follow — a fade may be counted later only against such a chance.
 */
export const advanceFillV2 = (f: SettlingFillV2, state: "locked" | "paid" | "claimed", chance: boolean) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql.withTransaction(
      Effect.gen(function* () {
        if (state === "locked") yield* sql`select 1 from takes where id = ${f.take_id}::uuid for update`
        const changed = yield* advanceFill(f, state)
        if (!changed) return false
        if (state === "locked") yield* requestPayAuthorization(f)
        if (state === "paid" && chance) yield* mark(f, "chance")
        return true
      }),
    ),
  )

const requestPayAuthorization = (f: SettlingFillV2) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const rows = yield* sql<{ pay_by: string }>`
      update takes t set pay_authorization_requested_at = now(), updated_at = now()
      where t.id = ${f.take_id}::uuid and t.pay_authorization_requested_at is null
        and not exists (select 1 from fills g where g.take_id = t.id
          and g.state not in ('locked', 'paying', 'paid', 'claiming', 'claimed', 'settled'))
      returning t.pay_by::text`
    const row = rows[0]
    if (row === undefined) return
    const fills = yield* takeFillsV2(f.take_id)
    yield* appendJournal({
      kind: "take.pay_authorization_requested",
      master: f.taker_master,
      payload: { take_id: f.take_id, pay_by: row.pay_by, fill_digests: fills.map((x) => x.fill_digest) },
    })
  })

const mark = (f: SettlingFillV2, kind: "chance" | "fade" | "unpaid") =>
  Effect.flatMap(
    SqlClient.SqlClient,
    (sql) => sql`
      insert into settlement_v2_marks (fill_id, kind, identity_id, master)
      values (${f.id}::uuid, ${kind}, ${f.identity_id}::uuid, ${f.taker_master})
      on conflict do nothing`,
  )

/**
 * A final state, with its evidence. `unpaid`: the lock was left unpaid past payBy and ended with no payment (the
 * caller leaves out a cancel the pay key gave before payBy; counted only when every lock of the take had been
 * final, i.e. the pay authorisation was requested). `unclaimedPayment`: a payment existed and was
 * never claimed; it is a fade only if a chance was recorded for the fill (DESIGN §10's evidence rule). A fade
 * flags the identity once its fades exceed policy.maxFadeRate × max(chances, policy.minChances).
 */
export const finishFillV2 = (
  f: SettlingFillV2,
  state: "settled" | "failed" | "cancelled" | "refunded",
  error: string,
  evidence: { readonly unpaid: boolean; readonly unclaimedPayment: boolean },
  policy: FadePolicy,
  options: { readonly deliveredUnpaid?: boolean } = {},
) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql.withTransaction(
      Effect.gen(function* () {
        const changed = yield* finishFill(f, state, error, { unpaid: options.deliveredUnpaid === true })
        if (!changed) return false
        if (evidence.unpaid && f.pay_requested) yield* mark(f, "unpaid")
        if (evidence.unclaimedPayment) {
          const faded = yield* sql`
            insert into settlement_v2_marks (fill_id, kind, identity_id, master)
            select ${f.id}::uuid, 'fade', ${f.identity_id}::uuid, ${f.taker_master}
            where exists (select 1 from settlement_v2_marks where fill_id = ${f.id}::uuid and kind = 'chance')
            on conflict do nothing
            returning fill_id`
          if (faded.length > 0) yield* flagIfFading(f.identity_id, policy)
        }
        return true
      }),
    ),
  )

/**
 * Flags the identity when its current window's record crosses the policy (inside the caller's transaction), with
 * `quote_identity.fade_flagged` for its master. The row is locked first, so an owner's resume
 * (src/QuoteIdentities/Repo.ts resumeFadedIdentity) either precedes the count (a new window) or waits for it.
 */
export const flagIfFading = (identityId: string, policy: FadePolicy) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    yield* sql`select 1 from quote_identities where id = ${identityId}::uuid for update`
    const record = yield* identityFades(identityId)
    if (record === null || record.flagged || !fadeFlagged(record.fades, record.chances, policy)) return false
    const [row] = yield* sql<{ master: string; flagged_at: Date }>`
      update quote_identities set fade_flagged_at = now()
      where id = ${identityId}::uuid and fade_flagged_at is null
      returning master, fade_flagged_at as flagged_at`
    if (row === undefined) return false
    yield* appendJournal({
      kind: "quote_identity.fade_flagged",
      master: row.master,
      payload: {
        identity_id: identityId,
        chances: record.chances,
        fades: record.fades,
        flagged_at: row.flagged_at.toISOString(),
      },
    })
    return true
  })

/**
 * A taker account's locks left unpaid (settlement_v2_marks kind 'unpaid'), and whether it is over the limit
 * (settlement.max_unpaid_locks): a new take is refused when `over` (enforced at take creation).
 */
export const takerUnpaidLocks = (master: string, maxUnpaidLocks: number) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<{ unpaid: number }>`
      select count(*)::int as unpaid from settlement_v2_marks
      where master = ${master.toLowerCase()} and kind = 'unpaid'`.pipe(
      Effect.map((rows) => {
        const unpaid = rows[0]?.unpaid ?? 0
        return { unpaid, limit: maxUnpaidLocks, over: unpaid > maxUnpaidLocks }
      }),
    ),
  )
