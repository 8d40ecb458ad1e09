import { Snowflake } from "@effect/cluster"
import { SqlClient } from "@effect/sql"
import { Duration, Effect } from "effect"
import type { ClusterHealth } from "../Domain/Health.ts"
import { toRfc3339 } from "../Domain/Primitives.ts"
import { RUNNER_ALIVE_MS } from "./Config.ts"
import type { ActorRecord } from "./Supervision.ts"

/**
 * SQL of the runners' status rows (migration 0017) and of the cluster's own tables that supervision
 * reads or trims: `cluster_runners` (heartbeats), `cluster_messages` / `cluster_replies` (mailboxes).
 */

/** This runner's row: heartbeat in database time (one clock for every runner), its actors and shards. */
export const upsertRunnerStatus = (address: string, shards: number, actors: ReadonlyArray<ActorRecord>) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) => {
    const json = JSON.stringify(
      actors.map((a) => ({
        name: a.name,
        kind: a.kind,
        active: a.active,
        restarts: a.restarts,
        ...(a.instances === undefined ? {} : { instances: a.instances }),
        last_failure: a.lastFailure === null ? null : { message: a.lastFailure.message, at: a.lastFailure.at },
      })),
    )
    return sql`
      insert into runner_status (address, heartbeat_at, shards, singletons, actors)
      values (
        ${address}, now(), ${shards},
        array(select e->>'name' from jsonb_array_elements(${json}::jsonb) e
          where (e->>'active')::boolean and not (e ? 'instances') order by 1),
        ${json}::jsonb)
      on conflict (address) do update set
        heartbeat_at = excluded.heartbeat_at, shards = excluded.shards,
        singletons = excluded.singletons, actors = excluded.actors`
  })

/** A graceful stop takes its row with it, as the cluster does with its own. */
export const deleteRunnerStatus = (address: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) => sql`delete from runner_status where address = ${address}`)

/**
 * The janitor: rows of runners whose heartbeat is older than the lock expiration (dead for the
 * cluster too), ours and the cluster's. The cluster itself deletes stale rows only when some runner
 * stops gracefully, and every restart on a free RUNNER_PORT adds one. A live runner whose row went
 * (a long stall) writes it again: the cluster re-registers any runner missing from its table.
 */
export const removeDeadRunners = Effect.flatMap(SqlClient.SqlClient, (sql) => {
  const stale = Duration.toSeconds(Duration.millis(RUNNER_ALIVE_MS))
  return Effect.all([
    sql`delete from runner_status where heartbeat_at < now() - make_interval(secs => ${stale})`,
    sql`delete from cluster_runners where last_heartbeat < now() - make_interval(secs => ${stale})`,
  ])
})

/**
 * Retention: processed cluster messages older than `retention` and their replies, in batches (a
 * message's id is a snowflake whose high bits are its creation time). This also ends the window in
 * which the cluster de-duplicates a persisted message; the spec's idempotency lives in our own
 * tables (DESIGN §4), not there. Returns how many messages went.
 */
export const purgeProcessedMessages = (nowMs: number, retention: Duration.Duration, batch = 1000) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) => {
    const cutoff = (
      BigInt(Math.max(0, nowMs - Duration.toMillis(retention) - Snowflake.constEpochMillis)) << 22n
    ).toString()
    return sql<{ n: number }>`
      with gone as (
        delete from cluster_messages where id in (
          select id from cluster_messages where processed and id < ${cutoff}::bigint order by id limit ${batch})
        returning request_id),
      replies as (delete from cluster_replies where request_id in (select request_id from gone))
      select count(*)::int as n from gone`.pipe(Effect.map((rows) => rows[0]?.n ?? 0))
  })

interface StatusRow {
  readonly address: string
  readonly age_ms: number
  readonly shards: number
  readonly singletons: ReadonlyArray<string>
  readonly actors: ReadonlyArray<{
    readonly name: string
    readonly kind: string
    readonly active: boolean
    readonly restarts: number
    readonly instances?: number
    readonly last_failure: { readonly message: string; readonly at: number } | null
  }>
}

/** Unprocessed cluster messages per entity type; none when the cluster's tables do not exist (yet). */
const mailboxDepths = Effect.flatMap(SqlClient.SqlClient, (sql) =>
  sql<{ entity_type: string; n: number }>`
    select entity_type, count(*)::int as n from cluster_messages where not processed group by entity_type`.pipe(
    Effect.orElseSucceed(() => []),
  ),
)

/**
 * /health's `cluster` object from every runner's row: per actor kind, instances running on live
 * runners, restarts and the latest failure on any runner still listed; mailbox depth; the runners,
 * alive while their heartbeat is younger than the lock expiration, with what each holds.
 */
export const clusterHealth = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const rows = yield* sql<StatusRow>`
    select address, (extract(epoch from now() - heartbeat_at) * 1000)::float8 as age_ms, shards, singletons, actors
    from runner_status order by address`
  const depths = yield* mailboxDepths
  const kinds = new Map<string, ClusterHealth["actors"][number]>()
  for (const row of rows) {
    const alive = row.age_ms < RUNNER_ALIVE_MS
    for (const a of row.actors) {
      const k = kinds.get(a.kind) ?? { kind: a.kind, active: 0, restarts: 0, last_failure: null, mailbox_depth: 0 }
      const failure = a.last_failure
      const newer = failure !== null && (k.last_failure === null || Date.parse(k.last_failure.at) < failure.at)
      kinds.set(a.kind, {
        ...k,
        // An entity kind's record counts its running entities; a singleton's is one or none.
        active: k.active + (alive ? (a.instances ?? (a.active ? 1 : 0)) : 0),
        restarts: k.restarts + a.restarts,
        last_failure: newer
          ? { message: failure.message, at: toRfc3339(failure.at), runner: row.address }
          : k.last_failure,
      })
    }
  }
  for (const d of depths) {
    const k = kinds.get(d.entity_type) ?? {
      kind: d.entity_type,
      active: 0,
      restarts: 0,
      last_failure: null,
      mailbox_depth: 0,
    }
    kinds.set(d.entity_type, { ...k, mailbox_depth: d.n })
  }
  return {
    actors: [...kinds.values()].sort((a, b) => a.kind.localeCompare(b.kind)),
    mailbox_depth: depths.reduce((sum, d) => sum + d.n, 0),
    runners: rows.map((r) => ({
      address: r.address,
      alive: r.age_ms < RUNNER_ALIVE_MS,
      heartbeat_age_ms: Math.max(0, Math.round(r.age_ms)),
      shards: r.shards,
      singletons: [...r.singletons],
    })),
  } satisfies ClusterHealth
})
