/**
 * Trades: a trade is a settled fill (`fills.state = 'settled'`, `settled_at` set once by the Settlement actor); a
 * v2 fill settled by delivery without any payment has no `settled_at` and is no trade.
 * `from` is the taker's venue (where amount_in was paid), `to` the maker's (where amount_out was delivered).
 * Reads use the partial index `fills_settled (settled_at desc, id desc) where state = 'settled'` (0011); a `mine`
 * page its taker and maker masters' indexes (0036); a pair's trades each direction's own (fills_settled_pair, 0042).
 */
import { SqlClient, type Statement } from "@effect/sql"
import { Effect } from "effect"
import type { TradePosition } from "../Domain/TradeCursor.ts"

export interface RecentTradeRow {
  readonly id: string
  readonly from_venue: string
  readonly amount_in: string
  readonly amount_out: string
  readonly settled_at: Date
}

/** The pair condition, either direction (`a`/`b` are venue ids). */
const pairCondition = (sql: SqlClient.SqlClient, pair: readonly [string, string] | null) =>
  pair === null
    ? sql`true`
    : sql`((f.maker_venue = ${pair[0]} and f.taker_venue = ${pair[1]})
          or (f.maker_venue = ${pair[1]} and f.taker_venue = ${pair[0]}))`

/**
 * The ids of the newest `n` settled fills between the pair's venues that pass `where` (on `f`): the newest `n` of
 * each direction, each read in order from its own index (fills_settled_pair, migration 0042), then the newest `n`
 * of both by the caller. Walking every settled fill newest first for the pair's read the whole history for a pair
 * that rarely trades. The two directions are disjoint unless a = b (then one).
 */
const pairIds = (sql: SqlClient.SqlClient, pair: readonly [string, string], where: Statement.Fragment, n: number) => {
  const direction = (maker: string, taker: string) => sql`
    (select f.id from fills f where f.state = 'settled' and f.maker_venue = ${maker} and f.taker_venue = ${taker}
       and f.settled_at is not null and ${where} order by f.settled_at desc, f.id desc limit ${n})`
  return pair[0] === pair[1]
    ? direction(pair[0], pair[1])
    : sql`${direction(pair[0], pair[1])} union all ${direction(pair[1], pair[0])}`
}

/** The last `limit` trades between two venues, either direction, latest first. */
export const recentTrades = (a: string, b: string, limit: number) =>
  Effect.flatMap(
    SqlClient.SqlClient,
    (sql) => sql<RecentTradeRow>`
      with pair as (${pairIds(sql, [a, b], sql`true`, limit)})
      select f.id, f.taker_venue as from_venue, f.amount_in::text as amount_in, f.amount_out::text as amount_out,
        f.settled_at
      from pair join fills f on f.id = pair.id
      order by f.settled_at desc, f.id desc
      limit ${limit}`,
  )

export interface TradeRow {
  readonly id: string
  readonly order_id: string
  readonly from_venue: string
  readonly to_venue: string
  readonly amount_in: string
  readonly amount_out: string
  readonly settled_at: Date
  /** `settled_at` in microseconds (cursors). */
  readonly settled_us: string
  readonly fill_key: string
  readonly quote_index: number
  readonly fill: unknown
  readonly fill_signature: string | null
  readonly payer: string
  readonly quote_signer: string | null
  readonly qs_sequence: string | null
  readonly qs_generation: string | null
  readonly qs_quote_size: string | null
  /** Unix seconds. */
  readonly qs_valid_until: string | null
  readonly qs_quotes: ReadonlyArray<Record<string, unknown>> | null
  readonly qs_signature: string | null
  readonly secret: string | null
  /** 1 or 2 (the take's escrow version). The fields below are set for v2 fills only. */
  readonly escrow_version: number
  readonly fill_digest: string | null
  readonly hashlock_index: number | null
  readonly hashlock_proof: ReadonlyArray<string> | null
  readonly order_owner: string | null
  /** Unix seconds. */
  readonly qs_issued_at: string | null
  readonly qs_hashlock_root: string | null
  readonly qs_hashlock_count: number | null
  readonly pay_authorization: string | null
  /** The take's Fill digests in `to_sign` order: what its PayTake lists (and its payTake pays). */
  readonly take_digests: ReadonlyArray<string> | null
}

export interface TradeQuery {
  /** Keep trades where this master is the maker (the order's) or the taker (the take's); null keeps all. */
  readonly master: string | null
  readonly pair: readonly [string, string] | null
  readonly after: TradePosition | undefined
  readonly limit: number
}

