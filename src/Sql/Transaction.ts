import { SqlClient } from "@effect/sql"
import { Effect, Option } from "effect"

/**
 * Runs `effect` in the transaction its caller holds, else in one of its own. Nested, `withTransaction` opens a
 * SAVEPOINT (a round trip) so that the inner part can fail alone; for a step whose failure always fails its caller
 * too (the caller catches nothing of it), the savepoint buys nothing. Settlement v2's steps wrap v1's fill steps this
 * way: three savepoints a fill before.
 */
export const joinTransaction = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.flatMap(Effect.serviceOption(SqlClient.TransactionConnection), (held) =>
    Option.isSome(held) ? effect : Effect.flatMap(SqlClient.SqlClient, (sql) => sql.withTransaction(effect)),
  )
