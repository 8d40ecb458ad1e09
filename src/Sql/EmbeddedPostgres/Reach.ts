// Root only: the `postgres` user the server runs as (PostgreSQL refuses root) and what that user can reach (the
// binaries, the data directory, a scratch directory), asked of the user itself. See src/Sql/EmbeddedPostgres.ts.
import { lstatSync, statSync } from "node:fs"
import { tmpdir } from "node:os"
import { dirname, resolve } from "node:path"
import { Effect } from "effect"
import { command, describe, type EmbeddedPostgresError, failure, OR_ELSE, oneLine, type RunAs } from "./Children.ts"

let postgresUser: RunAs | undefined

/** Undefined when we are not root; else the `postgres` user, made when missing (groupadd/useradd). */
export const runAs: Effect.Effect<RunAs | undefined, EmbeddedPostgresError> = Effect.suspend(() => {
  if (process.getuid?.() !== 0) return Effect.succeed(undefined)
  if (postgresUser !== undefined) return Effect.succeed(postgresUser)
  const lookup = Effect.all([command("id", ["-u", "postgres"]), command("id", ["-g", "postgres"])])
  return Effect.gen(function* () {
    let [uid, gid] = yield* lookup
    let why = ""
    if (uid.code !== 0) {
      const group = yield* command("groupadd", ["-f", "postgres"])
      const user = yield* command("useradd", ["--system", "--gid", "postgres", "--no-create-home", "postgres"])
      why = oneLine(`${group.stderr} ${user.stderr}`)
      ;[uid, gid] = yield* lookup
    }
    if (uid.code !== 0 || gid.code !== 0) return yield* Effect.fail(new Error(why || "no such user"))
    postgresUser = { uid: Number(uid.stdout.trim()), gid: Number(gid.stdout.trim()) }
    return postgresUser
  }).pipe(
    Effect.mapError((e) =>
      failure(
        "access",
        `embedded PostgreSQL runs its server as the \`postgres\` user when started by root, and none exists or could be made (${describe(e)}): create one (useradd --system postgres), run as a non-root user, ${OR_ELSE}`,
        e,
      ),
    ),
  )
})

/** "/", "/a", "/a/b" for "/a/b". */
export const ancestry = (path: string): Array<string> => {
  const out: Array<string> = []
  for (let p = resolve(path); ; p = dirname(p)) {
    out.unshift(p)
    if (dirname(p) === p) return out
  }
}

const REACH_SCRIPT = 'for p; do test -x "$p" || { printf %s "$p"; exit 3; }; done'

/**
 * The first of `paths` the server's user cannot pass (`test -x`: search a directory, run a file), undefined when
 * it passes all. Asked of that user itself, as the server would run (its uid and gid, no other group).
 */
export const firstUnreachable = (as: RunAs, paths: ReadonlyArray<string>) =>
  command("/bin/sh", ["-c", REACH_SCRIPT, "sh", ...paths], as).pipe(
    Effect.flatMap((r) =>
      r.code === 0
        ? Effect.succeed(undefined)
        : r.code === 3
          ? Effect.succeed(r.stdout)
          : Effect.fail(new Error(`exit ${r.code}: ${oneLine(r.stderr)}`)),
    ),
    Effect.mapError((e) =>
      failure("access", `embedded PostgreSQL could not check what the postgres user can reach: ${describe(e)}`, e),
    ),
  )

export const isDirectory = (path: string) => {
  try {
    return statSync(path).isDirectory()
  } catch {
    return false
  }
}

/** A directory we (root) made and nobody else can change: not a symlink, owned by root, not group/world-writable. */
export const assertOurs = (dir: string) => {
  const st = lstatSync(dir)
  if (!st.isDirectory() || st.uid !== 0 || (st.mode & 0o022) !== 0) {
    throw new Error(
      `${dir} is not a directory made by root (owner uid ${st.uid}, mode ${(st.mode & 0o7777).toString(8)}); remove it`,
    )
  }
}

/** The first directory of the candidates the server's user can reach, for `what`. */
export const scratchRoot = (as: RunAs, scratchDir: string | undefined, what: string) =>
  Effect.gen(function* () {
    const candidates =
      scratchDir !== undefined
        ? [resolve(scratchDir)]
        : [...new Set([tmpdir(), "/var/tmp", "/tmp"].map((d) => resolve(d)))].filter(isDirectory)
    for (const candidate of candidates) {
      if ((yield* firstUnreachable(as, ancestry(candidate))) === undefined) return candidate
    }
    return yield* failure(
      "access",
      `embedded PostgreSQL runs as the postgres user (we are root) and needs a directory it can reach for ${what}, but it can reach none of ${candidates.join(", ") || "os.tmpdir(), /var/tmp, /tmp"}: set TMPDIR to a directory every user can search, run as a non-root user, ${OR_ELSE}`,
    )
  })
