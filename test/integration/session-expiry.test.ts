import { expect, layer } from "@effect/vitest"
import { Clock, Effect, Either, FiberRef, TestClock, TestContext } from "effect"
import { ensureAccount } from "../../src/Accounts/Repo.ts"
import { authenticateHeader } from "../../src/Auth/Bearer.ts"
import { insertSession } from "../../src/Auth/Repo.ts"
import { classOf } from "../../src/Domain/Errors.ts"
import { CurrentRequestId } from "../../src/Domain/RequestId.ts"
import { sha256 } from "../../src/SecureRandom.ts"
import { TestDatabaseLive } from "../support/Database.ts"

const SEVEN_DAYS = 7 * 24 * 3600 * 1000
const master = "0x00000000000000000000000000000000000000aa"

const authenticate = (token: string) =>
  authenticateHeader(`Bearer ${token}`, new Set()).pipe(
    Effect.locally(CurrentRequestId, "00000000-0000-4000-8000-000000000000"),
    Effect.either,
  )

layer(TestDatabaseLive, { timeout: "120 seconds", excludeTestServices: true })("session expiry", (it) => {
  it.effect("a session is accepted until its expiry on the Effect clock, then refused", () =>
    Effect.gen(function* () {
      // TestClock starts at 0 (1970): the session is created and judged in virtual time.
      const now = yield* Clock.currentTimeMillis
      yield* ensureAccount({ master, access: "granted", identityId: crypto.randomUUID(), nowMs: now })
      const token = `st_${"b".repeat(43)}`
      yield* insertSession({
        id: crypto.randomUUID(),
        tokenHash: sha256(token),
        master,
        nowMs: now,
        expiresMs: now + SEVEN_DAYS,
      })
      expect(Either.isRight(yield* authenticate(token))).toBe(true)
      yield* TestClock.adjust("6 days")
      expect(Either.isRight(yield* authenticate(token))).toBe(true)
      yield* TestClock.adjust("23 hours")
      expect(Either.isRight(yield* authenticate(token))).toBe(true)
      yield* TestClock.adjust("1 hour")
      const expired = yield* authenticate(token)
      expect(
        Either.isLeft(expired) && { code: classOf(expired.left).code, message: expired.left.message },
      ).toMatchObject({
        code: "UNAUTHORIZED",
        message: "session expired",
      })
      expect(yield* FiberRef.get(CurrentRequestId)).toBeDefined()
    }).pipe(Effect.provide(TestContext.TestContext)),
  )
})