/**
 * A `mine` page's candidates: the newest `n` settled fills that pass `where` (the page's pair and cursor, on `f`)
 * where `master` is the taker, and the newest `n` where it is the maker, each read in order from its own index
 * (fills_settled_taker, fills_settled_maker: migrations/0036); the page is the newest `n` of both. Walking every
 * settled fill newest first instead read the whole history for an account with few trades; reading all the
 * account's fills first, the whole of its own for one with many.
 */
const minePage = (sql: SqlClient.SqlClient, master: string, where: Statement.Fragment, n: number) => sql`
  with candidates as (
    (select f.id from fills f where f.state = 'settled' and f.taker_master = ${master} and f.settled_at is not null
       and ${where} order by f.settled_at desc, f.id desc limit ${n})
    union
    (select f.id from fills f where f.state = 'settled' and f.maker_master = ${master} and f.settled_at is not null
       and ${where} order by f.settled_at desc, f.id desc limit ${n})
  )`

/**
 * One page of trades, newest first by (settled_at, id), with what their proofs need: the quote set named by the
 * fill's (order, sequence), and the secret as the escrow index saw it revealed (v1: maker lock, else taker payment;
 * v2: the maker's own claimPayment on the taker chain, else the claim on the maker chain). A v2 fill adds its
 * digest, hashlock index and Merkle proof, the order's owner (signed in the v2 set), the set's v2 fields, and the
 * take's pay authorisation with the digests it covers (the take's fills in `to_sign` order, as
 * Store/SettlementV2.takeFillsV2 relays them). The account filter is applied in the query, before the limit, so
 * `mine` pages are full pages; such a page reads the account's own fills first (minePage).
 */
export const tradePage = (q: TradeQuery) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) => {
    const after =
      q.after === undefined
        ? sql`true`
        : sql`(f.settled_at, f.id) < ('epoch'::timestamptz
                + ${q.after.settledMicros.toString()}::bigint * interval '1 microsecond', ${q.after.id}::uuid)`
    // The page's candidates: the account's own fills (minePage), else a pair's (pairIds), else every settled fill.
    const candidates =
      q.master !== null
        ? minePage(sql, q.master, sql`${pairCondition(sql, q.pair)} and ${after}`, q.limit + 1)
        : q.pair !== null
          ? sql`with candidates as (${pairIds(sql, q.pair, after, q.limit + 1)})`
          : sql.unsafe("")
    return sql<TradeRow>`
      ${candidates}
      select f.id, f.order_id, f.taker_venue as from_venue, f.maker_venue as to_venue,
        f.amount_in::text as amount_in, f.amount_out::text as amount_out, f.settled_at,
        ((extract(epoch from f.settled_at) * 1000000)::numeric(30, 0))::text as settled_us,
        f.fill_key, f.quote_index, f.fill, f.signature as fill_signature, f.payer,
        o.quote_signer, qs.sequence::text as qs_sequence, qs.identity_generation::text as qs_generation,
        qs.quote_size::text as qs_quote_size,
        (extract(epoch from qs.valid_until)::numeric(30, 0))::text as qs_valid_until,
        qs.quotes as qs_quotes, qs.signature as qs_signature,
        case when t.escrow_version = 2
          then coalesce(
            (select s.secret from escrow_v2_secrets s where s.venue = f.taker_venue and s.fill_digest = f.fill_digest
               and s.event = 'PaymentClaimed'),
            (select s.secret from escrow_v2_secrets s where s.venue = f.maker_venue and s.fill_digest = f.fill_digest
               and s.event = 'Claimed'))
          else coalesce(l.secret, p.secret) end as secret,
        coalesce(t.escrow_version, 1)::int as escrow_version, f.fill_digest, f.hashlock_index, f.hashlock_proof,
        o.owner_address as order_owner, qs.issued_at::text as qs_issued_at, qs.hashlock_root as qs_hashlock_root,
        qs.hashlock_count as qs_hashlock_count, t.pay_authorization,
        case when t.escrow_version = 2 then (
          select coalesce(jsonb_agg(g.fill_digest order by pos.n nulls last, g.id), '[]'::jsonb)
          from fills g
          left join lateral (select i.n from jsonb_array_elements(t.to_sign) with ordinality as i(item, n)
            where i.item->>'kind' = 'margin_move' and i.item->>'fill_id' = g.id::text) pos on true
          where g.take_id = t.id) end as take_digests
      from ${q.master === null && q.pair === null ? sql.unsafe("fills f") : sql.unsafe("candidates join fills f on f.id = candidates.id")}
      join orders o on o.id = f.order_id
      left join takes t on t.id = f.take_id
      left join quote_sets qs on qs.order_id = f.order_id and qs.sequence = f.sequence
      left join escrow_locks l on l.venue = f.maker_venue and l.fill_id = lower(f.fill_key)
        and coalesce(t.escrow_version, 1) = 1
      left join escrow_payments p on p.venue = f.taker_venue and p.fill_id = lower(f.fill_key)
        and coalesce(t.escrow_version, 1) = 1
      where f.state = 'settled' and f.settled_at is not null
        and ${pairCondition(sql, q.pair)}
        and ${q.master === null ? sql`true` : sql`(o.master = ${q.master} or t.master = ${q.master})`}
        and ${after}
      order by f.settled_at desc, f.id desc
      limit ${q.limit + 1}`.pipe(
      Effect.map((rows) => ({ rows: rows.slice(0, q.limit), hasMore: rows.length > q.limit })),
    )
  })

