import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * One row per open GET /v1/stream connection of any process on this database (src/Stream/Slots.ts):
 * the spec's 256, the token-less share and the per-client share are counted over these rows, so they hold
 * across runners. `holder` is the process (a random id per process), `client` the client identity
 * (src/Domain/ClientAddress.ts), `kind` anonymous | reserve | signed (src/Stream/Connections.ts). A row whose
 * `heartbeat_at` is older than the slot lifetime belongs to a process that died: it is not counted and is
 * deleted at the next admission.
 */
export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    create table stream_slots (
      id uuid primary key,
      holder uuid not null,
      client text not null,
      kind text not null check (kind in ('anonymous', 'reserve', 'signed')),
      heartbeat_at timestamptz not null default now()
    )`
  yield* sql`create index stream_slots_heartbeat on stream_slots (heartbeat_at)`
})
