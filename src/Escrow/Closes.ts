import { SqlClient } from "@effect/sql"
import { Effect, Option } from "effect"
import {
  CLOSING_GRACE_SECONDS,
  type CloseKind,
  type CloseState,
  isZeroOrder,
  PENDING_CLOSES_LIMIT,
} from "../Domain/Close.ts"
import { bump, closeTransitions } from "../Observability/Metrics.ts"
import { appendJournal } from "../Sql/Journal.ts"

/**
 * The close queue (migration 0010): one persisted queue per (owner, chain), the `closing` flag's state machine,
 * and its journal rows (`close.pending`, `close.final`, `close.reverted`, `close.expired`).
 *
 * The queue's invariants — "at most 10 pending", "one pending close per order" and "same terms → same close" —
 * are facts about rows. `enqueueClose` enforces them in ONE SQL transaction that first locks the (owner, chain)
 * row of `close_queues`, so they hold across every process on the database, with the close row, its journal row
 * and its TxRelayer request committed together. The unique indexes (digest; escrow + owner + nonce; one pending
 * per order) back the lock up. It runs in the queue's entity (actors/CloseQueue.ts, one per (owner, chain)),
 * which also runs the transitions (`settleCloses` restricted to its key) from these rows and the relayer's
 * outcomes, so a restart or a move between runners loses nothing.
 */

export interface CloseRow {
  readonly id: string
  readonly kind: CloseKind
  readonly master: string
  readonly venue: string
  readonly chain_id: string
  readonly escrow: string
  /** 1 = the venue's v1 escrow, 2 = its SettlementEscrowV2 (migration 0021). */
  readonly escrow_version: 1 | 2
  readonly order_id: string
  readonly owner: string
  readonly amount: string
  readonly dex: string
  readonly to_margin: boolean
  readonly nonce: string | null
  readonly deadline: string | null
  readonly digest: string | null
  readonly relay_key: string
  readonly state: CloseState
  readonly refused: boolean | null
  readonly released: string | null
  readonly tx_hash: string | null
  readonly error: string
  readonly created_at: Date
  readonly updated_at: Date
}

const COLS = `id::text, kind, master, venue, chain_id::text, escrow, escrow_version::int as escrow_version, order_id, owner, amount::text, dex::text,
  to_margin, nonce::text, deadline::text, digest, relay_key, state, refused, released::text, tx_hash, error,
  created_at, updated_at`

/** COLS of the `closes c` alias. */
const C_COLS = COLS.split(",")
  .map((c) => `c.${c.trim()}`)
  .join(", ")

/** Journal kinds of the transitions (literal, so the schema test finds every one). */
const TRANSITION_KIND = { final: "close.final", reverted: "close.reverted", expired: "close.expired" } as const

export interface NewClose {
  readonly id: string
  readonly kind: CloseKind
  readonly master: string
  readonly venue: string
  readonly chainId: number
  readonly escrow: string
  readonly escrowVersion: 1 | 2
  readonly orderId: string
  readonly owner: string
  /** The order's available amount when the close was accepted (from the index). */
  readonly amount: bigint
  readonly dex: number
  readonly toMargin: boolean
  /** Signed closes only. */
  readonly nonce: bigint | null
  readonly deadline: bigint | null
  readonly digest: string | null
  readonly signature: string | null
  readonly relayKey: string
  readonly nowMs: number
}

export type EnqueueOutcome =
  | { readonly _tag: "Created"; readonly row: CloseRow }
  /** The same terms were accepted before (a retry): that close. */
  | { readonly _tag: "Existing"; readonly row: CloseRow }
  /** Another close of this order is pending. */
  | { readonly _tag: "Pending"; readonly row: CloseRow }
  /** The owner already has the maximum of pending closes on this chain. */
  | { readonly _tag: "Limit" }
  /** The owner's nonce belongs to another accepted close (other terms). */
  | { readonly _tag: "NonceUsed" }

