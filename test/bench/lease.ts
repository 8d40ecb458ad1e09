/**
 * Lease renewals per second over HTTP with `mk_` credentials, swept over the number of quote identities (issue 21
 * items 2 and 3; BENCH_LEASE_SIZES, default 32, 1,000 and 10,000), each with a live credential scoped `quote`. The
 * load stays 32 concurrent closed loops (keep-alive clients) renewing in rotation, each loop over its own slice of the
 * identities (no two loops renew one identity at once), so what grows is the live leases (lease entities with their
 * in-memory timers, rows, credentials, rate-limit buckets), not the concurrency. A few identities are registered
 * through the routes; the rest are seeded in the database (LeaseSeed.ts). Every identity is renewed once by its lease
 * entity before its size is measured, so all N leases are live; leases are 120 s (the longest), so none ends while its
 * size is measured (unless that first pass itself takes longer: it prints its time).
 *
 * Each size, in the same run and with the same client loops:
 * - raw UPDATE: a single-row UPDATE of the lease through the service's pool: the database floor (service/raw >= 0.5);
 * - PUT …/lease on the service: the framework's route, the identity's lease entity (actors/QuoteIdentityLease.ts)
 *   running the renewal's one statement (renewLeaseWithCredential: resolve the token, charge it, renew) and re-arming
 *   its expiry timer;
 * - bare node:http (LeaseBare.ts): the same statement behind a bare server on the same pool: what the framework and
 *   the entity add (service/bare >= 0.8);
 * and, per renewal, the CPU ms of the whole process tree (this process runs clients and servers; the embedded
 * PostgreSQL is its child) and the statements PostgreSQL ran (Cost.ts: needs BENCH_STATEMENT_STATS=true, which
 * npm run bench sets). The credentials' request budget is set out of reach: each loop renews as fast as it can, far
 * above a real bot's rate, and would otherwise measure 429s. The service is one process (the entity is local).
 *
 * Each path first runs WARMUP_SECONDS unmeasured (Summary.ts: the JIT settles on a path in about that long).
 *
 *   BENCH_STATEMENT_STATS=true npx tsx test/bench/lease.ts  (BENCH_LEASE_SIZES, BENCH_SECONDS per phase, BENCH_WARMUP_SECONDS)
 */
import { loadavg } from "node:os"
import { SqlClient } from "@effect/sql"
import { Effect, Layer } from "effect"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { ClusterLive } from "../../src/Cluster.ts"
import { DevelopmentConfig } from "../../src/DevelopmentConfig.ts"
import { TracingLive } from "../../src/Observability/Tracing.ts"
import { QuoteIdentityLease } from "../../src/QuoteIdentities/Lease.ts"
import { sha256 } from "../../src/SecureRandom.ts"
import { TestDatabaseLive } from "../support/Database.ts"
import { issueCredential, registerIdentity } from "../support/QuoteIdentities.ts"
import { signIn } from "../support/SignIn.ts"
import { startSiweAnvil } from "../support/SiweAnvil.ts"
import { testAppConfig } from "../support/TestConfig.ts"
import { baseUrl, TestHttpOnClusterLive } from "../support/TestServer.ts"
import { costMeter, type PerUnit, printSweep, sweepSizes } from "./Cost.ts"
import { bareLeaseServer, leaseClient } from "./LeaseBare.ts"
import { type LeaseIdentity, seedIdentities } from "./LeaseSeed.ts"
import { benchLogging } from "./Logging.ts"
import { summarize, WARMUP_SECONDS, whole } from "./Summary.ts"

const SIZES = sweepSizes("BENCH_LEASE_SIZES", "32,1000,10000")
const SECONDS = Number(process.env.BENCH_SECONDS ?? 5)
const CONCURRENCY = 32
/** Registered through the routes (prepare, sign, create, issue): the path the seeded rows stand in for. */
const REGISTERED_OVER_HTTP = 4
const TTL_SECONDS = 120
/** First renewals of new identities slower than this (per second, after 30 s) fail the bench instead of dragging. */
const FIRST_PASS_MIN_RATE = 50
const BUDGET = { rate: 1_000_000, burst: 1_000_000 }

