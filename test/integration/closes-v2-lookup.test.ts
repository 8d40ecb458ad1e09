import { SqlClient } from "@effect/sql"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { settleCloses } from "../../src/Escrow/Closes.ts"
import { databaseLayer } from "../../src/Sql/Database.ts"
import { pgClientLayer } from "../../src/Sql/Notifications.ts"
import { testDatabaseUrl } from "../support/Database.ts"

/**
 * A v2 close's outcome is its OrderClosed event, looked up by the close's transaction (src/Escrow/Closes.ts,
 * settleCloses). It must be an index lookup (migration 0040), not a read of every event of the venue on every pass
 * of the close's queue: at 200,000 events that read took 48 ms a pending close.
 */

/** A migrated throw-away database and the service's pool on it with one connection (its statistics are ours). */
const Migrated = Layer.unwrapScoped(
  Effect.gen(function* () {
    const url = yield* testDatabaseUrl
    yield* Layer.build(databaseLayer(url))
    return pgClientLayer({ url, maxConnections: 1, applicationName: "closes-v2-lookup-test" })
  }),
)

const VENUE = "hyperliquid"
const OWNER = `0x${"ab".repeat(20)}`
const ESCROW = `0x${"e2".repeat(20)}`
const ORDER = `0x${"0c".repeat(32)}`
const TX = `0x${"7a".repeat(32)}`
const hex64 = (i: number) => `0x${i.toString(16).padStart(64, "0")}`

/** How often the close lookup's index has been scanned (this backend's counts flushed first). */
const indexScans = Effect.flatMap(SqlClient.SqlClient, (sql) =>
  Effect.gen(function* () {
    yield* sql`select pg_stat_force_next_flush()`
    const [row] = yield* sql<{ n: string }>`
      select coalesce(sum(idx_scan), 0)::text as n from pg_stat_user_indexes
      where indexrelname = 'escrow_v2_events_closed_tx'`
    return Number(row?.n ?? 0)
  }),
)

describe("a v2 close's outcome by its transaction (migration 0040)", () => {
  it.scoped("settles the close from its OrderClosed event through the index, among 20,000 other events", () =>
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      // The venue's history: 20,000 events, 1% of them other orders' closes, in blocks 1..2,000.
      yield* sql`
        insert into escrow_v2_events (venue, block_number, log_index, block_hash, tx_hash, contract, event, args)
        select ${VENUE}, i / 10, i % 10, '0x' || lpad(to_hex(i / 10), 64, '0'), '0x' || lpad(to_hex(i), 64, 'f'),
          ${ESCROW}, case when i % 100 = 0 then 'OrderClosed' else 'Locked' end,
          jsonb_build_object('orderId', '0x' || lpad(to_hex(i), 64, '0'), 'owner', ${OWNER}::text, 'amount', '1',
            'refused', false)
        from generate_series(10, 20009) as i`
      // The close's own event, final below the cursor.
      yield* sql`
        insert into escrow_v2_events (venue, block_number, log_index, block_hash, tx_hash, contract, event, args)
        values (${VENUE}, 2001, 0, ${hex64(2001)}, ${TX}, ${ESCROW}, 'OrderClosed',
          ${JSON.stringify({ orderId: ORDER, owner: OWNER, amount: "7000000", refused: false })}::jsonb)`
      yield* sql`insert into escrow_v2_cursor (venue, escrow, indexed_block, indexed_hash)
        values (${VENUE}, ${ESCROW}, 2005, ${hex64(2005)})`
      yield* sql`
        insert into relayer_requests (idempotency_key, venue, chain_id, signer, target, function_name, calldata,
          status, nonce, tx_hash, block_number)
        values ('close:v2-lookup', ${VENUE}, 31337, ${OWNER}, ${ESCROW}, 'operatorClose', '0x', 'final', 1, ${TX}, 2001)`
      yield* sql`
        insert into closes (id, kind, master, venue, chain_id, escrow, order_id, owner, amount, dex, to_margin,
          relay_key, state, created_at, updated_at, escrow_version)
        values (gen_random_uuid(), 'managed', ${OWNER}, ${VENUE}, 31337, ${ESCROW}, ${ORDER}, ${OWNER}, 7000000, 0,
          false, 'close:v2-lookup', 'pending', now(), now(), 2)`
      yield* sql`analyze escrow_v2_events`
      const before = yield* indexScans

      expect(yield* settleCloses(Date.now())).toBe(1)
      const [close] = yield* sql<{ state: string; released: string; refused: boolean; tx_hash: string }>`
        select state, released::text as released, refused, tx_hash from closes where relay_key = 'close:v2-lookup'`
      expect(close).toEqual({ state: "final", released: "7000000", refused: false, tx_hash: TX })
      expect(yield* indexScans).toBeGreaterThan(before)
    }).pipe(Effect.provide(Migrated)),
  )
})
