import { SqlClient, type SqlError, type Statement } from "@effect/sql"
import { Effect } from "effect"
import type { Hex } from "viem"
import { JOURNAL_PENDING_CHANNEL, journalNotify, journalRowsInsert } from "../Sql/Journal.ts"
import {
  ATTEMPT_COLS,
  type AttemptRow,
  type RawAttempt,
  type RawRequest,
  REQUEST_COLS,
  type RequestRow,
  type TxStatus,
  toAttempt,
  toRequest,
} from "./Rows.ts"
import {
  journalPayload,
  outcomePayload,
  QUEUED,
  RELAYER_OUTCOME_CHANNEL,
  RELAYER_QUEUED_CHANNEL,
  relayerTransitionLogged,
  type TransitionItem,
  transitionEntries,
  transitionEvents,
  transitionNotices,
  transitionsLogged,
} from "./Transitions.ts"

/**
 * SQL of the relayer (migration 0005). Requests are rows keyed by idempotency key (their shape: Rows.ts); the
 * relayer singleton of a (venue, signer) drains them. Every status transition writes its journal row in the same
 * transaction and notifies RELAYER_OUTCOME_CHANNEL (Transitions.ts), so that waiters wake at once.
 */

/** A request as submitted: the row's own fields, and the submitter's trace. */
export type NewRequest = Pick<
  RequestRow,
  "idempotencyKey" | "venue" | "chainId" | "signer" | "target" | "functionName" | "calldata" | "value" | "master"
> & { readonly traceParent?: string | null }

/**
 * Inserts a request unless its key exists; returns the row and whether it was created now. A new row, its
 * `tx.queued` journal row and the wake-ups (waiters, the publisher, the venue's relayer) are one statement, atomic
 * alone (a submit is one round trip, not four); inside a caller's transaction they commit with it. On a conflict the
 * existing row is read by a second statement, whose snapshot sees the row the conflict waited for.
 */
export const insertRequest = (req: NewRequest) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const target = req.target.toLowerCase()
    const payload = journalPayload(
      {
        idempotencyKey: req.idempotencyKey,
        venue: req.venue,
        chainId: req.chainId,
        functionName: req.functionName,
        target,
      },
      QUEUED,
    )
    const also = [
      { channel: RELAYER_OUTCOME_CHANNEL, payload: outcomePayload("tx.queued", req.idempotencyKey) },
      { channel: RELAYER_QUEUED_CHANNEL, payload: req.venue },
    ]
    const entry = { kind: "tx.queued", master: req.master, payload }
    const inserted = yield* sql<RawRequest>`
      with ins as (
        insert into relayer_requests (idempotency_key, venue, chain_id, signer, target, function_name, calldata,
          value, master, status, trace_parent)
        values (${req.idempotencyKey}, ${req.venue}, ${req.chainId}, ${req.signer.toLowerCase()}, ${target},
          ${req.functionName}, ${req.calldata.toLowerCase()}, ${req.value.toString()}, ${req.master}, 'queued',
          ${req.traceParent ?? null})
        on conflict (idempotency_key) do nothing
        returning ${sql.literal(REQUEST_COLS)}
      ), appended as (${journalRowsInsert(sql, [entry], sql`exists (select 1 from ins)`)})
      select ins.*,
        (select count(*)::int from (${journalNotify(sql, also)}) n where exists (select 1 from appended)) as notified
      from ins`
    if (inserted[0] !== undefined) {
      const row = toRequest(inserted[0])
      yield* relayerTransitionLogged(row, "tx.queued", QUEUED)
      return { row, created: true }
    }
    const [existing] = yield* sql<RawRequest>`
      select ${sql.literal(REQUEST_COLS)} from relayer_requests where idempotency_key = ${req.idempotencyKey}`
    return { row: toRequest(existing!), created: false }
  })

export const requestByKey = (key: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<RawRequest>`select ${sql.literal(REQUEST_COLS)} from relayer_requests where idempotency_key = ${key}`.pipe(
      Effect.map((rows) => (rows[0] ? toRequest(rows[0]) : undefined)),
    ),
  )

