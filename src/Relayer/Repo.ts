import { SqlClient, type SqlError } from "@effect/sql"
import { Effect } from "effect"
import type { Hex } from "viem"
import { countRelayerTransition } from "../Observability/Metrics.ts"
import {
  appendJournal,
  appendJournalRows,
  journalNotify,
  journalRowsInsert,
  type Notification,
} from "../Sql/Journal.ts"

/**
 * SQL of the relayer (migration 0005). Requests are rows keyed by idempotency key; the relayer
 * singleton of a (venue, signer) drains them. Every status transition writes its journal row in
 * the same transaction and notifies RELAYER_OUTCOME_CHANNEL (payload: the transition and the idempotency
 * key) so that waiters wake at once.
 */

/** Waiters of a request's outcome LISTEN here (payload: `<transition kind> <idempotency key>`, parseRelayerOutcome). */
export const RELAYER_OUTCOME_CHANNEL = "relayer_outcome"

/** A transition as RELAYER_OUTCOME_CHANNEL carries it: its journal kind (`tx.queued`, `tx.final`, …) and the key. */
export interface RelayerOutcomeNotice {
  readonly kind: string
  readonly key: string
}

/** The kind has no space; the key may (any printable characters), so it is everything after the first one. */
export const parseRelayerOutcome = (payload: string): RelayerOutcomeNotice => {
  const space = payload.indexOf(" ")
  return space < 0 ? { kind: "", key: payload } : { kind: payload.slice(0, space), key: payload.slice(space + 1) }
}

const outcomePayload = (kind: string, key: string) => `${kind} ${key}`

/**
 * Transitions after which nothing a waiter decides can change: the request was recorded, sent or re-sent with a
 * higher fee, and is still neither included nor failed. A waiter that acts only on inclusion, finality or failure
 * (the settlement's step) need not look again for them.
 */
export const IN_FLIGHT_TRANSITIONS: ReadonlyArray<string> = ["tx.queued", "tx.pending", "tx.bumped"]
/**
 * Transitions after which the request has still not ended (final, reverted or replaced): in flight, included, or
 * back to pending after a reorg. A waiter that acts only on a request's end (a close queue: Escrow/Closes.ts
 * nextTransition; order funding: Orders/Repo.ts settleFundingOrders) need not look again for them.
 */
export const UNENDED_TRANSITIONS: ReadonlyArray<string> = [...IN_FLIGHT_TRANSITIONS, "tx.included", "tx.reorged"]
/** The relayer of a venue LISTENs here (payload: venue) to pick up new requests without waiting. */
export const RELAYER_QUEUED_CHANNEL = "relayer_queued"

export type TxStatus = "queued" | "pending" | "included" | "final" | "reverted" | "replaced"
export const TERMINAL_STATUSES: ReadonlyArray<TxStatus> = ["final", "reverted", "replaced"]

export interface RequestRow {
  readonly id: bigint
  readonly idempotencyKey: string
  readonly venue: string
  readonly chainId: number
  readonly signer: string
  readonly target: string
  readonly functionName: string
  readonly calldata: Hex
  readonly value: bigint
  readonly master: string | null
  readonly status: TxStatus
  readonly simulated: boolean
  readonly nonce: bigint | null
  readonly gasLimit: bigint | null
  readonly txHash: Hex | null
  readonly blockNumber: bigint | null
  readonly blockHash: Hex | null
  readonly gasUsed: bigint | null
  readonly revertReason: string | null
  readonly error: string
  /** The submitter's W3C traceparent when traces are exported (migration 0024), else null. */
  readonly traceParent: string | null
}

export interface AttemptRow {
  readonly txHash: Hex
  readonly requestId: bigint
  readonly attempt: number
  readonly nonce: bigint
  readonly rawTx: Hex
  readonly maxFeePerGas: bigint
  readonly maxPriorityFeePerGas: bigint
  readonly gasLimit: bigint
  readonly sentBlock: bigint | null
  readonly broadcasts: number
}

interface RawRequest {
  id: string
  idempotency_key: string
  venue: string
  chain_id: string
  signer: string
  target: string
  function_name: string
  calldata: string
  value: string
  master: string | null
  status: TxStatus
  simulated: boolean
  nonce: string | null
  gas_limit: string | null
  tx_hash: string | null
  block_number: string | null
  block_hash: string | null
  gas_used: string | null
  revert_reason: string | null
  error: string
  trace_parent: string | null
}

interface RawAttempt {
  tx_hash: string
  request_id: string
  attempt: number
  nonce: string
  raw_tx: string
  max_fee_per_gas: string
  max_priority_fee_per_gas: string
  gas_limit: string
  sent_block: string | null
  broadcasts: number
}

const REQUEST_COLS = `id::text, idempotency_key, venue, chain_id::text, signer, target, function_name, calldata,
  value::text, master, status, simulated, nonce::text, gas_limit::text, tx_hash, block_number::text, block_hash,
  gas_used::text, revert_reason, error, trace_parent`
