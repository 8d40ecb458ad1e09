import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import type { TakeCandidate } from "../Domain/TakeRouter.ts"
import { type CandidateQuery, type QuoteCandidateRow, setUsedOf } from "./QuoteCandidates.ts"

/**
 * Settlement v2 candidates (src/Takes/QuoteCandidates.ts is v1's): quotes of live v2 sets of funded v2 orders
 * (orders.escrow_version = 2). The same reservation rules as v1, keyed as v2 keys them:
 *
 * - an order's quotable is its `escrow_v2_orders.available` (final head; indexed locks already left it) minus
 *   Σ amountOut of open v2 fills whose lock the v2 index does not hold yet (by fill digest);
 * - a set's used is Σ amountOut of its v2 fills whose indexed lock is `locked` or `claimed` (the escrow's
 *   `filledOut`), or that are live reservations without an indexed lock;
 * - a set takes one fill per hashlock index; every fill holds its index except one that expired unsigned (never
 *   signed, so never locked: migrations/0029, fills_hashlock_index), so a set whose held indexes number
 *   `hashlock_count` quotes nothing (`hashlocksLeft` = count − held; the take picks the lowest free ones);
 * - an order with a close requested on chain (sticky) takes no lock, so it is left out;
 * - an identity flagged for fading (quote_identities.fade_flagged_at, set by settlement: src/Settlement/RepoV2.ts)
 *   is not routed to;
 * - a quote must name the `from` venue's v2 escrow (the escrow's lock checks `quote.escrow == fill.takerEscrow`).
 */
/**
 * The fills that hold their hashlock index (alias-free; the predicate of the unique index fills_hashlock_index,
 * migrations/0029, so both the count and the picker can use it).
 */
export const HOLDS_HASHLOCK_INDEX = "hashlock_index is not null and not (state = 'expired' and signature is null)"

const RESERVATIONS_V2_CTE = `
  reserved_unindexed (order_id, amount) as (
    select f.order_id, f.amount_out
    from fills f join takes t on t.id = f.take_id
    where f.fill_digest is not null and not f.final
      and (f.state <> 'reserved' or t.pay_deadline > now())
      and not exists (select 1 from escrow_v2_locks l where l.venue = f.maker_venue and l.fill_digest = f.fill_digest)
  )`

/** A v2 set's used (QuoteCandidates.ts setUsedOf): its fills have digests, and the v2 index keys locks by them. */
const SET_USED = `${setUsedOf({
  table: "escrow_v2_locks",
  on: "l.fill_digest = f.fill_digest",
  present: "l.fill_digest is not null",
})}
    and f.fill_digest is not null`

/**
 * How many hashlock indexes fills hold in the candidate set `s`, counted per set through fills_hashlock_index's
 * (order_id, sequence) prefix. A count of every set's fills grouped first would read that whole index on each take:
 * it grows with every fill ever made.
 */
const HELD_INDEXES = `
  select count(*) as held from fills h
  where h.order_id = s.order_id and h.sequence = s.sequence and ${HOLDS_HASHLOCK_INDEX}`

/**
 * The `limit` lowest hashlock indexes of the candidate set `s` that no fill holds, lowest first (a take's fills get
 * them in route order). They all lie below held + limit (at most `held` of those are held) and below the count; one
 * set difference over that range and the set's held indexes (an index range read, as HELD_INDEXES's), not a probe
 * per index. Read in the same statement as `n.held`, so both see the same fills.
 */
const freeIndexesOf = (sql: SqlClient.SqlClient, limit: number) => sql`
  array(
    select g.i from generate_series(0, least(s.hashlock_count, n.held::int + ${limit}::int) - 1) g(i)
    except
    select h.hashlock_index from fills h
    where h.order_id = s.order_id and h.sequence = s.sequence and ${sql.unsafe(HOLDS_HASHLOCK_INDEX)}
    order by 1 limit ${limit}::int)`

/** A v2 candidate row: v1's fields plus the order's owner and the set's hashlock state. */
export interface QuoteCandidateV2Row extends QuoteCandidateRow {
  /** The order's owner (lowercase): the Fill's `owner`, half of the escrow's order key. */
  readonly owner: string
  readonly issued_at: string
  readonly hashlock_root: string
  readonly hashlock_count: number
  /** How many of the set's hashlock indexes fills hold (HOLDS_HASHLOCK_INDEX). */
  readonly hashlocks_held: number
  /** With `freeIndexes`: the set's lowest free hashlock indexes, at most that many (freeIndexesOf); else null. */
  readonly free_indexes: ReadonlyArray<number> | null
}