export const attemptsOf = (requestIds: ReadonlyArray<bigint>) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    requestIds.length === 0
      ? Effect.succeed([] as Array<AttemptRow>)
      : sql<RawAttempt>`select ${sql.literal(ATTEMPT_COLS)} from relayer_attempts
          where ${sql.in("request_id", requestIds.map(String))} order by request_id, attempt`.pipe(
          Effect.map((rows) => rows.map(toAttempt)),
        ),
  )

const MAX = 2n ** 256n
const ascending = (a: bigint, b: bigint) => (a < b ? -1 : a > b ? 1 : 0)

/**
 * A relayer pass's work, in one round trip: `open`, the requests signed and not final yet (pending or included), in
 * nonce order; `queued`, the first `limit` queued ones, in id order. A request queued after this read is the next
 * pass's (its NOTIFY wakes the relayer at once).
 */
/** A relayer's requests in flight (pending or included), by nonce: what its follow pass looks at. */
export const openRequests = (venue: string, signer: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<RawRequest>`
      select ${sql.literal(REQUEST_COLS)} from relayer_requests
      where venue = ${venue} and signer = ${signer.toLowerCase()} and status in ('pending', 'included')`.pipe(
      Effect.map((rows) => {
        const open = rows.map(toRequest)
        // As `order by nonce` would (nulls last; a signed request always has one).
        open.sort((a, b) => ascending(a.nonce ?? MAX, b.nonce ?? MAX))
        return open
      }),
    ),
  )

/** A relayer's oldest `limit` queued requests, in the order they were queued: what its send pass signs. */
export const queuedRequests = (venue: string, signer: string, limit: number) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<RawRequest>`
      select ${sql.literal(REQUEST_COLS)} from relayer_requests
      where venue = ${venue} and signer = ${signer.toLowerCase()} and status = 'queued'
      order by id limit ${limit}`.pipe(Effect.map((rows) => rows.map(toRequest))),
  )

/** Relayer requests not yet in a block: what /health calls pending transactions. */
export const pendingTransactionCount: Effect.Effect<number, SqlError.SqlError, SqlClient.SqlClient> = Effect.flatMap(
  SqlClient.SqlClient,
  (sql) =>
    sql<{ n: string }>`select count(*)::text as n from relayer_requests where status in ('queued', 'pending')`.pipe(
      Effect.map((rows) => Number(rows[0]?.n ?? 0)),
    ),
)

/**
 * Transitions in one statement, atomic alone: `changed` (an UPDATE of relayer_requests aliased `q`, `returning q.id`)
 * moves the requests that are still where it expects them, and exactly those get their journal rows (in `items`'
 * order) and wake-ups in the same statement: the rows and notifications transitionEvents writes one by one. A stale
 * relayer changes nothing. One round trip where BEGIN, the update, the journal rows and COMMIT were four. Returns the
 * items that changed.
 */
const guardedTransitions = (changed: Statement.Fragment, items: ReadonlyArray<TransitionItem>) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const ids = items.map((i) => i.request.id.toString())
    const entries = transitionEntries(items)
    const notices = transitionNotices(items)
    const rows = yield* sql<{ id: string }>`
      with changed as (${changed}), appended as (
        insert into journal (kind, master, payload)
        select t.k, t.m, t.p from rows from (
          unnest(${ids}::bigint[]), unnest(${entries.map((e) => e.kind)}::text[]),
          unnest(${entries.map((e) => e.master)}::text[]),
          jsonb_array_elements(${JSON.stringify(entries.map((e) => e.payload ?? null))}::jsonb)
        ) with ordinality as t(id, k, m, p, i)
        where t.id in (select id from changed)
        order by t.i
        returning id
      ), notified as materialized (
        select pg_notify(${JOURNAL_PENDING_CHANNEL}, '1') where exists (select from changed)
        union all
        select pg_notify(n.c, n.p)
        from unnest(${ids}::bigint[], ${notices.map((n) => n.channel)}::text[], ${notices.map((n) => n.payload)}::text[])
          as n(id, c, p)
        where n.id in (select id from changed)
      )
      select id::text as id, (select count(*)::int from notified) as notified from changed`
    const moved = new Set(rows.map((r) => r.id))
    const done = items.filter((i) => moved.has(i.request.id.toString()))
    yield* transitionsLogged(done)
    return done
  })