const lower = (s: string) => s.toLowerCase()

/** Journal payload of a close, plus the transition's own fields. */
const payloadOf = (r: CloseRow, extra: Record<string, unknown>) => ({
  close_id: r.id,
  kind: r.kind,
  venue: r.venue,
  chain_id: Number(r.chain_id),
  order_id: r.order_id,
  owner: r.owner,
  amount: r.amount,
  dex: Number(r.dex),
  to_margin: r.to_margin,
  nonce: r.nonce,
  deadline: r.deadline === null ? null : Number(r.deadline),
  tx_hash: r.tx_hash,
  ...extra,
})

export const findCloseByDigest = (digest: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<CloseRow>`select ${sql.literal(COLS)} from closes where digest = ${lower(digest)}`.pipe(
      Effect.map((rows) => Option.fromNullable(rows[0])),
    ),
  )

/** The pending close of an order (or of an owner's zero-id balance) on escrow `version`, if any. */
export const pendingCloseOf = (venue: string, orderId: string, owner: string, version: 1 | 2 = 1) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<CloseRow>`select ${sql.literal(COLS)} from closes
      where venue = ${venue} and escrow_version = ${version} and order_id = ${lower(orderId)}
        and owner = ${lower(owner)} and state = 'pending'`.pipe(Effect.map((rows) => Option.fromNullable(rows[0]))),
  )

/**
 * Hands a close to the (owner, chain) queue: in one transaction, under the queue row's lock, it de-duplicates
 * (digest, then the managed close's terms), enforces one pending close per order and the pending limit, inserts
 * the close as pending with its `close.pending` journal row, and runs `relay` (the TxRelayer submission, keyed by
 * `relayKey`) in the same transaction, so the close exists if and only if its transaction is queued. A failing
 * `relay` rolls everything back.
 */
export const enqueueClose = <E, R>(c: NewClose, relay: Effect.Effect<unknown, E, R>) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql
      .withTransaction(
        Effect.gen(function* () {
          const owner = lower(c.owner)
          const orderId = lower(c.orderId)
          yield* sql`insert into close_queues (owner, chain_id) values (${owner}, ${c.chainId}) on conflict do nothing`
          yield* sql`select 1 from close_queues where owner = ${owner} and chain_id = ${c.chainId} for update`
          if (c.digest !== null) {
            const [same] =
              yield* sql<CloseRow>`select ${sql.literal(COLS)} from closes where digest = ${lower(c.digest)}`
            if (same) return { _tag: "Existing", row: same } as EnqueueOutcome
            const used = yield* sql`select 1 from closes
            where chain_id = ${c.chainId} and escrow = ${lower(c.escrow)} and owner = ${owner}
              and nonce = ${c.nonce!.toString()}`
            if (used.length > 0) return { _tag: "NonceUsed" } as EnqueueOutcome
          }
          const [pending] = yield* sql<CloseRow>`select ${sql.literal(COLS)} from closes
          where venue = ${c.venue} and escrow_version = ${c.escrowVersion} and order_id = ${orderId}
            and owner = ${owner} and state = 'pending'`
          if (pending) {
            const sameManaged =
              c.kind === "managed" &&
              pending.kind === "managed" &&
              Number(pending.dex) === c.dex &&
              pending.to_margin === c.toMargin
            return { _tag: sameManaged ? "Existing" : "Pending", row: pending } as EnqueueOutcome
          }
          const [count] = yield* sql<{ n: string }>`select count(*)::text as n from closes
          where owner = ${owner} and chain_id = ${c.chainId} and state = 'pending'`
          if (Number(count?.n ?? 0) >= PENDING_CLOSES_LIMIT) return { _tag: "Limit" } as EnqueueOutcome
          const now = new Date(c.nowMs)
          const [row] = yield* sql<CloseRow>`
          insert into closes (id, kind, master, venue, chain_id, escrow, escrow_version, order_id, owner, amount, dex,
            to_margin, nonce, deadline, digest, signature, relay_key, state, created_at, updated_at)
          values (${c.id}, ${c.kind}, ${lower(c.master)}, ${c.venue}, ${c.chainId}, ${lower(c.escrow)},
            ${c.escrowVersion}, ${orderId},
            ${owner}, ${c.amount.toString()}, ${c.dex}, ${c.toMargin}, ${c.nonce?.toString() ?? null},
            ${c.deadline?.toString() ?? null}, ${c.digest === null ? null : lower(c.digest)}, ${c.signature},
            ${c.relayKey}, 'pending', ${now}, ${now})
          returning ${sql.literal(COLS)}`
          yield* appendJournal({ kind: "close.pending", master: row!.master, payload: payloadOf(row!, {}) })
          yield* relay
          return { _tag: "Created", row: row! } as EnqueueOutcome
        }),
      )
      .pipe(Effect.tap((outcome) => (outcome._tag === "Created" ? closeChanged(outcome.row, null) : Effect.void))),
  )

