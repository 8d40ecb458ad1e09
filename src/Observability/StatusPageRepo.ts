import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { callKey, MAX_ATTEMPTS, SETTLEMENT_CALLS } from "../Domain/SettlementStep.ts"

/**
 * What the operators' status page shows beyond /health (src/Observability/StatusPage.ts): relayer queues by
 * venue and status, and the most recent takes with each fill's state and settlement calls (the relayer
 * requests under `settle:<fill id>:<call>[:<attempt>]`). Read-only, bounded.
 */

export interface RelayerQueue {
  readonly venue: string
  readonly queued: number
  readonly pending: number
  readonly included: number
  readonly oldest_seconds: number
}

export const relayerQueues = Effect.flatMap(SqlClient.SqlClient, (sql) =>
  sql<{ venue: string; status: string; n: number; oldest: number }>`
    select venue, status, count(*)::int as n, coalesce(extract(epoch from now() - min(created_at)), 0)::float8 as oldest
    from relayer_requests where status in ('queued', 'pending', 'included') group by venue, status`.pipe(
    Effect.map((rows) => {
      const by = new Map<string, { queued: number; pending: number; included: number; oldest_seconds: number }>()
      for (const r of rows) {
        const q = by.get(r.venue) ?? { queued: 0, pending: 0, included: 0, oldest_seconds: 0 }
        if (r.status === "queued" || r.status === "pending" || r.status === "included") q[r.status] = r.n
        q.oldest_seconds = Math.max(q.oldest_seconds, Math.round(r.oldest))
        by.set(r.venue, q)
      }
      return [...by.entries()].map(([venue, q]): RelayerQueue => ({ venue, ...q }))
    }),
  ),
)

export interface SettlementStep {
  readonly call: string
  readonly attempt: number
  readonly status: string
  readonly tx_hash: string | null
  readonly reason: string | null
}

export interface RecentSettlement {
  readonly take_id: string
  readonly state: string
  readonly from_venue: string
  readonly to_venue: string
  readonly created_at: string
  readonly fills: ReadonlyArray<{
    readonly id: string
    readonly state: string
    readonly steps: ReadonlyArray<SettlementStep>
  }>
}

/**
 * Every key a fill's settlement calls can have (each call, each attempt): looked up by the key's unique index. A
 * pattern on the key (`like 'settle:%'` and a part of it) read every settlement request ever made.
 */
const settlementKeys = (fillIds: ReadonlyArray<string>): Array<string> =>
  fillIds.flatMap((id) =>
    SETTLEMENT_CALLS.flatMap((call) => Array.from({ length: MAX_ATTEMPTS }, (_, i) => callKey(id, call, i + 1))),
  )

/** The `limit` most recent takes that have fills, newest first (takes_created, migration 0041). */
export const recentSettlements = (limit: number) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const takes = yield* sql<{ id: string; state: string; from_venue: string; to_venue: string; created_at: Date }>`
      select t.id::text as id, t.state, t.from_venue, t.to_venue, t.created_at from takes t
      where exists (select 1 from fills f where f.take_id = t.id)
      order by t.created_at desc limit ${limit}`
    if (takes.length === 0) return [] as ReadonlyArray<RecentSettlement>
    const fills = yield* sql<{ id: string; take_id: string; state: string }>`
      select id::text as id, take_id::text as take_id, state from fills
      where ${sql.in(
        "take_id",
        takes.map((t) => t.id),
      )} order by created_at, id`
    const steps = yield* sql<{
      fill: string
      call: string
      attempt: string
      status: string
      tx_hash: string | null
      reason: string | null
    }>`
      select split_part(idempotency_key, ':', 2) as fill, split_part(idempotency_key, ':', 3) as call,
        split_part(idempotency_key, ':', 4) as attempt, status, tx_hash, nullif(revert_reason, '') as reason
      from relayer_requests
      where idempotency_key = any(${settlementKeys(fills.map((f) => f.id))}::text[])
      order by created_at, id`
    return takes.map(
      (t): RecentSettlement => ({
        take_id: t.id,
        state: t.state,
        from_venue: t.from_venue,
        to_venue: t.to_venue,
        created_at: t.created_at.toISOString(),
        fills: fills
          .filter((f) => f.take_id === t.id)
          .map((f) => ({
            id: f.id,
            state: f.state,
            steps: steps
              .filter((s) => s.fill === f.id)
              .map((s) => ({
                call: s.call,
                attempt: s.attempt === "" ? 1 : Number(s.attempt),
                status: s.status,
                tx_hash: s.tx_hash,
                reason: s.reason,
              })),
          })),
      }),
    )
  })