/** Guarded transition: applies only if the row is still in `from` (a stale relayer changes nothing). */
const transition = (
  r: RequestRow,
  from: ReadonlyArray<TxStatus>,
  set: Record<string, unknown>,
  kind: string,
  extra: Record<string, unknown>,
) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    guardedTransitions(
      sql`update relayer_requests q set ${sql.update(set)}, updated_at = now()
        where q.id = ${r.id.toString()} and q.status in ${sql.in(from as Array<string>)}
        returning q.id`,
      [{ request: r, kind, extra }],
    ).pipe(Effect.map((done) => done.length > 0)),
  )

/** The simulation reverted: terminal, no nonce, no gas. */
export const markSimulatedRevert = (r: RequestRow, reason: string) =>
  transition(r, ["queued"], { status: "reverted", simulated: true, revert_reason: reason }, "tx.reverted", {
    status: "reverted",
    simulated: true,
    reason,
  })

export const recordRequestError = (r: RequestRow, message: string) =>
  Effect.flatMap(
    SqlClient.SqlClient,
    (sql) => sql`update relayer_requests set error = ${message.slice(0, 500)} where id = ${r.id.toString()}`,
  ).pipe(Effect.asVoid)

export interface SignedAttempt {
  readonly rawTx: Hex
  readonly txHash: Hex
  readonly maxFeePerGas: bigint
  readonly maxPriorityFeePerGas: bigint
  readonly gasLimit: bigint
}

/**
 * Allocates consecutive nonces to `items` (in order), signs each, and persists nonce, raw bytes,
 * hash and fees, all in one transaction, before anything is broadcast. The nonce rows are locked for
 * the transaction; `floor` (the chain's confirmed count) only ever raises them. `sign` runs inside the
 * transaction: if the process dies there, nothing was persisted and the nonce is reused.
 *
 * `chainVenues`: every configured venue on this venue's chain (this one included). They share the signer's
 * nonces on that chain, so one counter serves them all: each venue's row is locked (in venue order, so two
 * relayers never deadlock) and the allocation starts above the highest of them, and all are moved together.
 */
