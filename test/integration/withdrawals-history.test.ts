/**
 * GET /v1/withdrawals/history: keyset pages newest first by (created_at, id) over 1,200 rows while other writers
 * change states and revisions and add rows; no row is lost or repeated across pages, rows show their current
 * state, and cursors are opaque, bounded and tamper-evident.
 */
import { SqlClient } from "@effect/sql"
import { expect, layer } from "@effect/vitest"
import { Deferred, Duration, Effect, Fiber } from "effect"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { signIn } from "../support/SignIn.ts"
import { baseUrl } from "../support/TestServer.ts"
import { testStackWithChain } from "../support/TestStack.ts"
import { code, get, type WithdrawalView } from "../support/WithdrawalDevnet.ts"

const Live = testStackWithChain()
const ROWS = 1_200

interface Page {
  readonly data: ReadonlyArray<WithdrawalView>
  readonly next_cursor: string
  readonly has_more: boolean
}

/** 1,200 rows of one master: groups of 7 share a millisecond, odd ones sit a microsecond later (ties by id). */
const seed = (master: string) =>
  Effect.flatMap(
    SqlClient.SqlClient,
    (sql) => sql`
      insert into withdrawals (id, master, venue, address, amount, destination, state, created_at, updated_at,
                               revision, target)
      select gen_random_uuid(), ${master}, 'hyperliquid', ${master}, g, ${master}, 'relayed',
             timestamptz '2026-06-01T00:00:00Z' + (g / 7) * interval '1 millisecond' + (g % 2) * interval '1 microsecond',
             now(), 1, 'signer'
      from generate_series(1, ${ROWS}) g`,
  )

