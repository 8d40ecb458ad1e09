import { NodeContext } from "@effect/platform-node"
import { PgMigrator } from "@effect/sql-pg"
import { Effect, Layer } from "effect"
import { migrationsLoader } from "../../src/Sql/Database.ts"
import { pgClientLayer } from "../../src/Sql/Notifications.ts"
import { testDatabaseUrl } from "./Database.ts"

/** A throw-away database of its own, not migrated: a test of a migration runs them itself (`migrateBelow`). */
export const unmigratedDatabase = (applicationName: string) =>
  Layer.unwrapScoped(Effect.map(testDatabaseUrl, (url) => pgClientLayer({ url, maxConnections: 8, applicationName })))

/** Runs the migrations numbered below `below` (all when absent) that have not run yet. */
export const migrateBelow = (below?: number) =>
  PgMigrator.run({
    loader: Effect.map(migrationsLoader, (all) => (below === undefined ? all : all.filter(([id]) => id < below))),
  }).pipe(Effect.provide(NodeContext.layer))
