import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * A concept service's hold on its database: yielded once at construction, it runs repository effects on that
 * client, so the service's methods require nothing per call (`const db = yield* bindSql`, then
 * `db(findOrder(id))`).
 */
export const bindSql = Effect.map(
  SqlClient.SqlClient,
  (sql) =>
    <A, E, R>(self: Effect.Effect<A, E, R>): Effect.Effect<A, E, Exclude<R, SqlClient.SqlClient>> =>
      Effect.provideService(self, SqlClient.SqlClient, sql),
)
