/**
 * A quote identity's fade record from totals (migrations/0038_fade_totals.ts, src/Settlement/FadeRecord.ts): the
 * migration counts the marks already there; every chance and fade after it is counted by trigger; a fold moves
 * deltas into totals without changing a record, even with folds on several connections, window changes (an owner's
 * resume) and writers meanwhile. The reference is always the count over the marks themselves that the record was
 * read from before, in the same snapshot.
 */
import { SqlClient } from "@effect/sql"
import { expect, it } from "@effect/vitest"
import { Effect, Random } from "effect"
import { resumeFadedIdentity } from "../../src/QuoteIdentities/Repo.ts"
import { identityFades } from "../../src/Settlement/FadeRecord.ts"
import { foldFadeDeltas } from "../../src/Sql/FadeTotals.ts"
import { fadesOverMarks } from "../support/FadeCounts.ts"
import { migrateBelow, unmigratedDatabase } from "../support/Unmigrated.ts"

const TOTALS_MIGRATION = 38
const MASTER = `0x${"0a".repeat(20)}`

const Unmigrated = unmigratedDatabase("fade-totals")

/** n identities of one master; their ids. */
const addIdentities = (n: number) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    Effect.gen(function* () {
      yield* sql`insert into accounts (master, access, created_at) values (${MASTER}, 'granted', now())
                 on conflict do nothing`
      const rows = yield* sql<{ id: string }>`
        insert into quote_identities (id, master, signer, kind, lease_expires_at, created_at)
        select gen_random_uuid(), ${MASTER}, '0x' || substr(md5(random()::text), 1, 8) || lpad(to_hex(g), 32, '0'),
          'credential', now(), now()
        from generate_series(1, ${n}) g
        returning id::text`
      return rows.map((r) => r.id)
    }),
  )

/** A fill's chance for `identity` (its own transaction, so its time is now); the fill's id. */
const chance = (identity: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    Effect.map(
      sql<{ fill_id: string }>`
        insert into settlement_v2_marks (fill_id, kind, identity_id, master)
        values (gen_random_uuid(), 'chance', ${identity}::uuid, ${MASTER}) returning fill_id::text`,
      ([r]) => r!.fill_id,
    ),
  )

/** The fill's fade (as the settlement writes it: only after a chance). */
const fade = (identity: string, fill: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    Effect.asVoid(sql`
      insert into settlement_v2_marks (fill_id, kind, identity_id, master)
      values (${fill}::uuid, 'fade', ${identity}::uuid, ${MASTER})`),
  )

/** An owner's resume of the identity, flagged first: a new window (src/QuoteIdentities/Repo.ts). */
const newWindow = (identity: string) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    yield* sql`update quote_identities set fade_flagged_at = now() where id = ${identity}::uuid`
    expect((yield* resumeFadedIdentity({ id: identity, master: MASTER }))._tag).toBe("Resumed")
  })

/** Every identity's record and its reference, in one snapshot; they must agree. The records. */
const expectExact = (identities: ReadonlyArray<string>) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql.withTransaction(
      Effect.gen(function* () {
        yield* sql`set transaction isolation level repeatable read`
        const records = []
        for (const id of identities) {
          const record = yield* identityFades(id)
          const counted = yield* fadesOverMarks(id)
          expect({ chances: record!.chances, fades: record!.fades }).toEqual(counted)
          records.push(counted)
        }
        return records
      }),
    ),
  )

const deltaRows = Effect.flatMap(SqlClient.SqlClient, (sql) =>
  Effect.map(sql<{ n: number }>`select count(*)::int as n from fade_deltas`, ([r]) => r!.n),
)

