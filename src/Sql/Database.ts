import { readdirSync } from "node:fs"
import { fileURLToPath, pathToFileURL } from "node:url"
import { NodeContext } from "@effect/platform-node"
import { type Migrator, SqlError } from "@effect/sql"
import { PgMigrator } from "@effect/sql-pg"
import { Duration, Effect, Layer, Option, Redacted } from "effect"
import { AppConfig, ConfigInvalid } from "../Config.ts"
import { describeDatabaseConnectFailure, describeDatabaseStartFailure } from "../StartupChecks.ts"
import { MIGRATIONS_LOCK, withAdvisoryLock } from "./AdvisoryLock.ts"
import { startEmbeddedPostgres } from "./EmbeddedPostgres.ts"
import { pgClientLayer } from "./Notifications.ts"

const MIGRATIONS_DIR = fileURLToPath(new URL("../../migrations", import.meta.url))

/** Where `npm start` keeps the embedded database across restarts. */
export const EMBEDDED_DATA_DIR = ".data/pg"

/**
 * Loads `migrations/NNNN_name.ts` modules (default export: an Effect). The platform's own loader
 * imports from inside node_modules, where neither tsx nor vitest transform TypeScript; importing
 * from here lets both runtimes load the files.
 */
export const migrationsLoader: Migrator.Loader = Effect.sync(() =>
  readdirSync(MIGRATIONS_DIR)
    .flatMap((file) => {
      const match = file.match(/^(\d+)_([^.]+)\.(?:js|ts)$/)
      if (!match) return []
      const load = Effect.promise(() => import(/* @vite-ignore */ pathToFileURL(`${MIGRATIONS_DIR}/${file}`).href))
      return [[Number(match[1]), match[2]!, load] as const]
    })
    .sort(([a], [b]) => a - b),
)

/**
 * How long a pool connection may sit idle before it is closed. A connection carries PostgreSQL's warm state for
 * us: its backend's catalog caches and its named statements with their plans (each gets custom plans, planned
 * per call, for its first five runs on a connection). pg-pool's default of 10 s closed connections between bursts
 * of work, and the next burst opened cold ones (the settle bench: 42 backends over a 45 s run, at most 25 at once).
 */
export const POOL_IDLE_TIMEOUT = Duration.minutes(5)

/**
 * A pool on the given PostgreSQL with every pending migration applied (its `listen` shares one connection and
 * runs one statement at a time: Notifications.ts). PgMigrator locks its table
 * while it migrates, but creates that table without a lock: the advisory lock makes two first-ever
 * starts on one empty database take turns (see withAdvisoryLock).
 */
export const databaseLayer = (url: Redacted.Redacted<string>) =>
  withAdvisoryLock(MIGRATIONS_LOCK, PgMigrator.layer({ loader: migrationsLoader })).pipe(
    Layer.provide(NodeContext.layer),
    Layer.provideMerge(
      pgClientLayer({ url, maxConnections: 16, idleTimeout: POOL_IDLE_TIMEOUT, applicationName: "settlement" }),
    ),
  )

/**
 * DATABASE_URL when set; otherwise an embedded PostgreSQL whose data lives in ./.data/pg (as root in a private
 * directory: relocatedDataDir, see EmbeddedPostgres.ts). A DATABASE_URL
 * the pool cannot reach stops the start with one line naming it and the fix (ConfigInvalid), not the
 * driver's stack.
 */
export const DatabaseLive = Layer.unwrapScoped(
  Effect.gen(function* () {
    const config = yield* AppConfig
    if (Option.isNone(config.databaseUrl)) {
      // Its failures name their fix (root in a private directory, a data dir the server refuses): one line each.
      const embedded = startEmbeddedPostgres({ dataDir: EMBEDDED_DATA_DIR }).pipe(
        Effect.mapError((e) => new ConfigInvalid({ message: e.message })),
      )
      return oneLineFailures(yield* embedded)
    }
    return oneLineFailures(config.databaseUrl.value)
  }),
)

/** The database layer whose start-up failures are one line each (ConfigInvalid), never the driver's error. */
const oneLineFailures = (url: Redacted.Redacted<string>) =>
  databaseLayer(url).pipe(
    Layer.mapError((e) =>
      e instanceof SqlError.SqlError && /^PgClient: (Failed to connect|Connection timed out)/.test(e.message)
        ? new ConfigInvalid({ message: describeDatabaseConnectFailure(Redacted.value(url), e.cause) })
        : // Connected, then refused: a migration statement (e.g. a role without CREATE) or the migrator's checks.
          new ConfigInvalid({
            message: describeDatabaseStartFailure(Redacted.value(url), e instanceof SqlError.SqlError ? e.cause : e),
          }),
    ),
  )
