/**
 * Withdrawals and their preparations (migrations 0003, 0009). Every state change is one conditional UPDATE
 * (`where state = <expected>`) that bumps `revision` and appends its journal row in the same transaction, so a
 * transition happens at most once whoever races for it (two desks during a hand-over, a restart).
 */
import { SqlClient } from "@effect/sql"
import { Effect, Option } from "effect"
import { canMove, OPEN_STATES, type WithdrawalState, type WithdrawalTarget } from "../Domain/Withdrawal.ts"
import type { HistoryPosition } from "../Domain/WithdrawalCursor.ts"
import { bump, withdrawalTransitions } from "../Observability/Metrics.ts"
import { appendJournal } from "../Sql/Journal.ts"

export interface WithdrawalRow {
  readonly id: string
  readonly master: string
  readonly venue: string
  readonly address: string
  readonly amount: string
  readonly destination: string
  readonly state: WithdrawalState
  readonly target: WithdrawalTarget | null
  /** Venue nonce (decimal string): Hyperliquid ms, Aster µs. */
  readonly nonce: string | null
  readonly typed_data: unknown
  readonly signature: string | null
  readonly venue_ref: string | null
  readonly error: string
  readonly revision: string
  readonly created_at: Date
  readonly updated_at: Date
  readonly submitted_at: Date | null
  readonly relayed_at: Date | null
  readonly replayable_until: Date | null
  readonly checks: number
  /** `created_at` in microseconds (history cursors). */
  readonly created_us: string
}

const COLUMNS = (sql: SqlClient.SqlClient) => sql`
  id, master, venue, address, amount::text as amount, destination, state, target, nonce::text as nonce, typed_data,
  signature, venue_ref, error, revision::text as revision, created_at, updated_at, submitted_at, relayed_at,
  replayable_until, checks,
  ((extract(epoch from created_at) * 1000000)::numeric(30, 0))::text as created_us`

export interface PreparationRow {
  readonly id: string
  readonly master: string
  readonly venue: string
  readonly address: string
  readonly target: WithdrawalTarget
  readonly destination: string
  readonly amount: string
  readonly venue_amount: string
  readonly action: string
  readonly nonce: string
  readonly typed_data: unknown
  readonly digest: string
  readonly replayable_until: Date
  readonly expires_at: Date
  readonly created_at: Date
}

/**
 * The venue nonce clock of one venue account: `nowMs`, or one more than the last one handed out when the clock
 * has not moved on. Two preparations never share a venue nonce.
 */
export const nextNonceMs = (venue: string, address: string, nowMs: number) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<{ last_ms: string }>`
      insert into withdrawal_nonces (venue, address, last_ms) values (${venue}, ${address}, ${nowMs})
      on conflict (venue, address) do update
        set last_ms = greatest(excluded.last_ms, withdrawal_nonces.last_ms + 1)
      returning last_ms::text as last_ms`.pipe(Effect.map((rows) => Number(rows[0]!.last_ms))),
  )

export const insertPreparation = (p: {
  id: string
  master: string
  venue: string
  address: string
  target: WithdrawalTarget
  destination: string
  amount: bigint
  venueAmount: string
  action: string
  nonce: number
  typedData: unknown
  digest: string
  replayableUntilMs: number
  expiresMs: number
  nowMs: number
}) =>
  Effect.flatMap(
    SqlClient.SqlClient,
    (sql) => sql`
      insert into withdrawal_preparations (id, master, venue, address, target, destination, amount, venue_amount,
        action, nonce, typed_data, digest, replayable_until, expires_at, created_at)
      values (${p.id}, ${p.master}, ${p.venue}, ${p.address}, ${p.target}, ${p.destination}, ${p.amount.toString()},
        ${p.venueAmount}, ${p.action}, ${p.nonce}, ${JSON.stringify(p.typedData)}::jsonb, ${p.digest},
        ${new Date(p.replayableUntilMs)}, ${new Date(p.expiresMs)}, ${new Date(p.nowMs)})`,
  ).pipe(Effect.asVoid)

export const findPreparationByDigest = (digest: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<PreparationRow>`
      select id, master, venue, address, target, destination, amount::text as amount, venue_amount, action,
             nonce::text as nonce, typed_data, digest, replayable_until, expires_at, created_at
      from withdrawal_preparations where digest = ${digest.toLowerCase()}`.pipe(
      Effect.map((rows) => Option.fromNullable(rows[0])),
    ),
  )

