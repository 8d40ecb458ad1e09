/**
 * Lease renewals per second over HTTP with mk_ credentials (many identities, concurrent), against a
 * raw single-row UPDATE of the same table through the same Postgres driver, in the same run. Prints
 * both, the ratio (target >= 0.5), the renewal p99, the CPU time of this process per call (client
 * and server share it) and the machine's load average (wall-clock numbers depend on other work).
 *
 * Where a renewal's time goes: the route authenticates and charges the `mk_` bearer in one statement
 * (chargeLiveCredential, in the Authentication middleware), then calls the identity's lease entity
 * (actors/QuoteIdentityLease.ts, a volatile message, bounded at 2 s), which runs the renewal's one statement
 * (renewLease) and arms its in-memory expiry timer; the framework's pipeline (routing, middleware, schema
 * decoding/encoding, fibers) around it. The third phase runs those two statements through the driver without
 * HTTP or the cluster (the database's share). The credentials' request budget is set out of reach: each of the
 * 32 loops renews as fast as it can, far above a real bot's rate, and would otherwise measure 429s. Here the
 * service is one process (the entity is local); with several runners a renewal may cross to the identity's runner.
 *
 *   npx tsx test/bench/lease.ts     (BENCH_IDENTITIES, BENCH_SECONDS)
 */
import { loadavg } from "node:os"
import { SqlClient } from "@effect/sql"
import { Effect, Option } from "effect"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { chargeLiveCredential } from "../../src/Credentials/Repo.ts"
import { renewLease } from "../../src/QuoteIdentities/Repo.ts"
import { sha256 } from "../../src/SecureRandom.ts"
import { rawRequest } from "../support/Http.ts"
import { issueCredential, registerIdentity } from "../support/QuoteIdentities.ts"
import { signIn } from "../support/SignIn.ts"
import { baseUrl } from "../support/TestServer.ts"
import { testStackWithChain } from "../support/TestStack.ts"
import { summarize, whole } from "./Summary.ts"

const IDENTITIES = Number(process.env.BENCH_IDENTITIES ?? 32)
const SECONDS = Number(process.env.BENCH_SECONDS ?? 5)

const percentile = (sorted: Array<number>, p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0

/** Runs `one` in `concurrency` closed loops for `seconds`; returns per-call latencies (ms). */
const loop = (concurrency: number, seconds: number, one: (i: number) => Effect.Effect<unknown, unknown>) =>
  Effect.gen(function* () {
    const latencies: Array<number> = []
    const cpu0 = process.cpuUsage()
    const deadline = performance.now() + seconds * 1000
    yield* Effect.all(
      Array.from({ length: concurrency }, (_, i) =>
        Effect.gen(function* () {
          while (performance.now() < deadline) {
            const t = performance.now()
            yield* one(i)
            latencies.push(performance.now() - t)
          }
        }),
      ),
      { concurrency: "unbounded" },
    )
    const cpu = process.cpuUsage(cpu0)
    latencies.sort((a, b) => a - b)
    return {
      rps: latencies.length / seconds,
      p50: percentile(latencies, 50),
      p99: percentile(latencies, 99),
      cpuMsPerCall: (cpu.user + cpu.system) / 1000 / Math.max(1, latencies.length),
    }
  })

const program = Effect.gen(function* () {
  const base = yield* baseUrl
  const sql = yield* SqlClient.SqlClient
  const maker = yield* signIn(base, privateKeyToAccount(generatePrivateKey()))
  const creds: Array<{ id: string; token: string }> = []
  for (let i = 0; i < IDENTITIES; i++) {
    const identity = yield* registerIdentity(base, maker, privateKeyToAccount(generatePrivateKey()))
    const credential = yield* issueCredential(base, maker, identity.id, ["quote"])
    creds.push({ id: identity.id, token: credential.token })
  }
  const body = JSON.stringify({ ttl_seconds: 60 })
  const renew = (i: number) =>
    rawRequest(`${base}/v1/quote-identities/${creds[i]!.id}/lease`, {
      method: "PUT",
      headers: { authorization: `Bearer ${creds[i]!.token}`, "content-type": "application/json" },
      body,
    }).pipe(Effect.flatMap((r) => (r.status === 200 ? Effect.void : Effect.dieMessage(`renew ${r.status} ${r.text}`))))
  // The route's two statements through the same driver, without HTTP or the cluster: splits database time from the rest.
  const statement = (i: number) =>
    chargeLiveCredential(sha256(creds[i]!.token), { rate: 1_000_000, burst: 1_000_000 }).pipe(
      Effect.flatMap((c) =>
        Option.isSome(c) && c.value.allowed
          ? renewLease(creds[i]!.id, 60)
          : Effect.dieMessage("statement: not charged"),
      ),
      Effect.flatMap((o) => (o._tag === "Renewed" ? Effect.void : Effect.dieMessage(`statement: ${o._tag}`))),
      Effect.provideService(SqlClient.SqlClient, sql),
    )
  const raw = (i: number) =>
    sql`update quote_identities set lease_expires_at = now() + interval '60 seconds' where id = ${creds[i]!.id}`
  yield* loop(IDENTITIES, 1, renew)
  yield* loop(IDENTITIES, 1, raw)
  const baseline = yield* loop(IDENTITIES, SECONDS, raw)
  const service = yield* loop(IDENTITIES, SECONDS, renew)
  const direct = yield* loop(IDENTITIES, SECONDS, statement)
  console.log(`lease renewal, ${IDENTITIES} identities concurrently, ${SECONDS} s each`)
  console.log(
    `raw UPDATE (baseline)      ${baseline.rps.toFixed(0).padStart(6)} /s  p50 ${baseline.p50.toFixed(2)} ms  p99 ${baseline.p99.toFixed(2)} ms  CPU ${baseline.cpuMsPerCall.toFixed(3)} ms/call`,
  )
  console.log(
    `PUT …/lease with mk_       ${service.rps.toFixed(0).padStart(6)} /s  p50 ${service.p50.toFixed(2)} ms  p99 ${service.p99.toFixed(2)} ms  CPU ${service.cpuMsPerCall.toFixed(3)} ms/call`,
  )
  console.log(
    `two statements, no HTTP    ${direct.rps.toFixed(0).padStart(6)} /s  p50 ${direct.p50.toFixed(2)} ms  p99 ${direct.p99.toFixed(2)} ms  CPU ${direct.cpuMsPerCall.toFixed(3)} ms/call`,
  )
  console.log(
    `throughput ratio service/baseline: ${(service.rps / baseline.rps).toFixed(2)} (target >= 0.5); renewal p99 ${service.p99.toFixed(2)} ms`,
  )
  summarize({
    bench: "lease: PUT …/lease renewals with mk_",
    figure: `${whole(service.rps)} /s (p99 ${service.p99.toFixed(0)} ms)`,
    baseline: `${whole(baseline.rps)} /s raw UPDATE`,
    ratio: service.rps / baseline.rps,
    target: ">= 0.5",
    atLeast: 0.5,
  })
  console.log(
    `load average ${loadavg()
      .map((l) => l.toFixed(2))
      .join(" ")}`,
  )
})

const unlimited = { limits: { requests_per_second: 1_000_000, request_burst: 1_000_000 } }

Effect.runPromise(program.pipe(Effect.provide(testStackWithChain(unlimited)), Effect.scoped)).then(
  () => process.exit(0),
  (e) => {
    console.error(e)
    process.exit(1)
  },
)
