import { SqlClient } from "@effect/sql"
import { Clock, Effect } from "effect"
import type { CallOutcome, FillState, OutcomeStatus, SettlementCall } from "../Domain/SettlementStep.ts"
import { KEY_COLUMN } from "../Domain/SettlementStep.ts"
import { bump, fillStepSeconds, fillTransitions, labels } from "../Observability/Metrics.ts"
import { appendJournalRows, type JournalEntry, journalNotify, journalRowsInsert } from "../Sql/Journal.ts"
import { joinTransaction } from "../Sql/Transaction.ts"

/**
 * The settlement entity's rows (actors/Settlement.ts, one entity per take; states in migrations/0011_takes.ts).
 * Reads gather, per nonfinal fill, everything the pure decision (src/Domain/SettlementStep.ts) needs; writes are
 * guarded UPDATEs (`where state = <what was read>` and the key column unchanged), each with its journal rows in the
 * same transaction, so two overlapping passes (e.g. around a shard hand-over) change a fill once.
 */

export interface SettlingFill {
  readonly id: string
  /** created_at as Postgres text (microseconds kept): the page key with id. */
  readonly created_key: string
  readonly take_id: string
  readonly order_id: string
  readonly state: FillState
  readonly fill_key: string
  readonly hashlock: string
  readonly maker_venue: string
  readonly taker_venue: string
  readonly sequence: string
  readonly quote_index: number
  readonly amount_in: string
  readonly amount_out: string
  readonly maker_expiry: string
  readonly taker_expiry: string
  // biome-ignore lint/suspicious/noExplicitAny: the wire Fill (jsonb)
  readonly fill: any
  readonly signature: string | null
  readonly secret_ciphertext: Uint8Array
  readonly lock_key: string | null
  readonly pay_key: string | null
  readonly claim_key: string | null
  readonly claim_payment_key: string | null
  readonly cancel_key: string | null
  readonly refund_key: string | null
  readonly refund_payment_key: string | null
  readonly revealed_at: Date | null
  readonly error: string
  /** The taker's master (takes.master) and the take's permit. */
  readonly taker_master: string
  readonly permit_signature: string | null
  // biome-ignore lint/suspicious/noExplicitAny: the take's sign items (jsonb)
  readonly take_to_sign: any
  /** The maker order's master and quote identity (journal visibility for its credential). */
  readonly maker_master: string
  readonly identity_id: string
  /** The quote set the fill was routed over (quote_sets (order_id, sequence)). */
  readonly qs_identity_generation: string
  readonly qs_quote_size: string
  readonly qs_valid_until: Date
  // biome-ignore lint/suspicious/noExplicitAny: stored quotes (jsonb)
  readonly qs_quotes: any
  readonly qs_signature: string
  /** The finalized escrow index of both sides. */
  readonly lock_state: "locked" | "claimed" | "refunded" | "cancelled" | null
  readonly lock_secret: string | null
  readonly payment_state: "held" | "claimed" | "refunded" | null
  readonly payment_secret: string | null
  /** The relayer outcomes of the fill's call keys, read with it (OUTCOMES_COLUMN; none: null). */
  readonly outcomes: Readonly<Record<string, { readonly status: OutcomeStatus; readonly reason: string | null }>> | null
}

/**
 * The relayer outcomes of a fill's call keys, in the fill's own query (one snapshot, one statement fewer per pass):
 * status, and the revert reason or else the error (empty ones are none). Absent keys: the relayer never got them.
 */
export const OUTCOMES_COLUMN = `(select jsonb_object_agg(r.idempotency_key, jsonb_build_object('status', r.status,
    'reason', coalesce(nullif(r.revert_reason, ''), nullif(r.error, ''))))
  from relayer_requests r where r.idempotency_key in (f.lock_key, f.pay_key, f.claim_key, f.claim_payment_key,
    f.cancel_key, f.refund_key, f.refund_payment_key)) as outcomes`

/** The outcomes of a page of fills (each read with its fill), as the decisions take them: by key. */
export const outcomesOfFills = (fills: ReadonlyArray<Pick<SettlingFill, "outcomes">>) => {
  const outcomes = new Map<string, CallOutcome>()
  for (const f of fills) {
    for (const [key, o] of Object.entries(f.outcomes ?? {})) outcomes.set(key, { status: o.status, reason: o.reason })
  }
  return outcomes
}

/**
 * The columns the state writes below read (journal, log, metrics, guards): what a v1 and a v2 fill row share
 * (src/Settlement/RepoV2.ts reuses the writes for v2 fills).
 */