/** The queued, submitting or unknown withdrawal of a venue account, if any. */
export const openWithdrawalOf = (venue: string, address: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<{ id: string; state: WithdrawalState }>`
      select id, state from withdrawals
      where venue = ${venue} and address = ${address.toLowerCase()} and state in ${sql.in(OPEN_STATES)}
      limit 1`.pipe(Effect.map((rows) => Option.fromNullable(rows[0]))),
  )

/**
 * Base units of the account's withdrawals the venue acknowledged at or after `sinceMs` (spec prepare rule 3: a
 * balance read that started before an acknowledgement may not show it yet).
 */
export const acknowledgedSince = (venue: string, address: string, sinceMs: number) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<{ total: string }>`
      select coalesce(sum(amount), 0)::text as total from withdrawals
      where venue = ${venue} and address = ${address.toLowerCase()} and state = 'relayed'
        and relayed_at >= ${new Date(sinceMs)}`.pipe(Effect.map((rows) => BigInt(rows[0]?.total ?? "0"))),
  )

/** The journal kind of each state (literals: the stream's documentation test reads them from this file). */
export const WITHDRAWAL_EVENT: Readonly<Record<WithdrawalState, string>> = {
  queued: "withdrawal.queued",
  submitting: "withdrawal.submitting",
  relayed: "withdrawal.relayed",
  failed: "withdrawal.failed",
  unknown: "withdrawal.unknown",
}

const journal = (row: WithdrawalRow) =>
  appendJournal({
    kind: WITHDRAWAL_EVENT[row.state],
    master: row.master,
    payload: {
      withdrawal_id: row.id,
      venue: row.venue,
      amount: row.amount,
      state: row.state,
      revision: row.revision,
    },
  })

export type CreateOutcome =
  | { readonly _tag: "Created"; readonly row: WithdrawalRow }
  | { readonly _tag: "Existing"; readonly row: WithdrawalRow }
  | { readonly _tag: "NotLinked" }
  | { readonly _tag: "Pending"; readonly id: string }
  | { readonly _tag: "Expired" }

/**
 * Queues the withdrawal of a verified preparation. The linked-account row is locked first (as unlinking does), so
 * an unlink cannot slip in; the same preparation submitted again answers the withdrawal it already made (even
 * after the preparation expired: a lost response is recovered, never duplicated).
 */
export const createWithdrawal = (p: {
  id: string
  preparation: PreparationRow
  signature: string
  nowMs: number
  expired: boolean
}) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql
      .withTransaction(
        Effect.gen(function* () {
          const prep = p.preparation
          const [existing] = yield* sql<WithdrawalRow>`
          select ${COLUMNS(sql)} from withdrawals where preparation_id = ${prep.id}`
          if (existing !== undefined) return { _tag: "Existing", row: existing } as CreateOutcome
          if (p.expired) return { _tag: "Expired" } as CreateOutcome
          const [link] = yield* sql<{ address: string }>`
          select address from linked_accounts where master = ${prep.master} and venue = ${prep.venue} for update`
          if (link === undefined || link.address !== prep.address) return { _tag: "NotLinked" } as CreateOutcome
          // Same preparation submitted twice at once: the second waited on the lock and now sees the first.
          const [raced] = yield* sql<WithdrawalRow>`
          select ${COLUMNS(sql)} from withdrawals where preparation_id = ${prep.id}`
          if (raced !== undefined) return { _tag: "Existing", row: raced } as CreateOutcome
          const open = yield* openWithdrawalOf(prep.venue, prep.address)
          if (Option.isSome(open)) return { _tag: "Pending", id: open.value.id } as CreateOutcome
          const now = new Date(p.nowMs)
          const [row] = yield* sql<WithdrawalRow>`
          insert into withdrawals (id, master, venue, address, amount, destination, state, created_at, updated_at,
            preparation_id, target, nonce, typed_data, signature, revision, replayable_until)
          values (${p.id}, ${prep.master}, ${prep.venue}, ${prep.address}, ${prep.amount}, ${prep.destination},
            'queued', ${now}, ${now}, ${prep.id}, ${prep.target}, ${prep.nonce}, ${JSON.stringify(prep.typed_data)}::jsonb,
            ${p.signature}, 1, ${prep.replayable_until})
          returning ${COLUMNS(sql)}`
          yield* journal(row!)
          return { _tag: "Created", row: row! } as CreateOutcome
        }),
      )
      .pipe(Effect.tap((outcome) => (outcome._tag === "Created" ? withdrawalChanged(outcome.row, null) : Effect.void))),
  )