layer(Live, { timeout: "180 seconds", excludeTestServices: true })("withdrawal history", (it) => {
  it.effect("1,200 rows paged while others change them: each row exactly once, in order, in its current state", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const sql = yield* SqlClient.SqlClient
      const account = privateKeyToAccount(generatePrivateKey())
      const master = account.address.toLowerCase()
      const token = yield* signIn(base, account)
      yield* seed(master)
      const expected = (yield* sql<{ id: string }>`
        select id from withdrawals where master = ${master} order by created_at desc, id desc`).map((r) => r.id)
      expect(expected.length).toBe(ROWS)
      const oldest = expected[expected.length - 1]!

      // Other writers while the walk runs: state and revision changes on random rows, new rows (newest).
      const stop = yield* Deferred.make<void>()
      const writer = yield* Effect.gen(function* () {
        let round = 0
        while (!(yield* Deferred.isDone(stop))) {
          round++
          yield* sql`
            update withdrawals set state = case when state = 'relayed' then 'failed' else 'relayed' end,
              revision = revision + 1, updated_at = now()
            where id in (select id from withdrawals where master = ${master} and id <> ${oldest}
                         order by random() limit 40)`
          yield* sql`
            insert into withdrawals (id, master, venue, address, amount, destination, state, created_at, updated_at)
            values (gen_random_uuid(), ${master}, 'aster', ${master}, ${round}, ${master}, 'failed', now(), now())`
          yield* Effect.sleep(Duration.millis(5))
        }
      }).pipe(Effect.fork)

      const seen: Array<string> = []
      const pages: Array<Page> = []
      let after: string | null = null
      do {
        const query: string = `/v1/withdrawals/history?limit=97${after === null ? "" : `&after=${after}`}`
        const res = yield* get(`${base}${query}`, token)
        expect(res.status, res.text).toBe(200)
        expect(res.headers["x-event-cursor"]).toMatch(/^[0-9]+$/)
        const page = res.json as Page
        pages.push(page)
        for (const w of page.data) seen.push(w.id)
        // Always a string (spec: next_cursor (string)), on the last page too.
        expect(typeof page.next_cursor).toBe("string")
        expect(page.next_cursor.length).toBeLessThanOrEqual(512)
        if (pages.length === 3) {
          // A change to a row not read yet shows on its page.
          yield* sql`update withdrawals set state = 'failed', revision = 9, error = 'changed mid-walk'
            where id = ${oldest}`
        }
        after = page.has_more ? page.next_cursor : null
        yield* Effect.sleep(Duration.millis(10))
      } while (after !== null)
      yield* Deferred.succeed(stop, undefined)
      yield* Fiber.join(writer)

      expect(new Set(seen).size).toBe(seen.length)
      const originals = new Set(expected)
      // Rows added during the walk are newer than every cursor after the first page: only page 1 may hold them.
      const added = seen.filter((id) => !originals.has(id))
      const firstPage = new Set(pages[0]!.data.map((w) => w.id))
      for (const id of added) expect(firstPage.has(id)).toBe(true)
      expect(seen.filter((id) => originals.has(id))).toEqual(expected)
      expect(pages.every((p) => p.data.length <= 97)).toBe(true)
      const last = pages[pages.length - 1]!
      expect(last).toMatchObject({ has_more: false, next_cursor: expect.any(String) })
      // The last page's cursor, followed anyway, answers an empty last page.
      const beyond = (yield* get(`${base}/v1/withdrawals/history?after=${last.next_cursor}`, token)).json as Page
      expect(beyond).toMatchObject({ data: [], has_more: false, next_cursor: last.next_cursor })
      const oldestRow = last.data[last.data.length - 1]!
      expect(oldestRow).toMatchObject({ id: oldest, state: "failed", revision: "9", error: "changed mid-walk" })
      // Every row shows the state and revision it had when its page was read, never an older one.
      const now = new Map(
        (yield* sql<{ id: string; revision: string }>`
          select id, revision::text as revision from withdrawals where master = ${master}`).map((r) => [
          r.id,
          BigInt(r.revision),
        ]),
      )
      for (const page of pages) for (const w of page.data) expect(BigInt(w.revision) <= now.get(w.id)!).toBe(true)
    }),
  )

  it.effect("limit: default 100, at most 500; cursors are bound to the account and tamper-evident", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const a = privateKeyToAccount(generatePrivateKey())
      const b = privateKeyToAccount(generatePrivateKey())
      const tokenA = yield* signIn(base, a)
      const tokenB = yield* signIn(base, b)
      yield* seed(a.address.toLowerCase())
      const first = (yield* get(`${base}/v1/withdrawals/history`, tokenA)).json as Page
      expect(first.data.length).toBe(100)
      expect(first.has_more).toBe(true)
      const big = (yield* get(`${base}/v1/withdrawals/history?limit=500`, tokenA)).json as Page
      expect(big.data.length).toBe(500)
      expect(big.data.slice(0, 100).map((w) => w.id)).toEqual(first.data.map((w) => w.id))
      const cursor = first.next_cursor!
      const next = (yield* get(`${base}/v1/withdrawals/history?after=${cursor}`, tokenA)).json as Page
      expect(next.data.map((w) => w.id)).toEqual(big.data.slice(100, 200).map((w) => w.id))
      // Someone else's cursor, and every single-character edit of a valid one, are refused.
      const foreign = yield* get(`${base}/v1/withdrawals/history?after=${cursor}`, tokenB)
      expect([foreign.status, code(foreign)]).toEqual([400, "INVALID_REQUEST"])
      const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
      for (let i = 0; i < cursor.length; i += 7) {
        const c = cursor[i]!
        if (c === ".") continue
        const swapped = alphabet[(alphabet.indexOf(c) + 1) % alphabet.length]!
        const edited = `${cursor.slice(0, i)}${swapped}${cursor.slice(i + 1)}`
        const res = yield* get(`${base}/v1/withdrawals/history?after=${edited}`, tokenA)
        expect([res.status, code(res)], edited).toEqual([400, "INVALID_REQUEST"])
      }
      // An account without withdrawals: an empty last page.
      const empty = (yield* get(`${base}/v1/withdrawals/history`, tokenB)).json as Page
      expect(empty).toMatchObject({ data: [], has_more: false })
      const none = yield* get(`${base}/v1/withdrawals/history?after=${empty.next_cursor}`, tokenB)
      expect([none.status, (none.json as Page).data]).toEqual([200, []])
    }),
  )
})
