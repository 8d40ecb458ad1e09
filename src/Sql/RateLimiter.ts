import { SqlClient, type Statement } from "@effect/sql"
import { Effect } from "effect"

export type RateDecision = { readonly allowed: true } | { readonly allowed: false; readonly retryAfterSeconds: number }

export interface Bucket {
  readonly key: string
  /** Tokens added per second. */
  readonly rate: number
  readonly burst: number
}

/**
 * The statement that takes one token from the bucket of each `key` row of `keys` (a query yielding a
 * text column `key`), returning `key` for each bucket that had one. The row lock of `on conflict do
 * update` serialises concurrent takers, so a burst of N admits exactly N however many arrive at once,
 * on any number of processes. Time is the database's, shared by all processes. Usable as a CTE, so
 * a caller can authenticate and charge in one round trip (see chargeLiveCredential).
 */
export const takeTokenStatement = (
  sql: SqlClient.SqlClient,
  keys: Statement.Fragment,
  bucket: { readonly rate: number; readonly burst: number },
) => sql`
  insert into rate_buckets as b (key, tokens, updated_at)
  select k.key, ${bucket.burst - 1}, clock_timestamp() from (${keys}) k
  on conflict (key) do update set
    tokens = least(${bucket.burst}::float8,
      b.tokens + extract(epoch from clock_timestamp() - b.updated_at) * ${bucket.rate}::float8) - 1,
    updated_at = clock_timestamp()
  where least(${bucket.burst}::float8,
    b.tokens + extract(epoch from clock_timestamp() - b.updated_at) * ${bucket.rate}::float8) >= 1
  returning b.key`

/** Seconds until the (empty) bucket `key` holds a whole token again. */
export const retryAfterSeconds = (bucket: Bucket) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    Effect.map(
      sql<{ tokens: number }>`
        select least(${bucket.burst}::float8,
          tokens + extract(epoch from clock_timestamp() - updated_at) * ${bucket.rate}::float8) as tokens
        from rate_buckets where key = ${bucket.key}`,
      ([row]) => Math.max(1, Math.ceil((1 - (row?.tokens ?? 0)) / bucket.rate)),
    ),
  )

/** Takes one token from a bucket, in one statement (see takeTokenStatement). */
export const takeToken = (bucket: Bucket) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    Effect.gen(function* () {
      const taken = yield* takeTokenStatement(sql, sql`select ${bucket.key}::text as key`, bucket)
      if (taken.length > 0) return { allowed: true } as RateDecision
      return { allowed: false, retryAfterSeconds: yield* retryAfterSeconds(bucket) } as RateDecision
    }),
  )

/** Takes from every bucket in order; the first refusal wins (earlier buckets keep their token). */
export const takeTokens = (buckets: ReadonlyArray<Bucket>) =>
  Effect.reduce(buckets, { allowed: true } as RateDecision, (decision, bucket) =>
    decision.allowed ? takeToken(bucket) : Effect.succeed(decision),
  )