/** A close row joined with its relayer request, its indexed OrderClosed event and the venue's index cursor. */
export interface OpenClose extends CloseRow {
  readonly tx_status: string | null
  readonly r_tx_hash: string | null
  readonly tx_block: string | null
  readonly tx_error: string | null
  readonly ev_refused: boolean | null
  readonly ev_amount: string | null
  readonly indexed_block: string | null
}

type Transition =
  | { readonly to: "final"; readonly refused: boolean | null; readonly released: string | null }
  | { readonly to: "reverted"; readonly reason: string }
  | { readonly to: "expired" }

/** Decides what an open close becomes now, if anything. */
export const nextTransition = (r: OpenClose, nowMs: number): Transition | undefined => {
  if (r.tx_status === "reverted" || r.tx_status === "replaced") {
    return {
      to: "reverted",
      reason:
        r.tx_status === "replaced"
          ? "the transaction was replaced (its nonce was consumed by another transaction)"
          : (r.tx_error ?? "reverted"),
    }
  }
  if (r.tx_status === "final") {
    // Final once the index shows it too, so that GET /v1/escrow never shows closing false with stale funds.
    if (r.ev_amount !== null) return { to: "final", refused: r.ev_refused, released: r.ev_amount }
    if (r.indexed_block !== null && r.tx_block !== null && BigInt(r.indexed_block) >= BigInt(r.tx_block)) {
      return { to: "final", refused: null, released: null }
    }
  }
  if (r.state === "pending" && r.deadline !== null && nowMs > (Number(r.deadline) + CLOSING_GRACE_SECONDS) * 1000) {
    return { to: "expired" }
  }
  return undefined
}

const applyTransition = (r: OpenClose, t: Transition, nowMs: number) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql
      .withTransaction(
        Effect.gen(function* () {
          const now = new Date(nowMs)
          const txHash = r.r_tx_hash ?? r.tx_hash
          const set =
            t.to === "final"
              ? { state: "final", refused: t.refused, released: t.released, tx_hash: txHash, ended_at: now }
              : t.to === "reverted"
                ? { state: "reverted", tx_hash: txHash, error: t.reason.slice(0, 500), ended_at: now }
                : { state: "expired", tx_hash: txHash, ended_at: now }
          const [row] = yield* sql<CloseRow>`
          update closes set ${sql.update(set)}, updated_at = ${now}
          where id = ${r.id} and state = ${r.state}
          returning ${sql.literal(COLS)}`
          if (row === undefined) return false
          const extra =
            t.to === "final"
              ? {
                  amount: t.released ?? row.amount,
                  refused: t.refused,
                  block_number: r.tx_block,
                  destination: t.refused === true ? "balance" : row.to_margin ? "margin" : "wallet",
                }
              : t.to === "reverted"
                ? { reason: row.error }
                : { expired_at: Number(row.deadline) + CLOSING_GRACE_SECONDS }
          yield* appendJournal({ kind: TRANSITION_KIND[t.to], master: row.master, payload: payloadOf(row, extra) })
          if (t.to === "final" && !isZeroOrder(row.order_id)) yield* markOrderClosed(row, now)
          return row
        }),
      )
      .pipe(
        Effect.flatMap((row) => (row === false ? Effect.succeed(false) : Effect.as(closeChanged(row, r.state), true))),
      ),
  )

