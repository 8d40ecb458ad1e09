/**
 * The /metrics counts of closes and withdrawals by state (migrations/0037_state_totals.ts, src/Sql/StateTotals.ts):
 * the migration counts the rows already there; every insert, change of state and delete after it is counted by the
 * tables' triggers; folding moves deltas into totals without changing a count, even with folds on several
 * connections at once and writers changing states meanwhile. The reference is always a `group by state` over the
 * tables themselves, read in the same snapshot.
 */
import { SqlClient } from "@effect/sql"
import { expect, it } from "@effect/vitest"
import { Effect, Random } from "effect"
import { foldStateDeltas, stateTotals } from "../../src/Sql/StateTotals.ts"
import { migrateBelow, unmigratedDatabase } from "../support/Unmigrated.ts"

const CLOSE_STATES = ["pending", "final", "reverted", "expired"] as const
const WITHDRAWAL_STATES = ["queued", "submitting", "relayed", "failed", "unknown"] as const
const TOTALS_MIGRATION = 37

/** An unmigrated database of its own, migrated by the test (up to a version, then the rest). */
const Unmigrated = unmigratedDatabase("state-totals")

/** n closes in `state` (managed: no signature columns), distinct orders so none is a second pending one. */
const addCloses = (state: string, n: number, tag: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    Effect.asVoid(sql`
      insert into closes (id, kind, master, venue, chain_id, escrow, order_id, owner, amount, dex, to_margin,
        relay_key, state, created_at, updated_at)
      select gen_random_uuid(), 'managed', ${`0x${"0a".repeat(20)}`}, 'aster', 1, ${`0x${"0e".repeat(20)}`},
        '0x' || substr(md5(${tag} || ${state}), 1, 8) || lpad(to_hex(g), 56, '0'), ${`0x${"0b".repeat(20)}`}, 1, 0, false, ${tag} || '-' || g || '-' || ${state},
        ${state}, now(), now()
      from generate_series(1, ${n}) g`),
  )

/** n withdrawals in `state`, each of its own account (only one may be open per account). */
const addWithdrawals = (state: string, n: number, tag: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    Effect.asVoid(sql`
      insert into withdrawals (id, master, venue, address, amount, destination, state, created_at, updated_at)
      select gen_random_uuid(), ${`0x${"0a".repeat(20)}`}, 'aster',
        '0x' || lpad(to_hex(g), 32, '0') || substr(md5(${tag} || ${state}), 1, 8), 1, ${`0x${"0c".repeat(20)}`},
        ${state}, now(), now()
      from generate_series(1, ${n}) g`),
  )

/** The totals and the tables' own counts, in one snapshot. */
const bothCounts = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  return yield* sql.withTransaction(
    Effect.gen(function* () {
      yield* sql`set transaction isolation level repeatable read`
      const totals = yield* stateTotals
      const rows = yield* sql<{ kind: "closes" | "withdrawals"; state: string; n: string }>`
        select 'closes' as kind, state, count(*)::text as n from closes group by state
        union all select 'withdrawals', state, count(*)::text from withdrawals group by state`
      const plain = (m: ReadonlyMap<string, number>) => Object.fromEntries([...m].filter(([, n]) => n !== 0).sort())
      const counted = { closes: new Map<string, number>(), withdrawals: new Map<string, number>() }
      for (const r of rows) counted[r.kind].set(r.state, Number(r.n))
      return {
        totals: { closes: plain(totals.get("closes")!), withdrawals: plain(totals.get("withdrawals")!) },
        counted: { closes: plain(counted.closes), withdrawals: plain(counted.withdrawals) },
      }
    }),
  )
})
const expectExact = Effect.map(bothCounts, ({ totals, counted }) => {
  expect(totals).toEqual(counted)
  return counted
})

/** Moves `n` rows of `table`, each drawn from Effect's Random, to ended states drawn likewise, one at a time. */
const shuffleStates = (table: "closes" | "withdrawals", rows: number, n: number) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const states = table === "closes" ? ["final", "reverted", "expired"] : ["relayed", "failed"]
    for (let i = 0; i < n; i++) {
      const state = states[yield* Random.nextIntBetween(0, states.length)]!
      const row = yield* Random.nextIntBetween(0, rows)
      yield* sql`
        update ${sql(table)} set state = ${state}, updated_at = now()
        where id = (select id from ${sql(table)} order by id offset ${row} limit 1)`
    }
  })

