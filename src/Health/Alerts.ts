import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { RUNNER_ALIVE_MS, shardingConfig } from "../Cluster/Config.ts"
import type { VenueConfig } from "../Config.ts"
import { CLOSE_STUCK_SECONDS, deriveAlerts, FILL_ATTEMPTS_MAX, FILL_STUCK_GRACE_SECONDS } from "../Domain/Alerts.ts"
import type { ChainHealth, ClusterHealth } from "../Domain/Health.ts"

/**
 * The rows /health's alerts are derived from (src/Domain/Alerts.ts). Each read is bounded (LIMIT) and hits
 * partial indexes or small tables: fills not final, relayer requests that ended failed, pending closes,
 * runner status rows.
 */

const LIMIT = 200

/**
 * Fills not final whose settlement call's last permitted attempt (key `settle:<fill>:<call>:<n>`, n = the
 * settlement's MAX_ATTEMPTS) reverted or was replaced: the sweep waits for a person from then on. Reads the failed
 * requests only (relayer_requests_failed, migration 0041).
 */
export const fillsOutOfAttempts = Effect.flatMap(
  SqlClient.SqlClient,
  (sql) =>
    sql<{ id: string; call: string; reason: string; at: number }>`
    select f.id::text as id, split_part(r.idempotency_key, ':', 3) as call,
      coalesce(nullif(r.revert_reason, ''), r.status) as reason,
      (extract(epoch from r.updated_at) * 1000)::float8 as at
    from relayer_requests r
    join fills f on f.id::text = split_part(r.idempotency_key, ':', 2)
    where r.status in ('reverted', 'replaced') and r.idempotency_key like 'settle:%'
      and split_part(r.idempotency_key, ':', 4) = ${String(FILL_ATTEMPTS_MAX)} and not f.final
    order by r.updated_at limit ${LIMIT}`,
)

/** Fills not final created more than `seconds` ago. */
export const fillsOlderThan = (seconds: number) =>
  Effect.flatMap(
    SqlClient.SqlClient,
    (sql) =>
      sql<{ id: string; state: string; created_at: Date }>`
      select id::text as id, state, created_at from fills
      where not final and created_at < now() - make_interval(secs => ${seconds})
      order by created_at limit ${LIMIT}`,
  )

/** Closes pending for more than CLOSE_STUCK_SECONDS. */
export const closesStuck = Effect.flatMap(
  SqlClient.SqlClient,
  (sql) =>
    sql<{ id: string; venue: string; created_at: Date }>`
    select id::text as id, venue, created_at from closes
    where state = 'pending' and created_at < now() - make_interval(secs => ${CLOSE_STUCK_SECONDS})
    order by created_at limit ${LIMIT}`,
)

/** Alive runners' status rows: registered singletons, the ones running, shards held. */
export const aliveRunnerRows = Effect.flatMap(
  SqlClient.SqlClient,
  (sql) =>
    sql<{ shards: number; singletons: ReadonlyArray<string>; actors: ReadonlyArray<{ readonly name: string }> }>`
    select shards, singletons, actors from runner_status
    where heartbeat_at > now() - make_interval(secs => ${RUNNER_ALIVE_MS / 1000})`,
)

export interface AlertInputs {
  readonly nowMs: number
  readonly chains: ReadonlyArray<ChainHealth>
  readonly cluster: ClusterHealth
  readonly venues: ReadonlyArray<VenueConfig>
  readonly settlement: { readonly maker_timeout_seconds: number; readonly taker_timeout_seconds: number }
}

/** /health's alerts: an unreadable source adds none (never a 500, never a false alarm). */
export const readAlerts = (input: AlertInputs) =>
  Effect.gen(function* () {
    const stuckAfter =
      Math.max(input.settlement.maker_timeout_seconds, input.settlement.taker_timeout_seconds) +
      FILL_STUCK_GRACE_SECONDS
    const [failed, old, closes, runners] = yield* Effect.all(
      [
        fillsOutOfAttempts.pipe(Effect.orElseSucceed(() => [])),
        fillsOlderThan(stuckAfter).pipe(Effect.orElseSucceed(() => [])),
        closesStuck.pipe(Effect.orElseSucceed(() => [])),
        aliveRunnerRows.pipe(Effect.orElseSucceed(() => [])),
      ],
      { concurrency: 2 },
    )
    const minGas = new Map(input.venues.map((v) => [v.id, BigInt(v.watcher.min_operator_gas)]))
    const running = new Set(runners.flatMap((r) => r.singletons))
    const registered = [...new Set(runners.flatMap((r) => r.actors.map((a) => a.name)))].sort()
    const sharding = shardingConfig()
    return deriveAlerts({
      nowMs: input.nowMs,
      fillsFailed: failed.map((f) => ({ id: f.id, call: f.call, reason: f.reason, at: f.at })),
      fillsOld: old.map((f) => ({ id: f.id, state: f.state, createdAt: f.created_at.getTime() })),
      closesOld: closes.map((c) => ({ id: c.id, venue: c.venue, createdAt: c.created_at.getTime() })),
      chains: input.chains.map((c) => ({
        venue: c.venue,
        checked: c.checked_at !== null,
        gas: BigInt(c.operator_gas),
        minGas: minGas.get(c.venue) ?? 0n,
      })),
      actors: input.cluster.actors.map((a) => ({
        kind: a.kind,
        restarts: a.restarts,
        lastFailureAt: a.last_failure === null ? null : Date.parse(a.last_failure.at),
        lastFailure: a.last_failure?.message ?? "",
      })),
      singletons: registered.map((name) => ({ name, owned: running.has(name) })),
      aliveRunners: runners.length,
      shardsOwned: runners.reduce((n, r) => n + r.shards, 0),
      shardsTotal: sharding.shardsPerGroup * sharding.availableShardGroups.length,
    })
  })