/** After the change committed: one log line (the close, its order and relay key) and the transitions counter. */
const closeChanged = (row: CloseRow, from: CloseState | null) =>
  Effect.suspend(() => {
    bump(closeTransitions, [["state", row.state]])
    const line = row.state === "reverted" || row.state === "expired" ? Effect.logWarning : Effect.logInfo
    return line(from === null ? `close ${row.state}` : `close ${from} -> ${row.state}`).pipe(
      Effect.annotateLogs({
        close_id: row.id,
        kind: row.kind,
        venue: row.venue,
        chain_id: Number(row.chain_id),
        order_id: row.order_id,
        owner: row.owner,
        tx_key: row.relay_key,
        state: row.state,
        ...(row.tx_hash === null ? {} : { tx_hash: row.tx_hash }),
        ...(row.error === "" ? {} : { error: row.error }),
      }),
    )
  })

/**
 * The service's own order record goes `closed` once the close's escrow holds nothing of it any more (a v2 order
 * with locks left goes later: src/Orders/Repo.ts settleClosedV2Orders).
 */
const markOrderClosed = (close: CloseRow, now: Date) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    Effect.gen(function* () {
      const closed = yield* close.escrow_version === 2
        ? sql<{ id: string; master: string; quote_identity_id: string }>`
            update orders o set state = 'closed', updated_at = ${now}
            from escrow_v2_orders e
            where o.id = ${close.order_id} and o.venue = ${close.venue} and o.state = 'funded'
              and o.escrow_version = 2 and o.owner_address = ${close.owner}
              and e.venue = o.venue and e.owner = o.owner_address and e.order_id = o.id
              and e.available = 0 and e.locked = 0
            returning o.id, o.master, o.quote_identity_id::text`
        : sql<{ id: string; master: string; quote_identity_id: string }>`
            update orders o set state = 'closed', updated_at = ${now}
            from escrow_orders e
            where o.id = ${close.order_id} and o.venue = ${close.venue} and o.state = 'funded'
              and o.escrow_version = 1
              and e.venue = o.venue and e.order_id = o.id and e.available = 0 and e.locked = 0
            returning o.id, o.master, o.quote_identity_id::text`
      for (const o of closed) {
        yield* appendJournal({
          kind: "order.closed",
          master: o.master,
          payload: { order_id: o.id, identity_id: o.quote_identity_id },
        })
      }
    }),
  )

/** One (owner, chain) close queue: the key of its entity (actors/CloseQueue.ts), "owner:chainId". */
export interface CloseQueueKey {
  readonly owner: string
  readonly chainId: number
}

/**
 * One pass of the close queue: every pending close (and every expired one whose transaction has since ended)
 * moves on from the relayer's outcome, the escrow index and the clock (`nowMs`); only the closes of `key`'s
 * (owner, chain) when given (the entity's pass), else all of them. The index is the close's own
 * escrow's: v1's escrow_closes and chain_status cursor, or v2's raw OrderClosed events (escrow_v2_events, which
 * has no closes table) and escrow_v2_cursor. Each transition is guarded
 * (applies only from the state read) and journaled in its own transaction. Returns the number of transitions.
 */