it.layer(Unmigrated, { timeout: "120 seconds" })("state totals", (it) => {
  it.effect(
    "the migration counts the rows already there; triggers count every change after; folds change no count",
    () =>
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        yield* migrateBelow(TOTALS_MIGRATION)
        // Rows from before the totals existed.
        yield* addCloses("final", 7, "old")
        yield* addCloses("pending", 2, "old")
        yield* addCloses("reverted", 1, "old")
        yield* addWithdrawals("relayed", 5, "old")
        yield* addWithdrawals("unknown", 1, "old")
        yield* migrateBelow()
        expect(yield* expectExact).toEqual({
          closes: { final: 7, pending: 2, reverted: 1 },
          withdrawals: { relayed: 5, unknown: 1 },
        })
        const [deltas] = yield* sql<{ n: number }>`select count(*)::int as n from state_deltas`
        expect(deltas!.n).toBe(0)

        // Inserts, a change of state, an update that keeps the state (no delta), a delete.
        yield* addCloses("pending", 3, "new")
        yield* addWithdrawals("queued", 2, "new")
        yield* sql`update closes set state = 'final', updated_at = now() where state = 'pending'`
        yield* sql`update closes set updated_at = now() where state = 'final'`
        yield* sql`update withdrawals set state = 'submitting' where state = 'queued'`
        yield* sql`delete from withdrawals where state = 'unknown'`
        expect(yield* expectExact).toEqual({
          closes: { final: 12, reverted: 1 },
          withdrawals: { relayed: 5, submitting: 2 },
        })
        const [kept] = yield* sql<{ n: number }>`select count(*)::int as n from state_deltas`
        // 3 + 2 inserts, 5 + 2 changes of state (two deltas each), 1 delete; the same-state update wrote none.
        expect(kept!.n).toBe(5 + 2 * 7 + 1)

        expect(yield* foldStateDeltas).toBe(kept!.n)
        expect(yield* foldStateDeltas).toBe(0)
        const [left] = yield* sql<{ n: number }>`select count(*)::int as n from state_deltas`
        expect(left!.n).toBe(0)
        expect(yield* expectExact).toEqual({
          closes: { final: 12, reverted: 1 },
          withdrawals: { relayed: 5, submitting: 2 },
        })
      }),
  )

  it.effect("folds on several connections at once, with writers changing states meanwhile, count every row once", () =>
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const seed = Number(process.env.STATE_TOTALS_SEED ?? Math.floor(Math.random() * 1_000_000))
      console.log(`state totals: seed ${seed} (STATE_TOTALS_SEED replays the rows and states drawn)`)
      const run = Effect.gen(function* () {
        for (const [i, state] of CLOSE_STATES.entries()) yield* addCloses(state, 20, `race-${i}`)
        for (const [i, state] of WITHDRAWAL_STATES.entries())
          yield* addWithdrawals(state, state === "relayed" ? 30 : 1, `race-${i}`)
        const rows = (table: "closes" | "withdrawals") =>
          Effect.map(sql<{ n: number }>`select count(*)::int as n from ${sql(table)}`, ([r]) => r!.n)
        const closes = yield* rows("closes")
        const withdrawals = yield* rows("withdrawals")
        const writers = Effect.all(
          [shuffleStates("closes", closes, 60), shuffleStates("withdrawals", withdrawals, 40)],
          {
            concurrency: 2,
            discard: true,
          },
        )
        const folds = Effect.all(
          Array.from({ length: 4 }, () => foldStateDeltas.pipe(Effect.repeatN(10))),
          {
            concurrency: 4,
            discard: true,
          },
        )
        // Reads while both run: each must agree with the tables in its snapshot.
        const reads = Effect.repeatN(expectExact, 10)
        yield* Effect.all([writers, folds, reads], { concurrency: 3, discard: true })
        yield* expectExact
        yield* foldStateDeltas
        yield* expectExact
      })
      yield* run.pipe(Effect.withRandom(Random.make(seed)))
    }),
  )
})
