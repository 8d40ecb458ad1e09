import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { createServer, type Server } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Redacted } from "effect"
import { freePort } from "../../src/FreePort.ts"
import { startEmbeddedPostgres } from "../../src/Sql/EmbeddedPostgres.ts"

/** A loopback port someone else holds for the scope's lifetime. */
const takenPort = Effect.acquireRelease(
  Effect.async<Server>((resume) => {
    const server = createServer()
    server.listen(0, "127.0.0.1", () => resume(Effect.succeed(server)))
  }),
  (server) => Effect.async<void>((resume) => void server.close(() => resume(Effect.void))),
).pipe(Effect.map((server) => (server.address() as { port: number }).port))

describe("embedded PostgreSQL", () => {
  it.scoped(
    "a port taken between choosing and binding it is retried on a new port",
    () =>
      Effect.gen(function* () {
        const taken = yield* takenPort
        let tries = 0
        const ports = Effect.suspend(() => (tries++ === 0 ? Effect.succeed(taken) : freePort))
        const url = new URL(Redacted.value(yield* startEmbeddedPostgres({ ports })))
        expect(tries).toBe(2)
        expect(Number(url.port)).not.toBe(taken)
      }),
    120_000,
  )

  it.scoped(
    "a start that fails names the server's own words, not `undefined`",
    () =>
      Effect.gen(function* () {
        // A data directory that claims to be initialised but is not: the server itself refuses it.
        const parent = mkdtempSync(join(tmpdir(), "settlement-pg-broken-"))
        chmodSync(parent, 0o755)
        mkdirSync(join(parent, "data"), { mode: 0o700 })
        writeFileSync(join(parent, "data", "PG_VERSION"), "1\n")
        const error = yield* Effect.flip(startEmbeddedPostgres({ dataDir: join(parent, "data") }))
        rmSync(parent, { recursive: true, force: true })
        expect(error._tag).toBe("EmbeddedPostgresError")
        expect(error.message).toMatch(/failed to start in .*data on port \d+:\n.*\S/)
        expect(error.message).toMatch(/postgres|FATAL/i)
      }),
    60_000,
  )

  it.scoped("a data directory that cannot be made says so in one line", () =>
    Effect.gen(function* () {
      const file = join(tmpdir(), `settlement-pg-not-a-dir-${process.pid}`)
      writeFileSync(file, "x")
      const error = yield* Effect.flip(startEmbeddedPostgres({ dataDir: join(file, "pg", "data") }))
      rmSync(file, { force: true })
      expect(error.message).toMatch(/cannot prepare its data directory .*settlement-pg-not-a-dir.*EEXIST|ENOTDIR/)
    }),
  )
})
