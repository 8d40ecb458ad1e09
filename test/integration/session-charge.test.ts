import { SqlClient } from "@effect/sql"
import { expect, layer } from "@effect/vitest"
import { Clock, Effect, Either, Option, TestClock, TestContext } from "effect"
import { ensureAccount } from "../../src/Accounts/Repo.ts"
import { sessionPrincipal } from "../../src/Auth/Bearer.ts"
import { chargeLiveSession, insertSession, revokeSession } from "../../src/Auth/Repo.ts"
import { sha256 } from "../../src/SecureRandom.ts"
import { TestDatabaseLive } from "../support/Database.ts"

/**
 * A signed-in request's session is resolved and charged in one statement (chargeLiveSession, the HTTP middleware's
 * path): a live session pays one token of its budget, a dead one (revoked, expired on the Effect clock, unknown)
 * pays nothing and is refused as authenticateHeader refuses it.
 */
const DAY = 24 * 3600 * 1000
const BUCKET = { rate: 1, burst: 3 }
const master = "0x00000000000000000000000000000000000000ab"

const newSession = (token: string, lifeMs = 7 * DAY) =>
  Effect.gen(function* () {
    const now = yield* Clock.currentTimeMillis
    const id = crypto.randomUUID()
    yield* insertSession({ id, tokenHash: sha256(token), master, nowMs: now, expiresMs: now + lifeMs })
    return id
  })

const charge = (token: string) =>
  Effect.flatMap(Clock.currentTimeMillis, (now) =>
    Effect.map(chargeLiveSession(sha256(token), now, BUCKET), (found) => ({ found, now })),
  )

const refusal = (token: string) =>
  Effect.gen(function* () {
    const { found, now } = yield* charge(token)
    const judged = yield* Effect.either(sessionPrincipal(found, now, new Set()))
    return {
      allowed: Option.exists(found, (r) => r.allowed),
      message: Either.isLeft(judged) ? judged.left.message : "",
    }
  })

const bucketRow = (id: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    Effect.map(
      sql<{ n: number }>`select count(*)::int as n from rate_buckets where key = ${`session:${id}`}`,
      (r) => r[0]!.n,
    ),
  )

layer(TestDatabaseLive, { timeout: "120 seconds", excludeTestServices: true })("session charge", (it) => {
  it.effect("a live session pays one token per request until its burst is spent; a dead one pays nothing", () =>
    Effect.gen(function* () {
      yield* ensureAccount({ master, access: "granted", identityId: crypto.randomUUID(), nowMs: 0 })

      // Live: charged, burst 3, then refused for its budget (still the same principal).
      const live = `st_${"c".repeat(43)}`
      const liveId = yield* newSession(live)
      for (let i = 0; i < BUCKET.burst; i++) {
        const { found, now } = yield* charge(live)
        expect(Option.map(found, (r) => r.allowed)).toEqual(Option.some(true))
        const principal = yield* sessionPrincipal(found, now, new Set([master]))
        expect(principal).toEqual({ _tag: "Session", sessionId: liveId, master, admin: true })
      }
      expect(yield* refusal(live)).toEqual({ allowed: false, message: "" })

      // Revoked: refused, and its bucket never made.
      const revoked = `st_${"d".repeat(43)}`
      const revokedId = yield* newSession(revoked)
      yield* revokeSession(revokedId, yield* Clock.currentTimeMillis)
      expect(yield* refusal(revoked)).toEqual({ allowed: false, message: "session revoked" })
      expect(yield* bucketRow(revokedId)).toBe(0)

      // Expired on the Effect clock (the database's own clock is not asked): refused, not charged.
      const expiring = `st_${"e".repeat(43)}`
      const expiringId = yield* newSession(expiring, DAY)
      yield* TestClock.adjust("1 day")
      expect(yield* refusal(expiring)).toEqual({ allowed: false, message: "session expired" })
      expect(yield* bucketRow(expiringId)).toBe(0)

      // Unknown: nothing found, nothing written.
      const { found } = yield* charge(`st_${"f".repeat(43)}`)
      expect(Option.isNone(found)).toBe(true)
      expect(yield* refusal(`st_${"f".repeat(43)}`)).toEqual({ allowed: false, message: "unknown session" })
    }).pipe(Effect.provide(TestContext.TestContext)),
  )
})
