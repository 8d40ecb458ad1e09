import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * One row per cluster runner, rewritten by that runner about every 2 s (src/Cluster/RunnerStatus.ts): what
 * /health shows of supervision on every runner. `actors` holds one entry per singleton registered
 * on the runner: name, kind, active, restarts, last failure (a public one-line message and its
 * time). `singletons` are the names whose body runs there now; `shards` the shards it holds. A row
 * whose heartbeat is older than the cluster's lock expiration belongs to a dead runner and is
 * deleted by the survivors' janitor.
 */
export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    create table runner_status (
      address text primary key,
      started_at timestamptz not null default now(),
      heartbeat_at timestamptz not null default now(),
      shards integer not null default 0 check (shards >= 0),
      singletons text[] not null default '{}',
      actors jsonb not null default '[]'
    )`
})