export const settleCloses = (nowMs: number, limit = 500, key?: CloseQueueKey) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    Effect.gen(function* () {
      const scope = key === undefined ? sql`true` : sql`c.owner = ${lower(key.owner)} and c.chain_id = ${key.chainId}`
      const open = yield* sql<OpenClose>`
        select ${sql.literal(C_COLS)},
          r.status as tx_status, r.tx_hash as r_tx_hash, r.block_number::text as tx_block,
          coalesce(nullif(r.revert_reason, ''), nullif(r.error, '')) as tx_error,
          ev.refused as ev_refused, ev.amount::text as ev_amount, s.indexed_block::text as indexed_block
        from closes c
        left join relayer_requests r on r.idempotency_key = c.relay_key
        left join lateral (
          select e.refused, e.amount from escrow_closes e
          where c.escrow_version = 1 and e.venue = c.venue and e.order_id = c.order_id and e.tx_hash = r.tx_hash
          union all
          select (e.args->>'refused')::boolean, (e.args->>'amount')::numeric from escrow_v2_events e
          where c.escrow_version = 2 and e.venue = c.venue and e.event = 'OrderClosed' and e.tx_hash = r.tx_hash
            and e.args->>'orderId' = c.order_id and e.args->>'owner' = c.owner
          limit 1
        ) ev on true
        left join lateral (
          select indexed_block from chain_status where c.escrow_version = 1 and venue = c.venue
          union all
          select indexed_block from escrow_v2_cursor where c.escrow_version = 2 and venue = c.venue
          limit 1
        ) s on true
        where (c.state = 'pending' or (c.state = 'expired' and r.status in ('final', 'reverted', 'replaced')))
          and ${scope}
        order by c.created_at limit ${limit}`
      let moved = 0
      for (const r of open) {
        const t = nextTransition(r, nowMs)
        if (t === undefined) continue
        if (yield* applyTransition(r, t, nowMs)) moved++
      }
      return moved
    }),
  )

/**
 * What keeps a close queue busy: a pending close, or an expired one whose relayed transaction has not ended or
 * whose end is not recorded yet (it ends final or reverted later). Both finish: a relayer request always ends.
 */
const OPEN = `(c.state = 'pending' or (c.state = 'expired' and exists (
  select 1 from relayer_requests r where r.idempotency_key = c.relay_key)))`

/** Whether the (owner, chain) queue still has a close to move on (its entity keeps looking while it has). */
export const closeQueueOpen = (key: CloseQueueKey) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql`select 1 from closes c
      where c.owner = ${lower(key.owner)} and c.chain_id = ${key.chainId} and ${sql.literal(OPEN)} limit 1`.pipe(
      Effect.map((rows) => rows.length > 0),
    ),
  )

/** The (owner, chain) queues with a close to move on. */
export const openCloseQueues = Effect.flatMap(SqlClient.SqlClient, (sql) =>
  sql<{ owner: string; chain_id: string }>`
    select distinct c.owner, c.chain_id::text as chain_id from closes c where ${sql.literal(OPEN)} limit 10000`.pipe(
    Effect.map((rows) => rows.map((r): CloseQueueKey => ({ owner: r.owner, chainId: Number(r.chain_id) }))),
  ),
)

/** The queue of a close's relayer request (its idempotency key), if it is a close's. */
export const closeQueueOfRelayKey = (relayKey: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<{ owner: string; chain_id: string }>`select owner, chain_id::text as chain_id from closes
      where relay_key = ${relayKey} limit 1`.pipe(
      Effect.map((rows) =>
        Option.map(
          Option.fromNullable(rows[0]),
          (r): CloseQueueKey => ({ owner: r.owner, chainId: Number(r.chain_id) }),
        ),
      ),
    ),
  )

/** The closes of an owner on a chain that are pending (the queue's length). */
export const pendingCount = (owner: string, chainId: number) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<{ n: string }>`select count(*)::text as n from closes
      where owner = ${lower(owner)} and chain_id = ${chainId} and state = 'pending'`.pipe(
      Effect.map((rows) => Number(rows[0]?.n ?? 0)),
    ),
  )
