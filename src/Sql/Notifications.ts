import { createRequire } from "node:module"
import * as Reactivity from "@effect/experimental/Reactivity"
import { SqlClient, SqlError } from "@effect/sql"
import { PgClient } from "@effect/sql-pg"
import { Context, Duration, Effect, Layer, RcRef, Redacted, Stream } from "effect"
import { makeStatementNames, preparingClient } from "./PreparedStatements.ts"

/**
 * LISTEN/NOTIFY for the whole process over one dedicated connection, one statement at a time.
 *
 * `@effect/sql-pg`'s own `listen` shares one connection too, but sends each subscriber's `LISTEN` the moment it
 * subscribes: the actors and the stream subscribe together at start-up, so several queries were queued on one
 * busy client, which pg deprecates ("Calling client.query() when the client is already executing a query", an
 * error in pg 9). It also sends `UNLISTEN` when any one subscriber of a channel leaves, silencing the others
 * listening to the same channel on that connection. Here statements go through a one-permit semaphore, a
 * channel is listened to once whatever the number of subscribers, and unlistened when the last one leaves.
 * Payloads are delivered as before: every non-empty payload of the channel to every subscriber.
 */

/** The part of pg's Client used here (pg, the driver under @effect/sql-pg, is a dependency at its version; it has no types). */
interface PgNotification {
  readonly channel: string
  readonly payload?: string | undefined
}
interface PgListenClient {
  connect(): Promise<void>
  query(text: string): Promise<unknown>
  end(): Promise<void>
  on(event: "notification", listener: (message: PgNotification) => void): unknown
  on(event: "error", listener: (error: Error) => void): unknown
}
interface PgPool {
  query(text: string): Promise<unknown>
  end(): Promise<void>
  on(event: "error", listener: (error: Error) => void): unknown
}
interface PgModule {
  readonly Client: new (config: Record<string, unknown>) => PgListenClient
  readonly Pool: new (config: Record<string, unknown>) => PgPool
  readonly escapeIdentifier: (identifier: string) => string
}
const pg = createRequire(import.meta.url)("pg") as PgModule

/** The dedicated connection's settings, from the pool's configuration. */
const connectionOptions = (config: PgClient.PgClientConfig): Record<string, unknown> => {
  const options: Record<string, unknown> = { application_name: config.applicationName ?? "settlement" }
  if (config.url !== undefined) options.connectionString = Redacted.value(config.url)
  if (config.host !== undefined) options.host = config.host
  if (config.port !== undefined) options.port = config.port
  if (config.database !== undefined) options.database = config.database
  if (config.username !== undefined) options.user = config.username
  if (config.password !== undefined) options.password = Redacted.value(config.password)
  if (config.ssl !== undefined) options.ssl = config.ssl
  return options
}