/** After the change committed: one log line (the withdrawal, venue, venue ref) and the transitions counter. */
const withdrawalChanged = (row: WithdrawalRow, from: WithdrawalState | null) =>
  Effect.suspend(() => {
    bump(withdrawalTransitions, [["state", row.state]])
    const line = row.state === "failed" || row.state === "unknown" ? Effect.logWarning : Effect.logInfo
    return line(from === null ? `withdrawal ${row.state}` : `withdrawal ${from} -> ${row.state}`).pipe(
      Effect.annotateLogs({
        withdrawal_id: row.id,
        venue: row.venue,
        address: row.address,
        amount: row.amount,
        destination: row.destination,
        state: row.state,
        revision: row.revision,
        ...(row.venue_ref === null ? {} : { venue_ref: row.venue_ref }),
        ...(row.error === "" ? {} : { error: row.error }),
      }),
    )
  })

export interface TransitionFields {
  readonly venueRef?: string
  readonly error?: string
  readonly submittedMs?: number
  readonly relayedMs?: number
  readonly nextCheckMs?: number | null
}

/**
 * Moves `id` from `from` to `to` (and sets the given fields) if and only if it is still in `from`; journals the new
 * state with the bumped revision. None when another writer moved it first.
 */
export const transition = (
  id: string,
  from: WithdrawalState,
  to: WithdrawalState,
  f: TransitionFields,
  nowMs: number,
) =>
  canMove(from, to)
    ? transitionUnchecked(id, from, to, f, nowMs)
    : Effect.dieMessage(`withdrawal ${id}: ${from} -> ${to} is not a transition`)

const transitionUnchecked = (
  id: string,
  from: WithdrawalState,
  to: WithdrawalState,
  f: TransitionFields,
  nowMs: number,
) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql
      .withTransaction(
        Effect.gen(function* () {
          const [row] = yield* sql<WithdrawalRow>`
          update withdrawals set
            state = ${to},
            revision = revision + 1,
            updated_at = ${new Date(nowMs)},
            venue_ref = coalesce(${f.venueRef ?? null}, venue_ref),
            error = coalesce(${f.error ?? null}, error),
            submitted_at = coalesce(${f.submittedMs === undefined ? null : new Date(f.submittedMs)}, submitted_at),
            relayed_at = coalesce(${f.relayedMs === undefined ? null : new Date(f.relayedMs)}, relayed_at),
            next_check_at = ${f.nextCheckMs === undefined || f.nextCheckMs === null ? null : new Date(f.nextCheckMs)}
          where id = ${id} and state = ${from}
          returning ${COLUMNS(sql)}`
          if (row === undefined) return Option.none<WithdrawalRow>()
          yield* journal(row)
          return Option.some(row)
        }),
      )
      .pipe(Effect.tap((moved) => (Option.isSome(moved) ? withdrawalChanged(moved.value, from) : Effect.void))),
  )

/** Schedules the next evidence check of an unknown withdrawal (no state change, no revision). */
export const scheduleCheck = (id: string, nextCheckMs: number, note: string) =>
  Effect.flatMap(
    SqlClient.SqlClient,
    (sql) => sql`
      update withdrawals set next_check_at = ${new Date(nextCheckMs)}, checks = checks + 1,
        error = case when ${note} = '' then error else ${note} end
      where id = ${id} and state = 'unknown'`,
  ).pipe(Effect.asVoid)

export const findWithdrawal = (id: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<WithdrawalRow>`select ${COLUMNS(sql)} from withdrawals where id = ${id}`.pipe(
      Effect.map((rows) => Option.fromNullable(rows[0])),
    ),
  )

/** The withdrawals submitted from these preparations (at most one each), for views that link a preparation. */
export const withdrawalsOfPreparations = (preparationIds: ReadonlyArray<string>) =>
  preparationIds.length === 0
    ? Effect.succeed(new Map<string, WithdrawalRow>())
    : Effect.flatMap(SqlClient.SqlClient, (sql) =>
        sql<WithdrawalRow & { preparation_id: string }>`
          select ${COLUMNS(sql)}, preparation_id from withdrawals
          where preparation_id in ${sql.in(preparationIds)}`.pipe(
          Effect.map((rows) => new Map(rows.map((r) => [r.preparation_id, r as WithdrawalRow]))),
        ),
      )