export type FillRow = Pick<
  SettlingFill,
  | "id"
  | "created_key"
  | "take_id"
  | "order_id"
  | "state"
  | "fill_key"
  | "maker_venue"
  | "taker_venue"
  | "amount_in"
  | "amount_out"
  | "lock_key"
  | "pay_key"
  | "claim_key"
  | "claim_payment_key"
  | "cancel_key"
  | "refund_key"
  | "refund_payment_key"
  | "error"
  | "taker_master"
  | "maker_master"
  | "identity_id"
>

/**
 * v1 fills settlement drives (v2 takes' fills: src/Settlement/RepoV2.ts): signed and beyond, not final; oldest
 * first, at most `limit`, after the page key `after` (the last row's created_key and id) when given; `takeId`: one
 * take's (its entity's pass).
 */
export const settlingFills = (
  limit: number,
  after: { readonly createdKey: string; readonly id: string } | null = null,
  takeId?: string,
) =>
  Effect.flatMap(
    SqlClient.SqlClient,
    (sql) => sql<SettlingFill>`
      select f.id, f.created_at::text as created_key, f.take_id, f.order_id, f.state, f.fill_key, f.hashlock, f.maker_venue, f.taker_venue, f.sequence::text,
             f.quote_index, f.amount_in::text, f.amount_out::text, f.maker_expiry::text, f.taker_expiry::text,
             f.fill, f.signature, f.secret_ciphertext, f.lock_key, f.pay_key, f.claim_key, f.claim_payment_key,
             f.cancel_key, f.refund_key, f.refund_payment_key, f.revealed_at, f.error,
             t.master as taker_master, t.permit_signature, t.to_sign as take_to_sign,
             o.master as maker_master, o.quote_identity_id as identity_id,
             q.identity_generation::text as qs_identity_generation, q.quote_size::text as qs_quote_size,
             q.valid_until as qs_valid_until, q.quotes as qs_quotes, q.signature as qs_signature,
             l.state as lock_state, l.secret as lock_secret, p.state as payment_state, p.secret as payment_secret,
             ${sql.literal(OUTCOMES_COLUMN)}
      from fills f
      join takes t on t.id = f.take_id
      join orders o on o.id = f.order_id
      join quote_sets q on q.order_id = f.order_id and q.sequence = f.sequence
      left join escrow_locks l on l.venue = f.maker_venue and l.fill_id = f.fill_key
      left join escrow_payments p on p.venue = f.taker_venue and p.fill_id = f.fill_key
      where not f.final and f.state in ('signed', 'locking', 'locked', 'paying', 'paid', 'claiming', 'claimed')
        and t.escrow_version = 1
        ${takeId === undefined ? sql`` : sql`and f.take_id = ${takeId}::uuid`}
        ${after === null ? sql`` : sql`and (f.created_at, f.id) > (${after.createdKey}::timestamptz, ${after.id}::uuid)`}
      order by f.created_at, f.id
      limit ${limit}`,
  )

/**
 * Takes the Settlement entity (one per take, actors/Settlement.ts) still has to drive: reserved (their pay window
 * ends them), signed with a fill not yet final, or signed with every fill final but not rolled up. `venue`: only
 * takes on that venue (an escrow index page of it may have changed them).
 */
export const settlementPendingTakes = (venue?: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<{ id: string }>`
      select t.id::text as id from takes t where t.state = 'reserved'
        ${venue === undefined ? sql`` : sql`and (t.from_venue = ${venue} or t.to_venue = ${venue})`}
      union
      select f.take_id::text from fills f join takes t on t.id = f.take_id
      where not f.final and f.state in ('signed', 'locking', 'locked', 'paying', 'paid', 'claiming', 'claimed')
        and t.state = 'signed'
        ${venue === undefined ? sql`` : sql`and (f.maker_venue = ${venue} or f.taker_venue = ${venue})`}
      union
      -- a signed take whose fills are all final but was never rolled up (fills that finished together): its step
      -- rolls it up (actors/Settlement.ts)
      select t.id::text from takes t where t.state = 'signed'
        and exists (select 1 from fills f where f.take_id = t.id)
        and not exists (select 1 from fills f where f.take_id = t.id and not f.final)
        ${venue === undefined ? sql`` : sql`and (t.from_venue = ${venue} or t.to_venue = ${venue})`}`.pipe(
      Effect.map((rows) => rows.map((r) => r.id)),
    ),
  )