export const allocateAndPersist = <E, R>(
  venue: string,
  chainVenues: ReadonlyArray<string>,
  signer: string,
  floor: bigint,
  sentBlock: bigint,
  items: ReadonlyArray<{ readonly request: RequestRow; readonly gasLimit: bigint }>,
  sign: (request: RequestRow, nonce: bigint, gasLimit: bigint) => Effect.Effect<SignedAttempt, E, R>,
) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql.withTransaction(
      Effect.gen(function* () {
        const who = signer.toLowerCase()
        const scope = [...new Set([venue, ...chainVenues])].sort()
        // Created at `floor` if missing, and locked either way (the no-op update takes the row lock): one statement.
        // Rows are taken in `scope`'s order (sorted), so two relayers on one chain never deadlock.
        const rows = yield* sql<{ n: string }>`
          insert into relayer_nonces (venue, signer, next_nonce)
          select v, ${who}, ${floor.toString()} from unnest(${scope}::text[]) with ordinality as s(v, i) order by i
          on conflict (venue, signer) do update set next_nonce = relayer_nonces.next_nonce
          returning next_nonce::text as n`
        let nonce = rows.reduce((high, r) => (BigInt(r.n) > high ? BigInt(r.n) : high), floor)
        // Still queued? (a stale relayer instance must not sign twice for one request)
        const fresh = yield* sql<{ id: string }>`
          select id::text from relayer_requests
          where id = any(${items.map((i) => i.request.id.toString())}::bigint[]) and status = 'queued'
          order by id for update`
        const queued = new Set(fresh.map((r) => r.id))
        const out: Array<{ request: RequestRow; nonce: bigint; attempt: SignedAttempt }> = []
        for (const item of items) {
          if (!queued.has(item.request.id.toString())) continue
          out.push({ request: item.request, nonce, attempt: yield* sign(item.request, nonce, item.gasLimit) })
          nonce++
        }
        if (out.length === 0) {
          yield* sql`
            update relayer_nonces set next_nonce = ${nonce.toString()}
            where venue = any(${scope}::text[]) and signer = ${who}`
          return out
        }
        // The attempts, the requests moved to pending, the nonce counter, the `tx.pending` journal rows and their
        // wake-ups: one statement (its parts touch different tables), so the transaction is five round trips.
        const events = out.map((o) => ({
          request: o.request,
          kind: "tx.pending",
          extra: {
            status: "pending",
            nonce: o.nonce.toString(),
            tx_hash: o.attempt.txHash.toLowerCase(),
            max_fee_per_gas: o.attempt.maxFeePerGas.toString(),
            max_priority_fee_per_gas: o.attempt.maxPriorityFeePerGas.toString(),
          },
        }))
        yield* sql`
          with attempts as (
            insert into relayer_attempts (tx_hash, request_id, attempt, nonce, raw_tx, max_fee_per_gas,
              max_priority_fee_per_gas, gas_limit, sent_block)
            select h, r, 1, n, raw, f, p, g, ${sentBlock.toString()} from unnest(
              ${out.map((o) => o.attempt.txHash.toLowerCase())}::text[], ${out.map((o) => o.request.id.toString())}::bigint[],
              ${out.map((o) => o.nonce.toString())}::bigint[], ${out.map((o) => o.attempt.rawTx)}::text[],
              ${out.map((o) => o.attempt.maxFeePerGas.toString())}::numeric[],
              ${out.map((o) => o.attempt.maxPriorityFeePerGas.toString())}::numeric[],
              ${out.map((o) => o.attempt.gasLimit.toString())}::numeric[]) as t(h, r, n, raw, f, p, g)
          ), moved as (
            update relayer_requests q set status = 'pending', nonce = u.n, gas_limit = u.g, tx_hash = u.h, error = '',
              updated_at = now()
            from unnest(${out.map((o) => o.request.id.toString())}::bigint[], ${out.map((o) => o.nonce.toString())}::bigint[],
              ${out.map((o) => o.attempt.gasLimit.toString())}::numeric[],
              ${out.map((o) => o.attempt.txHash.toLowerCase())}::text[]) as u(id, n, g, h)
            where q.id = u.id
          ), counter as (
            update relayer_nonces set next_nonce = ${nonce.toString()}
            where venue = any(${scope}::text[]) and signer = ${who}
          ), appended as (${journalRowsInsert(sql, transitionEntries(events))})
          ${journalNotify(sql, transitionNotices(events))}`
        yield* transitionsLogged(events)
        return out
      }),
    ),
  )

/** A replacement attempt at the same nonce (higher fees), persisted before it is broadcast. */
export const addAttempt = (r: RequestRow, attemptNo: number, sentBlock: bigint, attempt: SignedAttempt) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql.withTransaction(
      Effect.gen(function* () {
        const still = yield* sql<{ id: string }>`
          select id::text from relayer_requests where id = ${r.id.toString()} and status = 'pending' for update`
        if (still.length === 0) return false
        yield* sql`
          insert into relayer_attempts (tx_hash, request_id, attempt, nonce, raw_tx, max_fee_per_gas,
            max_priority_fee_per_gas, gas_limit, sent_block)
          values (${attempt.txHash.toLowerCase()}, ${r.id.toString()}, ${attemptNo}, ${r.nonce!.toString()},
            ${attempt.rawTx}, ${attempt.maxFeePerGas.toString()}, ${attempt.maxPriorityFeePerGas.toString()},
            ${attempt.gasLimit.toString()}, ${sentBlock.toString()})`
        yield* sql`update relayer_requests set tx_hash = ${attempt.txHash.toLowerCase()}, updated_at = now()
          where id = ${r.id.toString()}`
        yield* transitionEvents(r, "tx.bumped", {
          status: "pending",
          nonce: r.nonce!.toString(),
          attempt: attemptNo,
          tx_hash: attempt.txHash.toLowerCase(),
          max_fee_per_gas: attempt.maxFeePerGas.toString(),
          max_priority_fee_per_gas: attempt.maxPriorityFeePerGas.toString(),
        })
        return true
      }),
    ),
  )

/** Counts a broadcast of stored bytes (first send or rebroadcast). */
export const recordBroadcasts = (hashes: ReadonlyArray<Hex>, at: Date) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    hashes.length === 0
      ? Effect.void
      : sql`update relayer_attempts set broadcasts = broadcasts + 1, broadcast_at = ${at}
          where ${sql.in(
            "tx_hash",
            hashes.map((h) => h.toLowerCase()),
          )}`.pipe(Effect.asVoid),
  )

