import { SqlClient } from "@effect/sql"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { fillsOutOfAttempts } from "../../src/Health/Alerts.ts"
import { recentSettlements } from "../../src/Observability/StatusPageRepo.ts"
import { fundingPendingOrders } from "../../src/Orders/Repo.ts"
import { databaseLayer } from "../../src/Sql/Database.ts"
import { pgClientLayer } from "../../src/Sql/Notifications.ts"
import { recentTrades, tradePage } from "../../src/Trades/Repo.ts"
import { testDatabaseUrl } from "../support/Database.ts"

/**
 * Reads that run all the time (/health's alerts, the order-funding wake on every index page, the status page every
 * 5 s) read the live rows through indexes (migration 0041), never a whole history table: a service's history
 * only grows, and a scan of it gets slower every day.
 */

/** A migrated throw-away database and the service's pool on it with one connection (its statistics are ours). */
const Migrated = Layer.unwrapScoped(
  Effect.gen(function* () {
    const url = yield* testDatabaseUrl
    yield* Layer.build(databaseLayer(url))
    return pgClientLayer({ url, maxConnections: 1, applicationName: "live-rows-test" })
  }),
)

const HISTORY_TABLES = ["orders", "escrow_v2_orders", "takes", "fills", "relayer_requests"]

/** A counter of pg_stat_user_tables for each history table so far (this backend's counts flushed first). */
const tableStats = (counter: "seq_scan" | "idx_tup_fetch") =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    Effect.gen(function* () {
      yield* sql`select pg_stat_force_next_flush()`
      const rows = yield* sql<{ relname: string; n: string }>`
        select relname, ${sql.literal(counter)}::text as n from pg_stat_user_tables
        where relname = any(${HISTORY_TABLES}::text[]) order by relname`
      return Object.fromEntries(rows.map((r) => [r.relname, Number(r.n)]))
    }),
  )
const seqScans = tableStats("seq_scan")

/**
 * A venue's history, written directly (foreign keys and triggers off for the bulk: `session_replication_role`):
 * 20,000 settled takes of two fills each (a few still settling, ten of those out of attempts on their lock), four
 * relayer requests a fill, 100,000 orders of which 50 funding, 1,000 funded on v2 (ten with a sticky close
 * indexed) and the rest closed (their index rows close-requested).
 */
const seedHistory = Effect.flatMap(SqlClient.SqlClient, (sql) =>
  Effect.gen(function* () {
    yield* sql`set session_replication_role = replica`
    yield* sql`
      insert into takes (id, master, client_take_id, from_venue, to_venue, amount_in, min_out, payer, recipient,
        max_parts, total_in, total_out, state, pay_deadline, to_sign, created_at, updated_at)
      select gen_random_uuid(), '0xm', 'c' || g, 'hyperliquid', 'aster', 1, 1, '0xp', '0xr', 1, 1, 1, 'settled',
        now(), '{}', now() - (g || ' seconds')::interval, now()
      from generate_series(1, 20000) g`
    yield* sql`
      insert into fills (id, take_id, order_id, taker_venue, payer, state, final, created_at, updated_at, fill_key,
        maker_venue, sequence, quote_index, quote_identity_id, amount_in, amount_out, payee, recipient, hashlock,
        maker_expiry, taker_expiry, fill)
      select gen_random_uuid(), t.id, 'o' || k, 'aster', '0xp', s.state, s.state = 'settled', t.created_at, now(),
        md5(t.id::text || k), 'hyperliquid', k, 0, gen_random_uuid(), 1, 1, '0xa', '0xb', md5(t.id::text || k), 1, 1,
        '{}'
      from takes t cross join generate_series(1, 2) k
      cross join lateral (select case when t.client_take_id like '%7' and k = 1 then 'locking' else 'settled' end
        as state) s`
    yield* sql`
      insert into relayer_requests (idempotency_key, venue, chain_id, signer, target, function_name, calldata, status,
        nonce)
      select 'settle:' || f.id || ':' || c, 'hyperliquid', 1, '0xs', '0xt', c, '0x', 'final', row_number() over ()
      from fills f cross join unnest(array['lock', 'pay', 'claim', 'claimPayment']) c`
    yield* sql`
      insert into relayer_requests (idempotency_key, venue, chain_id, signer, target, function_name, calldata, status,
        nonce)
      select 'settle:' || f.id || ':lock:5', 'hyperliquid', 1, '0xs', '0xt', 'lock', '0x', 'reverted',
        10000000 + row_number() over ()
      from (select id from fills where not final order by id limit 10) f`
    yield* sql`
      insert into orders (id, master, venue, receive_venue, owner_address, state, amount, created_at, updated_at,
        escrow_version)
      select 'o' || g, '0xm', 'hyperliquid', 'aster', '0xo' || (g % 100),
        case when g <= 50 then 'funding' when g <= 1050 then 'funded' else 'closed' end, 1, now(), now(), 2
      from generate_series(1, 100000) g`
    yield* sql`
      insert into escrow_v2_orders (venue, owner, order_id, order_key, operator, quote_signer, available, locked,
        created_block, block_number, block_hash, close_requested)
      select 'hyperliquid', owner_address, id, md5(id), '0x', '0x', 1, 0, 1, 1, '0x',
        state = 'closed' or (state = 'funded' and substr(id, 2)::int % 100 = 0)
      from orders`
    // Settled fills are trades; eight of them between a third venue and aster, both directions: a rare pair.
    yield* sql`update fills set settled_at = created_at where state = 'settled'`
    yield* sql`update fills set maker_venue = 'lighter'
      where id in (select id from fills where state = 'settled' order by id limit 5)`
    yield* sql`update fills set maker_venue = 'aster', taker_venue = 'lighter'
      where id in (select id from fills where state = 'settled' and maker_venue = 'hyperliquid' order by id limit 3)`
    yield* sql`set session_replication_role = origin`
    yield* sql`analyze`
  }),
)

