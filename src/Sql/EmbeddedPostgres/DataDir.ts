// Where the data lives: a throw-away directory, the one asked for, or (root, out of the `postgres` user's reach)
// its relocation. See src/Sql/EmbeddedPostgres.ts.
import { createHash } from "node:crypto"
import { chmodSync, existsSync, mkdirSync, mkdtempSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { dirname, join, resolve } from "node:path"
import { Effect } from "effect"
import { type EmbeddedPostgresError, failure, OR_ELSE, type RunAs } from "./Children.ts"
import { ancestry, assertOurs, firstUnreachable, isDirectory, scratchRoot } from "./Reach.ts"

/**
 * Where a persistent data directory the `postgres` user cannot reach (root in a private clone) lives instead:
 * `<root>/settlement-pg-data-<hash of its absolute path>/pg`, root /var/tmp (kept across reboots) or os.tmpdir().
 * A `SOURCE` file next to it names the directory it stands for. `npm run devnet:reset` removes it.
 */
export const relocatedDataDir = (dataDir: string, root?: string): string =>
  join(
    resolve(root ?? (isDirectory("/var/tmp") ? "/var/tmp" : tmpdir())),
    `settlement-pg-data-${createHash("sha256").update(resolve(dataDir)).digest("hex").slice(0, 16)}`,
    "pg",
  )

interface DataPlace {
  readonly dataDir: string
  readonly relocated: boolean
  /** A throw-away instance's directory, removed when the scope closes. */
  readonly throwAway?: string
}

export const prepareFailure = (dir: string) => (cause: unknown) =>
  failure("prepare", `embedded PostgreSQL cannot prepare its data directory ${dir}: ${String(cause)}`, cause)

export const dataPlace = (
  as: RunAs | undefined,
  options: { readonly dataDir?: string | undefined; readonly scratchDir?: string | undefined },
): Effect.Effect<DataPlace, EmbeddedPostgresError> =>
  Effect.gen(function* () {
    if (options.dataDir === undefined) {
      const root =
        as === undefined
          ? (options.scratchDir ?? tmpdir())
          : yield* scratchRoot(as, options.scratchDir, "a throw-away database")
      return yield* Effect.try({
        try: () => {
          const parent = mkdtempSync(join(root, "settlement-pg-"))
          chmodSync(parent, 0o755)
          return { dataDir: join(parent, "data"), relocated: false, throwAway: parent }
        },
        catch: prepareFailure(root),
      })
    }
    const requested = resolve(options.dataDir)
    yield* Effect.try({
      try: () => mkdirSync(dirname(requested), { recursive: true }),
      catch: prepareFailure(options.dataDir),
    })
    if (as === undefined) return { dataDir: requested, relocated: false }
    // The data directory's own owner and mode are the server's to judge (it names them); what it cannot judge is a
    // parent it cannot search.
    const blocked = yield* firstUnreachable(as, ancestry(dirname(requested)))
    if (blocked === undefined) return { dataDir: requested, relocated: false }
    if (existsSync(join(requested, "PG_VERSION"))) {
      return yield* failure(
        "data",
        `embedded PostgreSQL cannot use the data in ${requested}: its server runs as the postgres user (we are root), who cannot search ${blocked}; let it (chmod o+x ${blocked}), move the data where it can reach it, ${OR_ELSE}`,
      )
    }
    const relocated = relocatedDataDir(requested, options.scratchDir)
    const home = dirname(relocated)
    yield* Effect.try({
      try: () => {
        mkdirSync(home, { recursive: true, mode: 0o755 })
        assertOurs(home)
        chmodSync(home, 0o755) // whatever the umask
        writeFileSync(join(home, "SOURCE"), `${requested}\n`)
      },
      catch: prepareFailure(home),
    })
    const still = yield* firstUnreachable(as, ancestry(home))
    if (still !== undefined) {
      return yield* failure(
        "access",
        `embedded PostgreSQL runs as the postgres user (we are root), who can reach neither ${dirname(requested)} (${blocked}) nor ${home} (${still}): let it search ${blocked} (chmod o+x), run as a non-root user, ${OR_ELSE}`,
      )
    }
    return { dataDir: relocated, relocated: true }
  })