/** Whether another withdrawal of the account already claims this venue ref (evidence must not be reused). */
/** The venue refs of the account's relayed withdrawals on `venue` other than `exceptId` (EvidenceQuery.claimedRefs). */
export const claimedVenueRefs = (venue: string, address: string, exceptId: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<{ venue_ref: string }>`
      select venue_ref from withdrawals
      where venue = ${venue} and address = ${address} and id <> ${exceptId} and state = 'relayed'
        and venue_ref is not null`.pipe(Effect.map((rows) => rows.map((r) => r.venue_ref))),
  )

export const venueRefClaimed = (venue: string, address: string, venueRef: string, exceptId: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql`
      select 1 from withdrawals
      where venue = ${venue} and address = ${address} and venue_ref = ${venueRef} and id <> ${exceptId}
        and state = 'relayed'
      limit 1`.pipe(Effect.map((rows) => rows.length > 0)),
  )

/**
 * One history page, newest first by (created_at, id), strictly after `after`. Reads `limit + 1` rows to tell
 * whether more follow.
 */
export const historyPage = (master: string, after: HistoryPosition | undefined, limit: number) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    (after === undefined
      ? sql<WithdrawalRow>`
          select ${COLUMNS(sql)} from withdrawals where master = ${master}
          order by created_at desc, id desc limit ${limit + 1}`
      : sql<WithdrawalRow>`
          select ${COLUMNS(sql)} from withdrawals
          where master = ${master}
            and (created_at, id) < ('epoch'::timestamptz + ${after.createdMicros.toString()}::bigint * interval '1 microsecond',
                                    ${after.id}::uuid)
          order by created_at desc, id desc limit ${limit + 1}`
    ).pipe(Effect.map((rows) => ({ rows: rows.slice(0, limit), hasMore: rows.length > limit }))),
  )

// ---------------------------------------------------------------------------------------------
// The desk's queries: one venue account's rows (the desk entity's key, actors/WithdrawalDesk.ts)
// ---------------------------------------------------------------------------------------------

/** A venue account: the key of its withdrawal desk. */
export interface VenueAccount {
  readonly venue: string
  /** Lowercase, as stored. */
  readonly address: string
}

export const queuedWithdrawals = (account: VenueAccount, limit: number) =>
  Effect.flatMap(
    SqlClient.SqlClient,
    (sql) =>
      sql<WithdrawalRow>`
        select ${COLUMNS(sql)} from withdrawals
        where venue = ${account.venue} and address = ${account.address} and state = 'queued'
        order by created_at, id limit ${limit}`,
  )

export const dueUnknownWithdrawals = (account: VenueAccount, nowMs: number, limit: number) =>
  Effect.flatMap(
    SqlClient.SqlClient,
    (sql) =>
      sql<WithdrawalRow>`
        select ${COLUMNS(sql)} from withdrawals
        where venue = ${account.venue} and address = ${account.address}
          and state = 'unknown' and (next_check_at is null or next_check_at <= ${new Date(nowMs)})
        order by next_check_at nulls first, created_at limit ${limit}`,
  )

/** The account's rows left `submitting` (by an earlier desk: a crash, a move; or by a send in flight). */
export const submittingWithdrawals = (account: VenueAccount) =>
  Effect.flatMap(
    SqlClient.SqlClient,
    (sql) => sql<WithdrawalRow>`
      select ${COLUMNS(sql)} from withdrawals
      where venue = ${account.venue} and address = ${account.address} and state = 'submitting'
      order by created_at`,
  )

/** Whether the account has a queued, submitting or unknown withdrawal (its desk keeps looking while it has). */
export const accountHasOpenWithdrawal = (account: VenueAccount) =>
  Effect.map(openWithdrawalOf(account.venue, account.address), Option.isSome)

/** The venue accounts with an open withdrawal (the partial unique index withdrawals_one_open holds them). */
export const accountsWithOpenWithdrawals = Effect.flatMap(SqlClient.SqlClient, (sql) =>
  sql<VenueAccount>`
    select venue, address from withdrawals where state in ${sql.in(OPEN_STATES)} limit 10000`.pipe(
    Effect.map((rows) => rows.map((r): VenueAccount => ({ venue: r.venue, address: r.address }))),
  ),
)

/** The withdrawal made from a preparation, if any (an identical submit is answered from it). */
export const withdrawalOfPreparation = (preparationId: string) =>
  Effect.map(withdrawalsOfPreparations([preparationId]), (made) => Option.fromNullable(made.get(preparationId)))