export interface CandidateQueryV2 extends CandidateQuery {
  /** The `from` venue's SettlementEscrowV2: quotes must pay into it. */
  readonly takerEscrow: string
  /**
   * With `forUpdate`: also read each set's lowest free hashlock indexes, at most this many (the take's max_parts),
   * in the fresh read under the order rows' locks, so the take needs no statement of its own for them.
   */
  readonly freeIndexes?: number
}

const candidates = (sql: SqlClient.SqlClient, q: CandidateQueryV2, lock: boolean, free?: number) =>
  sql<QuoteCandidateV2Row>`
      with ${sql.unsafe(RESERVATIONS_V2_CTE)},
      order_reserved as (select order_id, sum(amount) as amount from reserved_unindexed group by order_id)
      select o.id as order_id, o.owner_address as owner, s.sequence::text as sequence,
             s.quote_identity_id::text as identity_id, s.identity_generation::text as identity_generation,
             (q.ordinality - 1)::int as quote_index, q.quote, s.quote_size::text as quote_size, s.valid_until,
             s.signature, s.issued_at::text as issued_at, s.hashlock_root, s.hashlock_count,
             n.held::int as hashlocks_held,
             ${free === undefined ? sql.unsafe("null::int[]") : freeIndexesOf(sql, free)} as free_indexes,
             greatest(e.available - coalesce(r.amount, 0), 0)::text as quotable,
             greatest(s.quote_size - u.amount, 0)::text as set_remaining
      from quote_sets s
      join orders o on o.id = s.order_id
      join quote_identities i on i.id = s.quote_identity_id
      join escrow_v2_orders e on e.venue = o.venue and e.owner = o.owner_address and e.order_id = o.id
      cross join lateral (${sql.unsafe(SET_USED)}) u
      cross join lateral (${sql.unsafe(HELD_INDEXES)}) n
      cross join lateral jsonb_array_elements(s.quotes) with ordinality as q(quote, ordinality)
      left join order_reserved r on r.order_id = o.id
      where s.active
        and o.state = 'funded'
        and o.escrow_version = 2
        and o.venue = ${q.to}
        and not e.close_requested
        and s.hashlock_count is not null and s.hashlock_root is not null and s.issued_at is not null
        and n.held < s.hashlock_count
        and s.quote_identity_id = o.quote_identity_id
        and i.revoked_at is null
        and i.fade_flagged_at is null
        and i.lease_expires_at > now()
        and i.generation = s.identity_generation
        and i.cancel_epoch = s.cancel_epoch
        and s.valid_until > now() + make_interval(secs => ${q.lockCutoffSeconds})
        and jsonb_typeof(q.quote) = 'object'
        and q.quote ->> 'venue' = ${q.from.id}
        and q.quote ->> 'chain_id' = ${String(q.from.chainId)}
        and lower(q.quote ->> 'token') = ${q.from.token.toLowerCase()}
        and lower(q.quote ->> 'escrow') = ${q.takerEscrow.toLowerCase()}
      order by o.id, s.sequence, q.ordinality
      ${lock ? sql.unsafe("for update of o") : sql.unsafe("")}`

/**
 * The v2 quotes a take from `from` to `to` may use NOW (database time); with `forUpdate`, the candidates' order rows
 * are locked first and the amounts (and held hashlock indexes) read again, as loadQuoteCandidates does, so
 * concurrent takes never reserve the same index or over-allocate an order.
 */
export const loadQuoteCandidatesV2 = (q: CandidateQueryV2) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) => {
    if (q.forUpdate !== true) return candidates(sql, q, false)
    return Effect.gen(function* () {
      const locked = new Set((yield* candidates(sql, q, true)).map((r) => r.order_id))
      const fresh = yield* candidates(sql, q, false, q.freeIndexes)
      return fresh.filter((r) => locked.has(r.order_id))
    })
  })

const AMOUNT = /^[0-9]{1,78}$/

/** The router's view of a v2 row (undefined for a hand-edited row whose amounts are not base units). */
export const toTakeCandidateV2 = (row: QuoteCandidateV2Row): TakeCandidate | undefined => {
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
    hashlocksLeft: row.hashlock_count - row.hashlocks_held,
  }
}