/** A `listen(channel)` whose subscriptions share one connection and whose statements never overlap. */
export const makeSharedListen = (config: PgClient.PgClientConfig) =>
  Effect.gen(function* () {
    const subscribers = new Map<string, Set<(payload: string) => void>>()
    const dispatch = (message: PgNotification) => {
      if (!message.payload) return
      for (const deliver of subscribers.get(message.channel) ?? []) deliver(message.payload)
    }
    const connection = yield* RcRef.make({
      acquire: Effect.acquireRelease(
        Effect.tryPromise({
          try: async () => {
            const client = new pg.Client(connectionOptions(config))
            // As the library's listen connection: a broken connection ends nothing here (callers poll too).
            client.on("error", () => {})
            await client.connect()
            client.on("notification", dispatch)
            return client
          },
          catch: (cause) => new SqlError.SqlError({ cause, message: "Failed to acquire connection for listen" }),
        }),
        (client) => Effect.promise(() => client.end()).pipe(Effect.interruptible, Effect.timeoutOption(1000)),
      ),
    })
    const oneAtATime = yield* Effect.makeSemaphore(1)
    const statement = (client: PgListenClient, text: string) =>
      Effect.tryPromise({
        try: () => client.query(text),
        catch: (cause) => new SqlError.SqlError({ cause, message: `Failed to ${text.split(" ")[0]!.toLowerCase()}` }),
      })

    return (channel: string): Stream.Stream<string, SqlError.SqlError> =>
      Stream.asyncPush<string, SqlError.SqlError>((emit) =>
        Effect.gen(function* () {
          const client = yield* RcRef.get(connection)
          const deliver = (payload: string) => {
            emit.single(payload)
          }
          yield* Effect.addFinalizer(() =>
            oneAtATime.withPermits(1)(
              Effect.suspend(() => {
                const set = subscribers.get(channel)
                if (set === undefined || !set.delete(deliver) || set.size > 0) return Effect.void
                subscribers.delete(channel)
                return statement(client, `UNLISTEN ${pg.escapeIdentifier(channel)}`).pipe(Effect.ignore)
              }),
            ),
          )
          yield* oneAtATime.withPermits(1)(
            Effect.suspend(() => {
              const set = subscribers.get(channel)
              if (set !== undefined) {
                set.add(deliver)
                return Effect.void
              }
              subscribers.set(channel, new Set([deliver]))
              return statement(client, `LISTEN ${pg.escapeIdentifier(channel)}`)
            }),
          )
        }),
      )
  })

/** How long the pool's first connection may take (PgClient.make's default). */
const CONNECT_TIMEOUT = Duration.seconds(5)

/**
 * The pool PgClient.make would build from `config` (its connection settings, `maxConnections`, `idleTimeout`, a
 * first `select 1` within CONNECT_TIMEOUT), whose connections send parameterised statements as named prepared
 * statements (PreparedStatements.ts).
 */
const preparedPool = (config: PgClient.PgClientConfig) => {
  const Client = preparingClient(pg.Client as never, makeStatementNames()) as unknown
  return Effect.acquireRelease(
    Effect.tryPromise({
      try: async () => {
        const pool = new pg.Pool({
          ...connectionOptions(config),
          max: config.maxConnections,
          // pg-pool's default (undefined) closes a connection idle for 10 s.
          idleTimeoutMillis: config.idleTimeout === undefined ? undefined : Duration.toMillis(config.idleTimeout),
          Client,
        })
        // As PgClient.make: an idle connection's error is the pool's to drop; a query's error fails that query.
        pool.on("error", () => {})
        try {
          await pool.query("select 1")
        } catch (cause) {
          await pool.end().catch(() => {})
          throw cause
        }
        return pool
      },
      catch: (cause) => new SqlError.SqlError({ cause, message: "PgClient: Failed to connect" }),
    }).pipe(
      Effect.timeoutFail({
        duration: CONNECT_TIMEOUT,
        onTimeout: () =>
          new SqlError.SqlError({
            cause: new Error("Connection timed out"),
            message: "PgClient: Connection timed out",
          }),
      }),
    ),
    (pool) => Effect.promise(() => pool.end()).pipe(Effect.interruptible, Effect.timeoutOption(1000)),
  )
}

/**
 * The pool (preparedPool) as SqlClient and PgClient, whose `listen` is the shared one above. The client is made
 * here, so its `listen` is replaced before anything can use it.
 */
export const pgClientLayer = (
  config: PgClient.PgClientConfig,
): Layer.Layer<PgClient.PgClient | SqlClient.SqlClient, SqlError.SqlError> =>
  Layer.scopedContext(
    Effect.gen(function* () {
      const client = yield* PgClient.fromPool({
        acquire: preparedPool(config) as never,
        applicationName: config.applicationName,
      })
      Object.assign(client, { listen: yield* makeSharedListen(config) })
      return Context.make(PgClient.PgClient, client).pipe(Context.add(SqlClient.SqlClient, client))
    }),
  ).pipe(Layer.provide(Reactivity.layer))
