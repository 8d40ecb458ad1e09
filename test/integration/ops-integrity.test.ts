import { execFile } from "node:child_process"
import { SqlClient } from "@effect/sql"
import { expect, layer } from "@effect/vitest"
import { Context, Effect, Layer, Redacted } from "effect"
import { chainStatus, initChainStatus, latchIntegrityAlarm } from "../../src/Escrow/ChainStatus.ts"
import { databaseLayer } from "../../src/Sql/Database.ts"
import { testDatabaseUrl } from "../support/Database.ts"

/** The migrated throw-away database's URL, for the CLI's DATABASE_URL. */
class Url extends Context.Tag("test/OpsUrl")<Url, string>() {}

const Stack = Layer.unwrapScoped(
  Effect.map(testDatabaseUrl, (url) => Layer.merge(databaseLayer(url), Layer.succeed(Url, Redacted.value(url)))),
)

/** `npm run ops -- …` as an operator runs it: exit code and output. */
const ops = (args: ReadonlyArray<string>, env: Record<string, string | undefined>) =>
  Effect.async<{ code: number; out: string; err: string }>((resume) => {
    execFile(
      process.execPath,
      ["--import", "tsx", "infra/ops/Ops.ts", ...args],
      { env: { ...process.env, ...env }, timeout: 60_000 },
      (error, stdout, stderr) =>
        resume(Effect.succeed({ code: error === null ? 0 : Number(error.code ?? 1), out: stdout, err: stderr })),
    )
  })

layer(Stack, { timeout: 120_000 })("npm run ops -- integrity (infra/ops/Ops.ts)", (it) => {
  it.effect("clear unlatches an alarm, asks for a fresh check and says what it cleared", () =>
    Effect.gen(function* () {
      const url = yield* Url
      yield* initChainStatus("aster", 42161, "0x0000000000000000000000000000000000000001", 1)
      yield* latchIntegrityAlarm("aster", "order 0xab: indexed 5, chain 7", new Date())

      const shown = yield* ops(["integrity", "status"], { DATABASE_URL: url })
      expect(shown.code).toBe(0)
      expect(shown.out).toContain("aster: LATCHED: order 0xab: indexed 5, chain 7")

      const cleared = yield* ops(["integrity", "clear", "aster"], { DATABASE_URL: url })
      expect(cleared).toMatchObject({ code: 0 })
      expect(cleared.out).toContain("aster: cleared the alarm (order 0xab: indexed 5, chain 7)")
      const row = (yield* chainStatus("aster"))!
      expect(row.integrityMismatch).toBe(false)
      expect(row.integrityError).toBe("")
      expect(row.integrityRequestedAt).not.toBeNull()

      // Nothing latched: says so, and still asks for a check.
      const again = yield* ops(["integrity", "clear", "aster"], { DATABASE_URL: url })
      expect(again.out).toContain("aster: no alarm was latched")
      const checked = yield* ops(["integrity", "check", "aster"], { DATABASE_URL: url })
      expect(checked).toMatchObject({ code: 0 })
      expect(checked.out).toContain("aster: a check is requested")
    }),
  )

  it.effect(
    "bad calls: an unknown venue, no DATABASE_URL, an unreachable one (64, one line, no secret); nothing changes",
    () =>
      Effect.gen(function* () {
        const url = yield* Url
        const sql = yield* SqlClient.SqlClient
        const before = yield* sql`select * from chain_status order by venue`

        const unknown = yield* ops(["integrity", "clear", "nowhere"], { DATABASE_URL: url })
        expect(unknown.code).toBe(64)
        expect(unknown.err.trim()).toBe("ops: no chain status row for venue nowhere (its watcher never ran, or a typo)")

        const noUrl = yield* ops(["integrity", "status"], { DATABASE_URL: "" })
        expect(noUrl.code).toBe(64)
        expect(noUrl.err).toContain("DATABASE_URL must name the running service's database")

        // A closed port on loopback: the reason in one line, without the password.
        const down = yield* ops(["integrity", "status"], { DATABASE_URL: "postgres://ops:s3cret@127.0.0.1:1/x" })
        expect(down.code).toBe(64)
        expect(down.err).toContain("cannot connect to PostgreSQL at 127.0.0.1:1")
        expect(down.err).not.toContain("s3cret")
        expect(down.err).not.toMatch(/\n\s+at /)

        const usage = yield* ops(["integrity", "clear"], { DATABASE_URL: url })
        expect(usage.code).toBe(64)
        // Help needs no database.
        const help = yield* ops(["integrity", "clear", "--help"], { DATABASE_URL: "" })
        expect(help.code).toBe(0)
        expect(help.out).toContain("after investigating a latched alarm")

        expect(yield* sql`select * from chain_status order by venue`).toEqual(before)
      }),
  )
})