export interface SettlementEventRow {
  readonly fill_key: string
  readonly venue: string
  readonly event: string
  readonly tx_hash: string
  readonly block_number: string
}

/**
 * The settlement transactions of the given fills, from the escrow index (what the chain finalized, not what we
 * submitted): Locked/Claimed on the maker venue, Paid/PaymentClaimed on the taker venue.
 */
export const settlementEvents = (fills: ReadonlyArray<{ fill_key: string; maker: string; taker: string }>) =>
  fills.length === 0
    ? Effect.succeed([] as ReadonlyArray<SettlementEventRow>)
    : Effect.flatMap(
        SqlClient.SqlClient,
        (sql) => sql<SettlementEventRow>`
          select e.args ->> 'fillId' as fill_key, e.venue, e.event, e.tx_hash, e.block_number::text as block_number
          from escrow_events e
          join unnest(${fills.map((f) => f.fill_key.toLowerCase())}::text[], ${fills.map((f) => f.maker)}::text[],
                      ${fills.map((f) => f.taker)}::text[]) as k(fill_key, maker, taker)
            on e.args ->> 'fillId' = k.fill_key
          where e.event in ('Locked', 'Paid', 'Claimed', 'PaymentClaimed')
            and e.venue = case when e.event in ('Locked', 'Claimed') then k.maker else k.taker end
          order by e.block_number, e.log_index`,
      )

export interface SettlementEventV2Row {
  readonly fill_digest: string
  readonly venue: string
  readonly event: "Locked" | "Paid" | "Claimed" | "PaymentClaimed"
  readonly tx_hash: string
  readonly block_number: string
}

/**
 * The settlement transactions of the given v2 fills from the v2 escrow index (rows exist only for final events):
 * the lock (escrow_v2_locks keeps its Locked tx and block) and the claim on the maker venue, the payTake
 * (escrow_v2_payments keeps its Paid tx and block) and the maker's claimPayment on the taker venue.
 */
export const settlementEventsV2 = (fills: ReadonlyArray<{ fill_digest: string; maker: string; taker: string }>) =>
  fills.length === 0
    ? Effect.succeed([] as ReadonlyArray<SettlementEventV2Row>)
    : Effect.flatMap(SqlClient.SqlClient, (sql) => {
        // The secrets' `s.venue in (…)` is their key's first column (the `case` names s itself, so it is no key).
        const keys = sql`unnest(${fills.map((f) => f.fill_digest.toLowerCase())}::text[],
          ${fills.map((f) => f.maker)}::text[], ${fills.map((f) => f.taker)}::text[]) as k(digest, maker, taker)`
        return sql<SettlementEventV2Row>`
          select l.fill_digest, l.venue, 'Locked' as event, l.tx_hash, l.created_block::text as block_number
          from ${keys} join escrow_v2_locks l on l.venue = k.maker and l.fill_digest = k.digest
          union all
          select p.fill_digest, p.venue, 'Paid', p.tx_hash, p.created_block::text
          from ${keys} join escrow_v2_payments p on p.venue = k.taker and p.fill_digest = k.digest
          union all
          select s.fill_digest, s.venue, s.event, s.tx_hash, s.block_number::text
          from ${keys} join escrow_v2_secrets s on s.venue in (k.maker, k.taker) and s.fill_digest = k.digest
            and s.venue = case when s.event = 'Claimed' then k.maker else k.taker end`
      })