const percentile = (sorted: Array<number>, p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0

/** Loop `i` of `c` takes identities i, i + c, i + 2c, … below `n`: its own slice. */
const slice = (i: number, c: number, from: number, n: number) =>
  Array.from({ length: Math.ceil((n - from - i) / c) }, (_, k) => from + i + k * c)

interface Phase extends PerUnit {
  readonly rps: number
  /** ms */
  readonly p50: number
  /** ms */
  readonly p99: number
  /** 503 answers (not in the rate or the percentiles). */
  readonly unavailable: number
}

const program = Effect.gen(function* () {
  const base = yield* baseUrl
  const sql = yield* SqlClient.SqlClient
  const cost = yield* costMeter

  /** `one` in min(32, n) closed loops for `seconds`, each in rotation over its slice of the first `n` identities. */
  const measure = (n: number, seconds: number, one: (j: number) => Effect.Effect<unknown, unknown>) =>
    Effect.gen(function* () {
      const latencies: Array<number> = []
      let unavailable = 0
      const c = Math.min(CONCURRENCY, n)
      const before = yield* cost.snapshot
      const started = performance.now()
      const deadline = started + seconds * 1000
      yield* Effect.all(
        Array.from({ length: c }, (_, i) =>
          Effect.gen(function* () {
            const mine = slice(i, c, 0, n)
            for (let k = 0; performance.now() < deadline; k++) {
              const t = performance.now()
              // 503: the service's renewal missed its 2 s bound (an overloaded machine); counted, not timed.
              if ((yield* one(mine[k % mine.length]!)) === 503) unavailable++
              else latencies.push(performance.now() - t)
            }
          }),
        ),
        { concurrency: "unbounded" },
      )
      const elapsed = (performance.now() - started) / 1000
      const per = yield* cost.perUnit(before, latencies.length)
      latencies.sort((a, b) => a - b)
      return {
        rps: latencies.length / elapsed,
        p50: percentile(latencies, 50),
        p99: percentile(latencies, 99),
        unavailable,
        ...per,
      } satisfies Phase
    }).pipe(Effect.timeoutFail({ duration: `${seconds + 30} seconds`, onTimeout: () => new Error("phase overran") }))

  const maker = privateKeyToAccount(generatePrivateKey())
  const session = yield* signIn(base, maker)
  const ids: Array<LeaseIdentity> = []
  for (let i = 0; i < REGISTERED_OVER_HTTP; i++) {
    const identity = yield* registerIdentity(base, session, privateKeyToAccount(generatePrivateKey()))
    const credential = yield* issueCredential(base, session, identity.id, ["quote"])
    ids.push({ id: identity.id, token: credential.token })
  }
  const service = yield* leaseClient(base, TTL_SECONDS)
  const bare = yield* leaseClient(yield* bareLeaseServer(BUDGET), TTL_SECONDS)
  const renew = (j: number) => service(ids[j]!.id, ids[j]!.token)
  const bareRenew = (j: number) => bare(ids[j]!.id, ids[j]!.token)
  // The first renewal of a seeded identity, sent to its lease entity as the route does but without HTTP (a few times the route's rate).
  const lease = yield* QuoteIdentityLease.client
  const start = (j: number) =>
    lease(ids[j]!.id)
      .Renew({
        ttlSeconds: TTL_SECONDS,
        master: null,
        credential: { tokenHash: sha256(ids[j]!.token).toString("hex"), bucket: BUDGET },
      })
      .pipe(Effect.flatMap((r) => (r._tag === "Renewed" ? Effect.void : Effect.dieMessage(`first renewal: ${r._tag}`))))
  const raw = (j: number) =>
    sql`update quote_identities set lease_expires_at = now() + make_interval(secs => ${TTL_SECONDS})
        where id = ${ids[j]!.id}`

  const rows: Array<Record<string, string | number>> = []
  let live = 0
  for (const n of SIZES) {
    if (n > ids.length) ids.push(...(yield* seedIdentities(maker.address.toLowerCase(), n - ids.length)))
    // The first renewal of each new identity: its entity starts, its timer is armed, its backstop written.
    const first = performance.now()
    yield* Effect.all(
      Array.from({ length: CONCURRENCY }, (_, i) => Effect.forEach(slice(i, CONCURRENCY, live, n), start)),
      { concurrency: "unbounded" },
    ).pipe(
      Effect.timeoutFail({
        duration: `${30 + (n - live) / FIRST_PASS_MIN_RATE} seconds`,
        onTimeout: () => new Error("first renewals overran"),
      }),
    )
    console.log(`${n - live} new leases live in ${((performance.now() - first) / 1000).toFixed(1)} s`)
    live = Math.max(live, n)
    if (rows.length === 0) {
      // JIT and connections warm for all three before the first measured phase (WARMUP_SECONDS each).
      yield* measure(n, WARMUP_SECONDS, raw)
      yield* measure(n, WARMUP_SECONDS, renew)
      yield* measure(n, WARMUP_SECONDS, bareRenew)
    }
    const baseline = yield* measure(n, SECONDS, raw)
    const ours = yield* measure(n, SECONDS, renew)
    const bareHttp = yield* measure(n, SECONDS, bareRenew)
    const line = (name: string, p: Phase) =>
      console.log(
        `${name.padEnd(26)} ${p.rps.toFixed(0).padStart(6)} /s  p50 ${p.p50.toFixed(2)} ms  p99 ${p.p99.toFixed(2)} ms  ` +
          `CPU ${p.cpuMs.toFixed(3)} ms/call  ${p.statements === null ? "n/a" : p.statements.toFixed(2)} statements/call` +
          (p.unavailable > 0 ? `  ${p.unavailable} × 503` : ""),
      )
    console.log(`lease renewal, ${n} identities, ${Math.min(CONCURRENCY, n)} loops, ${SECONDS} s each`)
    line("raw UPDATE (baseline)", baseline)
    line("PUT …/lease with mk_", ours)
    line("bare node:http, same SQL", bareHttp)
    const vsRaw = ours.rps / baseline.rps
    const vsBare = ours.rps / bareHttp.rps
    console.log(
      `service/raw UPDATE ${vsRaw.toFixed(2)} (target >= 0.5), service/bare-http ${vsBare.toFixed(2)} (>= 0.8)`,
    )
    rows.push({
      size: n,
      "renewals/s": Math.round(ours.rps),
      "p50 ms": ours.p50,
      "p99 ms": ours.p99,
      "raw UPDATE/s": Math.round(baseline.rps),
      ratio: vsRaw,
      "bare-http/s": Math.round(bareHttp.rps),
      "bare ratio": vsBare,
      "CPU ms/renewal": ours.cpuMs,
      "bare CPU ms/renewal": bareHttp.cpuMs,
      "statements/renewal": ours.statements === null ? "n/a" : ours.statements,
      "503s": ours.unavailable + bareHttp.unavailable,
    })
    const figure = `${whole(ours.rps)} /s (p99 ${ours.p99.toFixed(0)} ms)`
    summarize({
      bench: `lease, ${n} identities: PUT …/lease with mk_ vs raw UPDATE`,
      figure,
      baseline: `${whole(baseline.rps)} /s raw UPDATE`,
      ratio: vsRaw,
      target: ">= 0.5",
      atLeast: 0.5,
    })
    summarize({
      bench: `lease, ${n} identities: PUT …/lease with mk_ vs bare node:http`,
      figure,
      baseline: `${whole(bareHttp.rps)} /s bare node:http`,
      ratio: vsBare,
      target: ">= 0.8",
      atLeast: 0.8,
    })
  }
  printSweep(`lease renewals by live identities (${CONCURRENCY} loops, ${SECONDS} s per phase)`, rows)
  console.log(
    `load average ${loadavg()
      .map((l) => l.toFixed(2))
      .join(" ")}`,
  )
})

/**
 * The HTTP stack of testStackWithChain on the service's own cluster runner (src/Cluster.ts: messages and runners in
 * PostgreSQL) instead of the tests' in-memory TestRunner, whose message storage rescans every message it holds for
 * each read: with one persisted backstop per live lease, starting 10,000 leases there is quadratic.
 */
const stack = Layer.unwrapScoped(
  Effect.map(
    Effect.acquireRelease(
      Effect.promise(() => startSiweAnvil(999)),
      (anvil) => Effect.promise(() => anvil.stop()),
    ),
    (anvil) =>
      TestHttpOnClusterLive.pipe(
        Layer.provideMerge(ClusterLive),
        Layer.provideMerge(TestDatabaseLive),
        Layer.provideMerge(
          testAppConfig({
            venues: DevelopmentConfig.venues.map((v) => ({ ...v, rpc_urls: [anvil.url] })),
            auth: { rpc_urls: [anvil.url] },
            limits: { requests_per_second: BUDGET.rate, request_burst: BUDGET.burst },
          }),
        ),
      ),
  ),
)

// Logging and TracingLive as main.ts provides them, outermost so every fiber the stack forks inherits them: the JSON
// log with an access line per request (to a file here); without an OTLP endpoint in the environment, Effect's tracer
// is off.
const observing = Layer.merge(benchLogging("lease").layer, TracingLive)
Effect.runPromise(program.pipe(Effect.provide(stack), Effect.scoped, Effect.provide(observing))).then(
  () => process.exit(0),
  (e) => {
    console.error(e)
    process.exit(1)
  },
)
