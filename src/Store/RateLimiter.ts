import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

export type RateDecision = { readonly allowed: true } | { readonly allowed: false; readonly retryAfterSeconds: number }

export interface Bucket {
  readonly key: string
  /** Tokens added per second. */
  readonly rate: number
  readonly burst: number
}

/**
 * Takes one token from a bucket, in one statement: the row lock of `on conflict do update`
 * serialises concurrent takers, so a burst of N admits exactly N however many arrive at once, on
 * any number of processes. Time is the database's, shared by all processes.
 */
export const takeToken = (bucket: Bucket) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    Effect.gen(function* () {
      const taken = yield* sql<{ tokens: number }>`
        insert into rate_buckets as b (key, tokens, updated_at)
        values (${bucket.key}, ${bucket.burst - 1}, clock_timestamp())
        on conflict (key) do update set
          tokens = least(${bucket.burst}::float8,
            b.tokens + extract(epoch from clock_timestamp() - b.updated_at) * ${bucket.rate}::float8) - 1,
          updated_at = clock_timestamp()
        where least(${bucket.burst}::float8,
          b.tokens + extract(epoch from clock_timestamp() - b.updated_at) * ${bucket.rate}::float8) >= 1
        returning tokens`
      if (taken.length > 0) return { allowed: true } as RateDecision
      const [row] = yield* sql<{ tokens: number }>`
        select least(${bucket.burst}::float8,
          tokens + extract(epoch from clock_timestamp() - updated_at) * ${bucket.rate}::float8) as tokens
        from rate_buckets where key = ${bucket.key}`
      const missing = 1 - (row?.tokens ?? 0)
      return { allowed: false, retryAfterSeconds: Math.max(1, Math.ceil(missing / bucket.rate)) } as RateDecision
    }),
  )

/** Takes from every bucket in order; the first refusal wins (earlier buckets keep their token). */
export const takeTokens = (buckets: ReadonlyArray<Bucket>) =>
  Effect.reduce(buckets, { allowed: true } as RateDecision, (decision, bucket) =>
    decision.allowed ? takeToken(bucket) : Effect.succeed(decision),
  )