it.layer(Unmigrated, { timeout: "120 seconds" })("fade totals", (it) => {
  it.effect("the migration counts the marks already there; triggers count every mark after; folds and windows", () =>
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      yield* migrateBelow(TOTALS_MIGRATION)
      const [a, b, c] = yield* addIdentities(3)
      // a: five chances, two of them faded; b: two chances before its window and one after, each faded.
      const aFills = [] as Array<string>
      for (let i = 0; i < 5; i++) aFills.push(yield* chance(a!))
      yield* fade(a!, aFills[0]!)
      yield* fade(a!, aFills[1]!)
      const bOld = [yield* chance(b!), yield* chance(b!)]
      yield* sql`update quote_identities set fade_window_started_at = now() where id = ${b!}::uuid`
      const bNew = yield* chance(b!)
      for (const f of [...bOld, bNew]) yield* fade(b!, f)
      yield* migrateBelow()
      expect(yield* expectExact([a!, b!, c!])).toEqual([
        { chances: 5, fades: 2 },
        { chances: 1, fades: 1 },
        { chances: 0, fades: 0 },
      ])
      expect(yield* deltaRows).toBe(0)

      // New marks, including a fade of a chance from before the migration and one of b's old window (not counted).
      yield* fade(a!, aFills[2]!)
      const aNew = yield* chance(a!)
      yield* fade(a!, aNew)
      const cFill = yield* chance(c!)
      yield* fade(b!, bOld[0]!).pipe(Effect.ignore) // already there: the primary key refuses it, no delta
      expect(yield* expectExact([a!, b!, c!])).toEqual([
        { chances: 6, fades: 4 },
        { chances: 1, fades: 1 },
        { chances: 1, fades: 0 },
      ])
      expect(yield* deltaRows).toBe(4)
      expect(yield* foldFadeDeltas).toBe(4)
      expect(yield* foldFadeDeltas).toBe(0)
      expect(yield* expectExact([a!, b!, c!])).toEqual([
        { chances: 6, fades: 4 },
        { chances: 1, fades: 1 },
        { chances: 1, fades: 0 },
      ])

      // A resume starts a new window: folded totals of the old one no longer count, nor do its unfolded deltas.
      yield* fade(c!, cFill)
      yield* newWindow(a!)
      yield* newWindow(c!)
      expect(yield* expectExact([a!, b!, c!])).toEqual([
        { chances: 0, fades: 0 },
        { chances: 1, fades: 1 },
        { chances: 0, fades: 0 },
      ])
      const aLater = yield* chance(a!)
      yield* fade(a!, aLater)
      yield* fade(a!, aFills[3]!) // a chance of the old window: not counted
      expect(yield* foldFadeDeltas).toBe(4)
      expect(yield* expectExact([a!, b!, c!])).toEqual([
        { chances: 1, fades: 1 },
        { chances: 1, fades: 1 },
        { chances: 0, fades: 0 },
      ])
      const [totals] = yield* sql<{ n: number }>`select count(*)::int as n from fade_totals`
      expect(totals!.n).toBe(3)
    }),
  )

  it.effect("folds on several connections, window changes and writers meanwhile, count every mark once", () =>
    Effect.gen(function* () {
      const seed = Number(process.env.FADE_TOTALS_SEED ?? Math.floor(Math.random() * 1_000_000))
      console.log(`fade totals: seed ${seed} (FADE_TOTALS_SEED replays the identities and marks drawn)`)
      const identities = yield* addIdentities(6)
      const pick = Effect.map(Random.nextIntBetween(0, identities.length), (i) => identities[i]!)
      const run = Effect.gen(function* () {
        const writers = Effect.all(
          Array.from({ length: 3 }, () =>
            Effect.gen(function* () {
              for (let i = 0; i < 40; i++) {
                const identity = yield* pick
                const fill = yield* chance(identity)
                if (yield* Random.nextBoolean) yield* fade(identity, fill)
              }
            }),
          ),
          { concurrency: 3, discard: true },
        )
        const windows = Effect.gen(function* () {
          for (let i = 0; i < 8; i++) {
            yield* newWindow(yield* pick)
            // Spaced by writes of its own (the test's clock does not move by itself).
            for (let j = 0; j < 5; j++) yield* chance(yield* pick)
          }
        })
        const folds = Effect.all(
          Array.from({ length: 3 }, () => foldFadeDeltas.pipe(Effect.repeatN(10))),
          { concurrency: 3, discard: true },
        )
        // Reads while all of it runs: each must agree with the marks in its snapshot.
        const reads = Effect.repeatN(expectExact(identities), 10)
        yield* Effect.all([writers, windows, folds, reads], { concurrency: 4, discard: true })
        yield* expectExact(identities)
        yield* foldFadeDeltas
        yield* expectExact(identities)
      })
      yield* run.pipe(Effect.withRandom(Random.make(seed)))
    }),
  )
})
