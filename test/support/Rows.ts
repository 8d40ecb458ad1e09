import { SqlClient } from "@effect/sql"
import { type Duration, Effect } from "effect"
import { pollUntil } from "./Poll.ts"

/**
 * Inserts a row as its owner would have left it, for tests of readers (alerts, the status page): `values`
 * plus a neutral value for every other required column (unique where text), foreign-key triggers off for
 * this transaction only. Check constraints still hold.
 */
export const insertRow = (table: string, values: Record<string, unknown>) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const columns = yield* sql<{ column_name: string; data_type: string; max: number | null }>`
      select column_name, data_type, character_maximum_length as max from information_schema.columns
      where table_name = ${table} and is_nullable = 'NO' and column_default is null`
    const row: Record<string, unknown> = {}
    for (const c of columns) {
      if (c.column_name in values) continue
      row[c.column_name] = neutral(c.data_type, c.max)
    }
    yield* sql.withTransaction(
      Effect.gen(function* () {
        yield* sql`set local session_replication_role = replica`
        yield* sql`insert into ${sql(table)} ${sql.insert({ ...row, ...values })}`
      }),
    )
  })

const neutral = (type: string, max: number | null): unknown => {
  if (type === "uuid") return crypto.randomUUID()
  if (type === "boolean") return false
  if (type.startsWith("timestamp")) return new Date()
  if (type === "jsonb") return "{}"
  if (type === "text" || type === "character varying") {
    if (max === 42) return `0x${"0".repeat(40)}`
    if (max === 66) return `0x${crypto.randomUUID().replace(/-/g, "").padEnd(64, "0")}`
    return `x-${crypto.randomUUID()}`
  }
  return 0
}

export const ago = (seconds: number) => new Date(Date.now() - seconds * 1000)

/**
 * The relayer requests of a fill's settlement calls (`settle:<fill>:<call>`, and v2's `settle:take:<take>:payTake`),
 * in submission order, once none is in flight. A step counts as done by the escrow index or by the relayer,
 * whichever sees it first, so a fill can be settled while the relayer's row for its last call still says included.
 * After `within` the last read is returned as it is, for the caller's assertion to show.
 */
export const settleRequestsAtRest = (fillId: string, takeId?: string, within: Duration.DurationInput = "60 seconds") =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const rows = sql<{ idempotency_key: string; status: string }>`
      select idempotency_key, status from relayer_requests
      where idempotency_key like ${`settle:${fillId}:%`} or idempotency_key like ${`settle:take:${takeId ?? "-"}:%`}
      order by id`
    return yield* pollUntil(rows, (rs) => rs.every((r) => !IN_FLIGHT.includes(r.status)), {
      every: "200 millis",
      within,
    }).pipe(Effect.orElse(() => rows))
  })

const IN_FLIGHT = ["queued", "pending", "included"]
