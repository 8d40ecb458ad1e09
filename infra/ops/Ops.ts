/**
 * `npm run ops -- <command>`: an operator's actions on a deployment's database (@effect/cli; `--help` on each).
 *
 *   integrity status          each chain's integrity check: latched or not, its message, when it last ran
 *   integrity clear <venue>   after investigating a latched alarm: clears it and asks for a fresh check
 *   integrity check <venue>   asks the venue's watcher for a check at its next poll
 *
 * DATABASE_URL is required and is the running service's database: nothing is migrated here (an operator's tool
 * never moves a schema under a running service), and the embedded database of `npm start` is not started (it has
 * one process, the service). Exit codes: 0 done, 64 usage (unknown venue, no DATABASE_URL), 2 the database failed.
 */
import * as Args from "@effect/cli/Args"
import * as Command from "@effect/cli/Command"
import * as ValidationError from "@effect/cli/ValidationError"
import { NodeFileSystem, NodePath, NodeTerminal } from "@effect/platform-node"
import { type SqlClient, SqlError } from "@effect/sql"
import { Cause, Console, Data, Effect, Exit, Layer, Option, Redacted } from "effect"
import { chainStatusRows, clearIntegrityAlarm, requestIntegrityCheck } from "../../src/Escrow/ChainStatus.ts"
import { pgClientLayer } from "../../src/Sql/Notifications.ts"
import { describeDatabaseConnectFailure } from "../../src/StartupChecks.ts"

/** A mistake in how the tool was called: exit 64 with the message. */
export class OpsUsageError extends Data.TaggedError("OpsUsageError")<{ readonly message: string }> {}

/**
 * Runs a command against the service's database (DATABASE_URL), without migrations: a missing URL or a connection
 * failure is one line naming the fix. Only commands that run reach for it, so `--help` needs no database.
 */
const inDatabase = <A, E>(command: Effect.Effect<A, E, SqlClient.SqlClient>) =>
  Effect.gen(function* () {
    const url = process.env.DATABASE_URL
    if (url === undefined || url === "") {
      return yield* new OpsUsageError({
        message: "DATABASE_URL must name the running service's database (nothing is migrated here)",
      })
    }
    const database = pgClientLayer({ url: Redacted.make(url), maxConnections: 2, applicationName: "settlement-ops" })
    return yield* Effect.provide(command, database).pipe(
      Effect.catchIf(
        (e): e is SqlError.SqlError =>
          e instanceof SqlError.SqlError && /^PgClient: (Failed to connect|Connection timed out)/.test(e.message),
        (e) =>
          new OpsUsageError({
            message: describeDatabaseConnectFailure(url, e.cause).replace(
              " (unset it to use the embedded PostgreSQL)",
              "",
            ),
          }),
      ),
    )
  })

const iso = (d: Date | null) => (d === null ? "never" : d.toISOString())

const status = Command.make("status", {}, () =>
  inDatabase(
    Effect.gen(function* () {
      const rows = yield* chainStatusRows
      if (rows.length === 0) return yield* Console.log("no chain status rows yet (no watcher has run)")
      for (const r of rows) {
        const state = r.integrityMismatch ? `LATCHED: ${r.integrityError}` : "ok"
        yield* Console.log(
          `${r.venue}: ${state}; last check completed ${iso(r.integrityCompletedAt)}` +
            `${r.integrityRequestedAt === null ? "" : `, a check requested at ${iso(r.integrityRequestedAt)}`}`,
        )
      }
    }),
  ),
).pipe(Command.withDescription("each chain's integrity check: latched or not, its message, when it last ran"))

const venue = Args.text({ name: "venue" }).pipe(Args.withDescription("the venue id, as in the config (e.g. aster)"))

const unknownVenue = (v: string) =>
  new OpsUsageError({ message: `no chain status row for venue ${v} (its watcher never ran, or a typo)` })

const clear = Command.make("clear", { venue }, ({ venue }) =>
  inDatabase(
    Effect.gen(function* () {
      const cleared = yield* clearIntegrityAlarm(venue)
      if (cleared === undefined) return yield* unknownVenue(venue)
      yield* Console.log(
        cleared.wasLatched
          ? `${venue}: cleared the alarm (${cleared.error}); the watcher ingests again and checks at its next poll`
          : `${venue}: no alarm was latched; a check is requested for the watcher's next poll`,
      )
    }),
  ),
).pipe(
  Command.withDescription(
    "after investigating a latched alarm: clears it and asks for a fresh check (which latches again if the index still differs from the chain)",
  ),
)

const check = Command.make("check", { venue }, ({ venue }) =>
  inDatabase(
    Effect.gen(function* () {
      if (!(yield* requestIntegrityCheck(venue))) return yield* unknownVenue(venue)
      yield* Console.log(`${venue}: a check is requested for the watcher's next poll (not while an alarm is latched)`)
    }),
  ),
).pipe(Command.withDescription("asks the venue's watcher for an integrity check at its next poll"))

const integrity = Command.make("integrity").pipe(
  Command.withDescription("the chain index's integrity check: status, clear, check"),
  Command.withSubcommands([status, clear, check]),
)

const ops = Command.make("ops").pipe(
  Command.withDescription("Operator actions on the service's database (DATABASE_URL). `<command> --help` for each."),
  Command.withSubcommands([integrity]),
)

const cli = Command.run(ops, { name: "ops", version: "1.0.0" })

const main = async () => {
  const platform = Layer.mergeAll(NodeFileSystem.layer, NodePath.layer, NodeTerminal.layer)
  const program = cli(process.argv).pipe(Effect.provide(platform))
  const exit = await Effect.runPromiseExit(program)
  if (Exit.isSuccess(exit)) process.exit(0)
  const failure = Cause.failureOption(exit.cause)
  const e = Option.isSome(failure) ? failure.value : Cause.squash(exit.cause)
  // @effect/cli has printed its own validation errors.
  if (ValidationError.isValidationError(e)) process.exit(64)
  if (e instanceof OpsUsageError) {
    console.error(`ops: ${e.message}`)
    process.exit(64)
  }
  // A database error: its message only (never the URL's password, never a stack).
  console.error(`ops: the database failed: ${e instanceof Error ? e.message : String(e)}`)
  process.exit(2)
}

if (import.meta.url === `file://${process.argv[1]}`) void main()