describe("reads that run all the time stay off the history (migrations 0041, 0042)", () => {
  it.scoped(
    "/health's alerts, the order-funding wake, the status page and a pair's trades read by index",
    () =>
      Effect.gen(function* () {
        yield* seedHistory
        const before = yield* seqScans

        const outOfAttempts = yield* fillsOutOfAttempts
        expect(outOfAttempts).toHaveLength(10)
        expect(new Set(outOfAttempts.map((a) => a.call))).toEqual(new Set(["lock"]))

        const funding = yield* fundingPendingOrders("hyperliquid")
        const expected = [
          ...Array.from({ length: 50 }, (_, i) => `o${i + 1}`),
          ...Array.from({ length: 10 }, (_, i) => `o${(i + 1) * 100}`),
        ]
        expect([...funding].sort()).toEqual(expected.sort())
        expect([...(yield* fundingPendingOrders())].sort()).toEqual(expected.sort())

        const recent = yield* recentSettlements(20)
        expect(recent).toHaveLength(20)
        for (const take of recent) {
          expect(take.fills).toHaveLength(2)
          for (const fill of take.fills) {
            expect(fill.steps.map((s) => s.call).sort()).toEqual(["claim", "claimPayment", "lock", "pay"])
          }
        }

        // Not one read of a whole history table.
        expect(yield* seqScans).toEqual(before)

        // A rare pair's trades, both directions, newest first: read from the pair's own index (migration 0042),
        // not by walking the 40,000 settled fills newest first.
        const fetchedBefore = (yield* tableStats("idx_tup_fetch")).fills!
        const trades = yield* recentTrades("lighter", "aster", 50)
        expect(trades).toHaveLength(8)
        expect(new Set(trades.map((t) => t.from_venue))).toEqual(new Set(["aster", "lighter"]))
        const times = trades.map((t) => t.settled_at.getTime())
        expect(times).toEqual([...times].sort((x, y) => y - x))
        const page = yield* tradePage({ master: null, pair: ["aster", "lighter"], after: undefined, limit: 5 })
        expect(page.rows.map((r) => r.id)).toEqual(trades.slice(0, 5).map((t) => t.id))
        expect(page.hasMore).toBe(true)
        expect((yield* tableStats("idx_tup_fetch")).fills! - fetchedBefore).toBeLessThan(100)
        expect(yield* seqScans).toEqual(before)
      }).pipe(Effect.provide(Migrated)),
    // Seeding ~400,000 rows takes a few seconds on a busy 2-core machine.
    60_000,
  )
})
