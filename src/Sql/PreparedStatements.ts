import { bindArrays } from "./ArrayParams.ts"

/**
 * Named prepared statements for the service's pool.
 *
 * node-postgres sends every parameterised statement unnamed, so PostgreSQL parses, analyses and plans it on every
 * call. For the service's larger statements planning costs more than running: the credential lease renewal's five
 * CTEs planned in 0.5-0.6 ms and ran in ~0.3 ms (EXPLAIN ANALYZE). A named statement is parsed once per connection,
 * and PostgreSQL's plan cache then uses custom plans for its first five executions and the generic plan from then
 * on where that is estimated no costlier (plan_cache_mode auto), as JDBC, pgx and asyncpg do by default.
 *
 * - Only parameterised statements are named. They already use the extended protocol, so a name changes nothing
 *   else; statements without parameters (migrations, scripts of several statements) keep the simple protocol.
 * - A text is named on its second use, one name per text for the whole process (`s<n>`), so one-off texts (a list
 *   of a new length) never take a name; at most MAX_NAMED texts are named, as every connection's backend keeps each
 *   statement it parsed until the connection closes. The rest run unnamed, as before.
 * - A prepared statement whose result type a migration changed fails with "cached plan must not change result
 *   type" on a connection that prepared it before: that one call fails (a defect, as any SqlError), and the text is
 *   never named again in this process, so the next call re-plans it unnamed.
 * - A generic plan is made from the statistics of its moment. A table first read while nearly empty and never
 *   analysed keeps a plan that can cost rows × keys once it has grown, until an ANALYZE invalidates it: loops that
 *   fill tables in bulk analyse them as they grow (BulkStatistics.ts).
 * - Not for a proxy that pools transactions (PgBouncer in transaction mode before 1.21): a statement parsed on one
 *   server connection would be executed on another. DATABASE_URL must reach PostgreSQL or a session-pooling proxy.
 */

/** Distinct statement texts named at most (each connection prepares those it runs). */
export const MAX_NAMED = 512
/** Texts seen once are counted in a map this large at most; it is cleared when full (its texts start over). */
const MAX_COUNTED = 10_000

type Callback = (err: Error | null, result: unknown) => void

interface QueryableClient {
  query(config: unknown, values?: unknown, callback?: unknown): unknown
}

/** Which texts carry a name: named on their second use, until MAX_NAMED; never after a result-type error. */
export const makeStatementNames = (maxNamed = MAX_NAMED) => {
  const named = new Map<string, string>()
  const seen = new Set<string>()
  const refused = new Set<string>()
  /** Names are never reused: pg refuses a name parsed on a connection under another text. */
  let next = 0
  return {
    /** The name to prepare `text` under, or undefined to run it unnamed. */
    nameOf: (text: string): string | undefined => {
      const name = named.get(text)
      if (name !== undefined) return name
      if (refused.has(text) || named.size >= maxNamed) return undefined
      if (!seen.has(text)) {
        if (seen.size >= MAX_COUNTED) seen.clear()
        seen.add(text)
        return undefined
      }
      seen.delete(text)
      const fresh = `s${next++}`
      named.set(text, fresh)
      return fresh
    },
    /** After "cached plan must not change result type": run `text` unnamed from now on. */
    refuse: (text: string) => {
      named.delete(text)
      refused.add(text)
    },
  }
}

const RESULT_TYPE_CHANGED = "cached plan must not change result type"

/**
 * pg's Client class with `query(text, values, callback)` sent as a named statement when `names` says so (the form
 * @effect/sql-pg uses), its flat array parameters written as literals (ArrayParams.ts), and callback-form queries
 * handed to pg one at a time per connection.
 *
 * One at a time: a connection reserved by a caller can be sent several statements at once, which pg queues with a
 * deprecation ("Calling client.query() when the client is already executing a query", an error from pg 9 on).
 * @effect/cluster does so on its shard lock connection, releasing each shard in its own fiber
 * (`SELECT pg_advisory_unlock(n)` for every shard when a runner gives its shards up). This keeps those statements
 * in a queue of its own, in call order (the order pg's queue had), and hands the next one to pg when the previous
 * one called back; a pooled connection runs one statement at a time anyway, so for it this changes nothing.
 * Every other form of `query` (promise, submittable: the LISTEN connection's, src/Sql/Notifications.ts) is passed
 * on unchanged.
 */
// biome-ignore lint/suspicious/noExplicitAny: a mixin's base constructor must take any[] (TS2545)
export const preparingClient = <C extends new (...args: Array<any>) => QueryableClient>(
  Base: C,
  names: ReturnType<typeof makeStatementNames>,
) =>
  class PreparingClient extends Base {
    /** Callback-form queries not yet handed to pg, oldest first. */
    readonly #waiting: Array<() => void> = []
    /** Whether pg holds a callback-form query of ours that has not called back yet. */
    #running = false

    override query(config: unknown, values?: unknown, callback?: unknown): unknown {
      const done =
        typeof callback === "function"
          ? (callback as Callback)
          : typeof values === "function"
            ? (values as Callback)
            : undefined
      if (done === undefined) return super.query(config, values, callback)
      const args = done === values ? undefined : values
      const next: Callback = (err, result) => {
        const following = this.#waiting.shift()
        if (following === undefined) this.#running = false
        else following()
        done(err, result)
      }
      const send = () => {
        this.#running = true
        try {
          this.#send(config, args, next)
        } catch (e) {
          // pg refused the call itself (e.g. no query): its caller hears it, and the queue moves on.
          next(e instanceof Error ? e : new Error(String(e)), undefined)
        }
      }
      if (this.#running) this.#waiting.push(send)
      else send()
      return undefined
    }

    #send(config: unknown, values: unknown, callback: Callback): void {
      if (typeof config !== "string" || !Array.isArray(values) || values.length === 0) {
        if (values === undefined) super.query(config, callback)
        else super.query(config, values, callback)
        return
      }
      // Flat arrays as literals written here (ArrayParams.ts): pg's writer quotes and escapes every element.
      const bound = bindArrays(values)
      const name = names.nameOf(config)
      if (name === undefined) {
        super.query(config, bound, callback)
        return
      }
      super.query({ name, text: config, values: bound }, (err: Error | null, result: unknown) => {
        if (err?.message.includes(RESULT_TYPE_CHANGED)) names.refuse(config)
        callback(err, result)
      })
    }
  }