const ATTEMPT_COLS = `tx_hash, request_id::text, attempt, nonce::text, raw_tx, max_fee_per_gas::text,
  max_priority_fee_per_gas::text, gas_limit::text, sent_block::text, broadcasts`

const big = (s: string | null) => (s === null ? null : BigInt(s))

const toRequest = (r: RawRequest): RequestRow => ({
  id: BigInt(r.id),
  idempotencyKey: r.idempotency_key,
  venue: r.venue,
  chainId: Number(r.chain_id),
  signer: r.signer,
  target: r.target,
  functionName: r.function_name,
  calldata: r.calldata as Hex,
  value: BigInt(r.value),
  master: r.master,
  status: r.status,
  simulated: r.simulated,
  nonce: big(r.nonce),
  gasLimit: big(r.gas_limit),
  txHash: r.tx_hash as Hex | null,
  blockNumber: big(r.block_number),
  blockHash: r.block_hash as Hex | null,
  gasUsed: big(r.gas_used),
  revertReason: r.revert_reason,
  error: r.error,
  traceParent: r.trace_parent ?? null,
})

const toAttempt = (r: RawAttempt): AttemptRow => ({
  txHash: r.tx_hash as Hex,
  requestId: BigInt(r.request_id),
  attempt: r.attempt,
  nonce: BigInt(r.nonce),
  rawTx: r.raw_tx as Hex,
  maxFeePerGas: BigInt(r.max_fee_per_gas),
  maxPriorityFeePerGas: BigInt(r.max_priority_fee_per_gas),
  gasLimit: BigInt(r.gas_limit),
  sentBlock: big(r.sent_block),
  broadcasts: r.broadcasts,
})

/**
 * One log line and the relayer's counters per transition (submit, bump, include, reorg, final, revert,
 * replace), written with its journal row in the transition's transaction. Never the calldata or raw bytes.
 */
const relayerTransitionLogged = (r: RequestRow, kind: string, extra: Record<string, unknown>) => {
  const line =
    kind === "tx.reverted" || kind === "tx.replaced" || kind === "tx.reorged" ? Effect.logWarning : Effect.logInfo
  return Effect.zipRight(
    Effect.sync(() => countRelayerTransition(r.venue, kind)),
    line(`relayer ${kind.slice(3)}`),
  ).pipe(
    Effect.annotateLogs({
      venue: r.venue,
      chain_id: r.chainId,
      tx_key: r.idempotencyKey,
      function: r.functionName,
      target: r.target,
      ...extra,
    }),
  )
}

const QUEUED = { status: "queued" }

const journalPayload = (
  r: Pick<RequestRow, "idempotencyKey" | "venue" | "chainId" | "functionName" | "target">,
  extra: Record<string, unknown> = {},
) => ({
  key: r.idempotencyKey,
  venue: r.venue,
  chain_id: r.chainId,
  function: r.functionName,
  target: r.target,
  ...extra,
})

/**
 * A transition's journal row and the waiters' wake-up (and `also`), in one statement inside the caller's
 * transaction.
 */
const transitionEvents = (
  r: RequestRow,
  kind: string,
  extra: Record<string, unknown>,
  also: ReadonlyArray<Notification> = [],
) =>
  appendJournal({ kind, master: r.master, payload: journalPayload(r, extra) }, [
    { channel: RELAYER_OUTCOME_CHANNEL, payload: outcomePayload(kind, r.idempotencyKey) },
    ...also,
  ]).pipe(Effect.zipLeft(relayerTransitionLogged(r, kind, extra)))

interface TransitionItem {
  readonly request: RequestRow
  readonly kind: string
  readonly extra: Record<string, unknown>
}

const transitionEntries = (items: ReadonlyArray<TransitionItem>) =>
  items.map((i) => ({ kind: i.kind, master: i.request.master, payload: journalPayload(i.request, i.extra) }))
const transitionNotices = (items: ReadonlyArray<TransitionItem>): Array<Notification> =>
  items.map((i) => ({ channel: RELAYER_OUTCOME_CHANNEL, payload: outcomePayload(i.kind, i.request.idempotencyKey) }))
const transitionsLogged = (items: ReadonlyArray<TransitionItem>) =>
  Effect.forEach(items, (i) => relayerTransitionLogged(i.request, i.kind, i.extra), { discard: true })

/**
 * Many transitions' journal rows and wake-ups in one statement (same rows and notifications as transitionEvents one
 * by one), inside the caller's transaction.
 */
const transitionEventsBatch = (items: ReadonlyArray<TransitionItem>) =>
  appendJournalRows(transitionEntries(items), transitionNotices(items)).pipe(Effect.zipLeft(transitionsLogged(items)))

