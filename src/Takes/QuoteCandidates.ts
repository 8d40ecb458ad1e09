import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import type { TakeCandidate } from "../Domain/TakeRouter.ts"

/**
 * Reservations by takes (src/Takes/Create.ts), two sums:
 *
 * - `reserved_unindexed (order_id, sequence, amount)`: Σ amountOut of open fills (not final) whose lock the escrow
 *   index does not hold yet. `escrow_orders.available` (final head) already excludes indexed locks, so only these
 *   are subtracted from the order's quotable. A fill of a take still `reserved` (unsigned) counts only while its
 *   take's `pay_deadline` is in the future (database time): the release is immediate, whether or not a sweep has
 *   marked it expired yet. The lock row and `escrow_orders` are written by the watcher in one transaction, so a
 *   fill moves from this sum into `available` atomically.
 * - a set's used (SET_USED, per candidate set): Σ amountOut counted against the set's quote_size, mirroring the
 *   escrow's `filledOut[order][sequence]`: an indexed lock counts while it is `locked` or `claimed` (refund and
 *   cancelLock give it back); a fill without an indexed lock counts while it is a live reservation as above.
 */
export const RESERVATIONS_CTE = `
  reserved_unindexed (order_id, sequence, amount) as (
    select f.order_id, f.sequence, f.amount_out
    from fills f join takes t on t.id = f.take_id
    where not f.final
      and (f.state <> 'reserved' or t.pay_deadline > now())
      and not exists (select 1 from escrow_locks l where l.venue = f.maker_venue and l.fill_id = f.fill_key)
  )`

/**
 * What the candidate set `s` has used (a set's used, above), summed per set through fills_set's (order_id, sequence)
 * prefix: grouped over every active set's fills and joined after, the planner could scan them all (it did at 50,000
 * settled fills: test/bench/candidates.ts). `locks`: the escrow index's lock table and the join of a fill to its
 * lock (v1: escrow_locks by fill key; v2: escrow_v2_locks by fill digest, src/Takes/QuoteCandidatesV2.ts).
 */
export const setUsedOf = (locks: { readonly table: string; readonly on: string; readonly present: string }) => `
  select coalesce(sum(f.amount_out), 0) as amount
  from fills f
  join takes t on t.id = f.take_id
  left join ${locks.table} l on l.venue = f.maker_venue and ${locks.on}
  where f.order_id = s.order_id and f.sequence = s.sequence and (not f.final or f.state = 'settled')
    and case when ${locks.present} then l.state in ('locked', 'claimed')
             else not f.final and (f.state <> 'reserved' or t.pay_deadline > now()) end`

const SET_USED = setUsedOf({ table: "escrow_locks", on: "l.fill_id = f.fill_key", present: "l.fill_id is not null" })

/** One quote of an admissible set, as stored (the quote object is what the maker signed, as published). */
export interface QuoteCandidateRow {
  readonly order_id: string
  readonly sequence: string
  readonly identity_id: string
  readonly identity_generation: string
  readonly quote_index: number
  readonly quote: {
    readonly venue: string
    readonly chain_id: number
    readonly token: string
    readonly recipient: string
    readonly supply: string
    readonly receive: string
    readonly min_fill: string
  }
  readonly quote_size: string
  readonly valid_until: Date
  readonly signature: string
  /** The order's escrow available (final head) minus reserved_unindexed, never below 0. */
  readonly quotable: string
  /** quote_size minus the set's used (SET_USED), never below 0. */
  readonly set_remaining: string
}

export interface CandidateQuery {
  /** The taker's venue: quotes must pay there. */
  readonly from: { readonly id: string; readonly chainId: number; readonly token: string }
  /** The makers' venue: orders live there. */
  readonly to: string
  /** `settlement.lock_cutoff_seconds`: a set must stay valid longer than this from now. */
  readonly lockCutoffSeconds: number
  /**
   * Lock the candidates' order rows (`for update of o`, in order id order) until the transaction ends, so a take
   * can route and reserve without another take over-allocating the same orders. Only inside a transaction.
   */
  readonly forUpdate?: boolean
}