export interface ReceiptFacts {
  readonly txHash: Hex
  readonly blockNumber: bigint
  readonly blockHash: Hex
  readonly gasUsed: bigint
  readonly success: boolean
}

/** Pending (or included elsewhere after a reorg) → included, for many requests in one statement. */
export const markIncludedBatch = (
  items: ReadonlyArray<{ readonly request: RequestRow; readonly receipt: ReceiptFacts }>,
  at: Date,
) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    guardedTransitions(
      sql`
        update relayer_requests q set status = 'included', tx_hash = u.h, block_number = u.b, block_hash = u.bh,
          gas_used = u.g, included_at = ${at}, updated_at = now()
        from unnest(${items.map((i) => i.request.id.toString())}::bigint[],
          ${items.map((i) => i.receipt.txHash.toLowerCase())}::text[],
          ${items.map((i) => i.receipt.blockNumber.toString())}::bigint[],
          ${items.map((i) => i.receipt.blockHash.toLowerCase())}::text[],
          ${items.map((i) => i.receipt.gasUsed.toString())}::numeric[]) as u(id, h, b, bh, g)
        where q.id = u.id and q.status in ('pending', 'included')
        returning q.id`,
      items.map(({ request: r, receipt }) => ({
        request: r,
        kind: "tx.included",
        extra: {
          status: "included",
          nonce: r.nonce?.toString() ?? null,
          tx_hash: receipt.txHash.toLowerCase(),
          block_number: receipt.blockNumber.toString(),
          block_hash: receipt.blockHash.toLowerCase(),
          success: receipt.success,
        },
      })),
    ).pipe(Effect.map((done) => done.length)),
  )

export const markIncluded = (r: RequestRow, receipt: ReceiptFacts, at: Date) =>
  markIncludedBatch([{ request: r, receipt }], at).pipe(Effect.map((n) => n > 0))

/** The included transaction left the chain (a reorg above finality): back to pending. */
export const markReorged = (r: RequestRow) =>
  transition(
    r,
    ["included"],
    { status: "pending", block_number: null, block_hash: null, gas_used: null, included_at: null },
    "tx.reorged",
    { status: "pending", nonce: r.nonce?.toString() ?? null, tx_hash: r.txHash },
  )

/**
 * At the finalized head: final (success) or reverted (on-chain revert, gas spent), for many
 * requests in one statement. Returns how many changed.
 */
export const markFinalBatch = (
  items: ReadonlyArray<{ readonly request: RequestRow; readonly success: boolean; readonly reason: string | null }>,
  at: Date,
) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    guardedTransitions(
      sql`
        update relayer_requests q
        set status = case when u.ok then 'final' else 'reverted' end, revert_reason = u.reason,
          final_at = ${at}, updated_at = now()
        from unnest(${items.map((i) => i.request.id.toString())}::bigint[], ${items.map((i) => i.success)}::bool[],
          ${items.map((i) => i.reason)}::text[]) as u(id, ok, reason)
        where q.id = u.id and q.status = 'included'
        returning q.id`,
      items.map(({ request: r, success, reason }) => ({
        request: r,
        kind: success ? "tx.final" : "tx.reverted",
        extra: {
          status: success ? "final" : "reverted",
          nonce: r.nonce?.toString() ?? null,
          tx_hash: r.txHash,
          block_number: r.blockNumber?.toString() ?? null,
          block_hash: r.blockHash,
          ...(success ? {} : { reason, simulated: false }),
        },
      })),
    ).pipe(Effect.map((done) => done.length)),
  )

export const markFinal = (r: RequestRow, success: boolean, reason: string | null, at: Date) =>
  markFinalBatch([{ request: r, success, reason }], at).pipe(Effect.map((n) => n > 0))

/** Our nonce was consumed, at the finalized head, by a transaction that is none of our attempts. */
export const markReplaced = (r: RequestRow, at: Date) =>
  transition(r, ["pending"], { status: "replaced", final_at: at }, "tx.replaced", {
    status: "replaced",
    nonce: r.nonce?.toString() ?? null,
  })