export interface NewRequest {
  readonly idempotencyKey: string
  readonly venue: string
  readonly chainId: number
  readonly signer: string
  readonly target: string
  readonly functionName: string
  readonly calldata: Hex
  readonly value: bigint
  readonly master: string | null
  readonly traceParent?: string | null
}

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
export const passRequests = (venue: string, signer: string, limit: number) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<RawRequest>`
      (select ${sql.literal(REQUEST_COLS)} from relayer_requests
        where venue = ${venue} and signer = ${signer.toLowerCase()} and status in ('pending', 'included'))
      union all
      (select ${sql.literal(REQUEST_COLS)} from relayer_requests
        where venue = ${venue} and signer = ${signer.toLowerCase()} and status = 'queued'
        order by id limit ${limit})`.pipe(
      Effect.map((rows) => {
        const all = rows.map(toRequest)
        const open = all.filter((r) => r.status !== "queued")
        // As `order by nonce` would (nulls last; a signed request always has one) and `order by id`.
        open.sort((a, b) => ascending(a.nonce ?? MAX, b.nonce ?? MAX))
        const queued = all.filter((r) => r.status === "queued").sort((a, b) => ascending(a.id, b.id))
        return { open, queued }
      }),
    ),
  )

/** Relayer requests not yet in a block: what /health calls pending transactions. */
export const pendingTransactionCount: Effect.Effect<number, SqlError.SqlError, SqlClient.SqlClient> = Effect.flatMap(
  SqlClient.SqlClient,
  (sql) =>
    sql<{ n: string }>`select count(*)::text as n from relayer_requests where status in ('queued', 'pending')`.pipe(
      Effect.map((rows) => Number(rows[0]?.n ?? 0)),
    ),
)

/** Guarded transition: applies only if the row is still in `from` (a stale relayer changes nothing). */
const transition = (
  r: RequestRow,
  from: ReadonlyArray<TxStatus>,
  set: Record<string, unknown>,
  kind: string,
  extra: Record<string, unknown>,
) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql.withTransaction(
      Effect.gen(function* () {
        const rows = yield* sql<{ id: string }>`
          update relayer_requests set ${sql.update(set)}, updated_at = now()
          where id = ${r.id.toString()} and status in ${sql.in(from as Array<string>)}
          returning id::text`
        if (rows.length === 0) return false
        yield* transitionEvents(r, kind, extra)
        return true
      }),
    ),
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

/** Pending (or included elsewhere after a reorg) → included, for many requests in one transaction. */
export const markIncludedBatch = (
  items: ReadonlyArray<{ readonly request: RequestRow; readonly receipt: ReceiptFacts }>,
  at: Date,
) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql.withTransaction(
      Effect.gen(function* () {
        const changed = yield* sql<{ id: string }>`
          update relayer_requests q set status = 'included', tx_hash = u.h, block_number = u.b, block_hash = u.bh,
            gas_used = u.g, included_at = ${at}, updated_at = now()
          from unnest(${items.map((i) => i.request.id.toString())}::bigint[],
            ${items.map((i) => i.receipt.txHash.toLowerCase())}::text[],
            ${items.map((i) => i.receipt.blockNumber.toString())}::bigint[],
            ${items.map((i) => i.receipt.blockHash.toLowerCase())}::text[],
            ${items.map((i) => i.receipt.gasUsed.toString())}::numeric[]) as u(id, h, b, bh, g)
          where q.id = u.id and q.status in ('pending', 'included')
          returning q.id::text`
        const ids = new Set(changed.map((c) => c.id))
        const done = items.filter((i) => ids.has(i.request.id.toString()))
        if (done.length > 0) {
          yield* transitionEventsBatch(
            done.map(({ request: r, receipt }) => ({
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
          )
        }
        return done.length
      }),
    ),
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
 * requests in one transaction. Returns how many changed.
 */
export const markFinalBatch = (
  items: ReadonlyArray<{ readonly request: RequestRow; readonly success: boolean; readonly reason: string | null }>,
  at: Date,
) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql.withTransaction(
      Effect.gen(function* () {
        const changed = yield* sql<{ id: string }>`
          update relayer_requests q
          set status = case when u.ok then 'final' else 'reverted' end, revert_reason = u.reason,
            final_at = ${at}, updated_at = now()
          from unnest(${items.map((i) => i.request.id.toString())}::bigint[], ${items.map((i) => i.success)}::bool[],
            ${items.map((i) => i.reason)}::text[]) as u(id, ok, reason)
          where q.id = u.id and q.status = 'included'
          returning q.id::text`
        const ids = new Set(changed.map((c) => c.id))
        const done = items.filter((i) => ids.has(i.request.id.toString()))
        if (done.length > 0) {
          yield* transitionEventsBatch(
            done.map(({ request: r, success, reason }) => ({
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
          )
        }
        return done.length
      }),
    ),
  )

export const markFinal = (r: RequestRow, success: boolean, reason: string | null, at: Date) =>
  markFinalBatch([{ request: r, success, reason }], at).pipe(Effect.map((n) => n > 0))

/** Our nonce was consumed, at the finalized head, by a transaction that is none of our attempts. */
export const markReplaced = (r: RequestRow, at: Date) =>
  transition(r, ["pending"], { status: "replaced", final_at: at }, "tx.replaced", {
    status: "replaced",
    nonce: r.nonce?.toString() ?? null,
  })