/** The take of a fill and its escrow version (a relayer outcome names the fill; v1 and v2 wake on different ones). */
export const takeOfFill = (fillId: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<{ take_id: string; escrow_version: number }>`select t.id::text as take_id, t.escrow_version
      from fills f join takes t on t.id = f.take_id where f.id = ${fillId}::uuid`.pipe(Effect.map((rows) => rows[0])),
  )

/** The fill's keys by call, as the decision reads them. */
export const keysOf = (f: FillRow): Record<SettlementCall, string | null> => ({
  lock: f.lock_key,
  pay: f.pay_key,
  claim: f.claim_key,
  claimPayment: f.claim_payment_key,
  cancelLock: f.cancel_key,
  refund: f.refund_key,
  refundPayment: f.refund_payment_key,
})

/** Journal kinds of fill states (literal, so the stream schema test finds each documented kind). */
const FILL_KIND: Readonly<Record<Exclude<FillState, "signed">, string>> = {
  locking: "fill.locking",
  locked: "fill.locked",
  paying: "fill.paying",
  paid: "fill.paid",
  claiming: "fill.claiming",
  claimed: "fill.claimed",
  settled: "fill.settled",
  failed: "fill.failed",
  cancelled: "fill.cancelled",
  refunded: "fill.refunded",
}

/** Postgres `timestamptz::text` ("2026-11-25 09:04:34.123456+00") to epoch ms. */
const pgTextMs = (text: string) => Date.parse(text.replace(" ", "T").replace(/([+-]\d\d)$/, "$1:00"))

/**
 * After the state change committed: one log line (the fill, its take and order, the call and its key) and the
 * settlement metrics (transitions by state; seconds from the fill's creation to this state).
 */
const fillChanged = (
  f: FillRow,
  state: FillState,
  error: string,
  call: { readonly call: SettlementCall; readonly key: string } | null = null,
) =>
  Effect.flatMap(Clock.currentTimeMillis, (now) => {
    const age = (now - pgTextMs(f.created_key)) / 1000
    bump(fillTransitions, [["state", state]])
    if (Number.isFinite(age)) fillStepSeconds.unsafeUpdate(Math.max(0, age), labels(["state", state]))
    const line =
      state === "failed" || state === "cancelled" || state === "refunded" ? Effect.logWarning : Effect.logInfo
    return line(`fill ${f.state} -> ${state}`).pipe(
      Effect.annotateLogs({
        fill_id: f.id,
        take_id: f.take_id,
        order_id: f.order_id,
        fill_key: f.fill_key,
        maker_venue: f.maker_venue,
        taker_venue: f.taker_venue,
        from_state: f.state,
        state,
        ...(call === null ? {} : { call: call.call, tx_key: call.key }),
        ...(error === "" ? {} : { error }),
      }),
    )
  })

/** `fill.<state>` rows for the taker's master and for the maker order's master (with its identity_id), in order. */
const fillJournalEntries = (f: FillRow, state: Exclude<FillState, "signed">, error: string): Array<JournalEntry> => {
  const payload = {
    fill_id: f.id,
    take_id: f.take_id,
    order_id: f.order_id,
    state,
    from: f.taker_venue,
    to: f.maker_venue,
    amount_in: f.amount_in,
    amount_out: f.amount_out,
    error,
  }
  const kind = FILL_KIND[state]
  return [
    { kind, master: f.taker_master, payload: { ...payload, side: "taker" } },
    { kind, master: f.maker_master, payload: { ...payload, side: "maker", identity_id: f.identity_id } },
  ]
}

/** Both sides' `fill.<state>` rows in one statement, inside the transition's transaction. */
const journalFill = (f: FillRow, state: Exclude<FillState, "signed">, error: string) =>
  appendJournalRows(fillJournalEntries(f, state, error))

/**
 * Stores the call's key (and the new state, if any) before the call is submitted. Guarded: nothing happens when
 * the fill moved on or the column already holds another key. `claim` also records revealed_at (database time).
 * Returns whether this pass wrote it (only then does it submit). The update, its journal rows (when the state
 * changes) and the publisher's ping are one statement, atomic alone: one round trip on the path to each call.
 */