/** One statement of the candidate query, optionally locking the candidates' order rows (`for update of o`). */
const candidates = (sql: SqlClient.SqlClient, q: CandidateQuery, lock: boolean) =>
  sql<QuoteCandidateRow>`
      with ${sql.unsafe(RESERVATIONS_CTE)},
      order_reserved as (
        select order_id, sum(amount) as amount from reserved_unindexed group by order_id
      )
      select o.id as order_id, s.sequence::text as sequence, s.quote_identity_id::text as identity_id,
             s.identity_generation::text as identity_generation, (q.ordinality - 1)::int as quote_index,
             q.quote, s.quote_size::text as quote_size, s.valid_until, s.signature,
             greatest(e.available - coalesce(r.amount, 0), 0)::text as quotable,
             greatest(s.quote_size - u.amount, 0)::text as set_remaining
      from quote_sets s
      join orders o on o.id = s.order_id
      join quote_identities i on i.id = s.quote_identity_id
      join escrow_orders e on e.venue = o.venue and e.order_id = o.id
      cross join lateral (${sql.unsafe(SET_USED)}) u
      cross join lateral jsonb_array_elements(s.quotes) with ordinality as q(quote, ordinality)
      left join order_reserved r on r.order_id = o.id
      where s.active
        and o.state = 'funded'
        and o.venue = ${q.to}
        and s.quote_identity_id = o.quote_identity_id
        and i.revoked_at is null
        and i.lease_expires_at > now()
        and i.generation = s.identity_generation
        and i.cancel_epoch = s.cancel_epoch
        and s.valid_until > now() + make_interval(secs => ${q.lockCutoffSeconds})
        and jsonb_typeof(q.quote) = 'object'
        and q.quote ->> 'venue' = ${q.from.id}
        and q.quote ->> 'chain_id' = ${String(q.from.chainId)}
        and lower(q.quote ->> 'token') = ${q.from.token.toLowerCase()}
      order by o.id, s.sequence, q.ordinality
      ${lock ? sql.unsafe("for update of o") : sql.unsafe("")}`

/**
 * The quotes a take from `from` to `to` may use NOW (database time): active sets of funded orders on `to`, whose
 * identity is not revoked, whose lease is live at the set's generation and whose cancel epoch is the identity's;
 * valid for more than the lock cutoff; each quote of such a set paying on `from` (venue, chain id and token as
 * configured now) is one candidate, with its index in the signed set, its order's quotable and its set's remaining
 * net of reservations (RESERVATIONS_CTE). Orders without an escrow index row have nothing quotable and are left out.
 *
 * With `forUpdate`, two statements: the first locks the candidates' order rows (in order id order, so concurrent
 * takes cannot deadlock on them); the second reads the amounts again. Under READ COMMITTED each statement has its own
 * snapshot, and the first one's sums may predate a take that held the locks and committed while we waited; the
 * second sees it. Rows of orders the first statement did not lock (a set published in between) are left out.
 */
export const loadQuoteCandidates = (q: CandidateQuery) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) => {
    if (q.forUpdate !== true) return candidates(sql, q, false)
    return Effect.gen(function* () {
      const locked = new Set((yield* candidates(sql, q, true)).map((r) => r.order_id))
      const fresh = yield* candidates(sql, q, false)
      return fresh.filter((r) => locked.has(r.order_id))
    })
  })

const AMOUNT = /^[0-9]{1,78}$/

/**
 * The router's view of a row; undefined for a row whose amounts are not decimal base units (published quotes are
 * validated, so this only guards against a hand-edited row).
 */
export const toTakeCandidate = (row: QuoteCandidateRow): TakeCandidate | undefined => {
  const { supply, receive, min_fill } = row.quote
  const amounts = [supply, receive, min_fill, row.quotable, row.set_remaining, row.sequence]
  if (!amounts.every((a) => typeof a === "string" && AMOUNT.test(a))) return undefined
  return {
    orderId: row.order_id,
    sequence: BigInt(row.sequence),
    identityId: row.identity_id,
    quoteIndex: row.quote_index,
    supply: BigInt(supply),
    receive: BigInt(receive),
    minFill: BigInt(min_fill),
    quotable: BigInt(row.quotable),
    setRemaining: BigInt(row.set_remaining),
  }
}