export const recordCall = (
  f: FillRow,
  call: SettlementCall,
  key: string,
  state: FillState | null,
  error: string | null,
) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    Effect.gen(function* () {
      const column = KEY_COLUMN[call]
      const previous = keysOf(f)[call]
      const entries =
        state !== null && state !== "signed" && state !== f.state ? fillJournalEntries(f, state, error ?? f.error) : []
      const [row] = yield* sql<{ written: number }>`
        with updated as (
          update fills set ${sql(column)} = ${key}, state = ${state ?? f.state}, updated_at = now(),
            error = ${error ?? f.error},
            revealed_at = case when ${call === "claim"} then coalesce(revealed_at, now()) else revealed_at end
          where id = ${f.id} and state = ${f.state} and not final
            and ${sql(column)} is not distinct from ${previous}
          returning id
        ), appended as (${journalRowsInsert(sql, entries, sql`exists (select 1 from updated)`)})
        select (select count(*)::int from updated) as written,
          (select count(*)::int from (${journalNotify(sql, [])}) n where exists (select 1 from appended)) as notified`
      return (row?.written ?? 0) > 0
    }).pipe(
      Effect.tap((written) =>
        written && state !== null && state !== f.state
          ? fillChanged(f, state, error ?? f.error, { call, key })
          : Effect.void,
      ),
    ),
  )

/** A nonfinal step reached (locked, paid, claimed), from the index. */
export const advanceFill = (f: FillRow, state: "locked" | "paid" | "claimed") =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    joinTransaction(
      Effect.gen(function* () {
        const rows = yield* sql`
          update fills set state = ${state}, updated_at = now(),
            revealed_at = case when ${state === "claimed"} then coalesce(revealed_at, now()) else revealed_at end
          where id = ${f.id} and state = ${f.state} and not final
          returning id`
        if (rows.length === 0) return false
        yield* journalFill(f, state, f.error)
        return true
      }),
    ).pipe(Effect.tap((changed) => (changed ? fillChanged(f, state, f.error) : Effect.void))),
  )

/**
 * Ends a fill (guarded by its state) with its journal rows; a settled fill advances its order's `filled` and
 * `received` and publishes its trade, unless `unpaid` (v2: delivered without any payment): then only `filled`.
 * Then the take rolls up once all of its fills are final: settled (all settled), partial (some), failed (none).
 * Four statements: the take's row lock, the fill's update with its order's (guarded by the fill's), the journal
 * rows, the roll-up (a later statement: it must see this fill final).
 */
export const finishFill = (
  f: FillRow,
  state: "settled" | "failed" | "cancelled" | "refunded",
  error: string,
  options: { readonly unpaid?: boolean } = {},
) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    joinTransaction(
      Effect.gen(function* () {
        // Locks are taken take → fill → order, as every path of a take does (its signatures, PayV2's cancels,
        // advanceFillV2): the roll-up below needs the take, and a cancel holding the take while it waited for this
        // fill's row deadlocked with a finish that had locked the fill first (one side answered 500).
        yield* sql`select 1 from takes where id = ${f.take_id} for update`
        const settled = state === "settled"
        const paid = settled && options.unpaid !== true
        const rows = yield* sql<{ settled_at: Date | null }>`
          with ended as (
            update fills set state = ${state}, final = true, updated_at = now(), error = ${error},
              settled_at = case when ${paid} then now() else settled_at end
            where id = ${f.id} and state = ${f.state} and not final
            returning settled_at
          ), ordered as (
            update orders set filled = filled + ${f.amount_out}, received = received + ${paid ? f.amount_in : "0"},
              updated_at = now()
            where id = ${f.order_id} and ${settled} and exists (select 1 from ended)
          )
          select settled_at from ended`
        const row = rows[0]
        if (row === undefined) return false
        const trade: Array<JournalEntry> = paid
          ? [
              {
                kind: "trade.settled",
                master: null,
                payload: {
                  id: f.id,
                  from: f.taker_venue,
                  to: f.maker_venue,
                  amount_in: f.amount_in,
                  amount_out: f.amount_out,
                  at: (row.settled_at ?? new Date(0)).toISOString(),
                },
              },
            ]
          : []
        yield* appendJournalRows([...fillJournalEntries(f, state, error), ...trade])
        yield* rollUpTake(f.take_id)
        return true
      }),
    ).pipe(Effect.tap((changed) => (changed ? fillChanged(f, state, error) : Effect.void))),
  )

/** Moves a signed take to settled / partial / failed once none of its fills is nonfinal (in the caller's tx). */
export const rollUpTake = (takeId: string) =>
  Effect.flatMap(
    SqlClient.SqlClient,
    (sql) => sql`
      update takes t set state = case
          when x.settled = x.total then 'settled' when x.settled > 0 then 'partial' else 'failed' end,
        updated_at = now()
      from (select count(*) as total, count(*) filter (where state = 'settled') as settled,
                   count(*) filter (where not final) as open
            from fills where take_id = ${takeId}) x
      where t.id = ${takeId} and t.state = 'signed' and x.open = 0 and x.total > 0`,
  )
