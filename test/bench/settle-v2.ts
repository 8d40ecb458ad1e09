/**
 * Settlement v2, every party real (issue 23 bench, issue 21 items 1 and 2): the stack of the e2e tests
 * (test/support/SettleV2Stack.ts): the service as a child process, two anvil chains with both escrows (finalized =
 * 2 blocks behind), the maker client process in v2 mode (it reveals with its own claimPayment as soon as its checks
 * pass) and a scripted taker through src/Client/TakerFlow.ts whose pay key authorises as soon as its own finalized
 * read of the lock passes. Mining, BENCH_MINING: `interval` (default) one block per second, as the devnet; `auto` a
 * block per transaction plus one every 250 ms on both chains (the e2e tests' chains).
 *
 * A size sweep, BENCH_SETTLE_SIZES (default "8,64,256"): for each size n, n takes of one fill each run at once
 * (BENCH_CONCURRENCY caps that; BENCH_TAKES=n sweeps that one size only), after untimed warm-up rounds (WARMUP
 * below), first by the raw path, then the service:
 *
 *   service: a fresh maker order and client (liquidity and a hashlock for every take; test/bench/SettleV2Service.ts)
 *            and n takers signed in beforehand. First, when each take was reserved and signed after the round
 *            started (not in signature → credit; takes into one venue queue on its orders' row locks). Each party's
 *            reaction is printed apart, from the chains' blocks as
 *            this process first saw them (test/bench/SettleV2Watch.ts, 20 ms): service lock = Locked mined −
 *            signatures posted; taker authorisation = PayTake accepted − lock final; payTake = Paid mined − PayTake
 *            accepted; maker reveal = PaymentClaimed mined − payment final; claim = Claimed mined − reveal mined (the
 *            service claims from the reveal it sees above the finalized head, actors/EscrowV2Ingest.ts). First
 *            signature → recipient credit = Claimed mined − signatures posted.
 *   raw:     the same protocol, same safe order, by funded keys with viem, each take its own order and keys
 *            (test/bench/SettleV2Raw.ts); from lock sent to Claimed mined.
 *
 * BENCH_WATCHER (JSON) is merged into both venues' watcher settings, e.g. '{"poll_ms":1000,"head_poll_ms":20}' to poll
 * on each new head instead of every 100 ms (the e2e stack's). On 2 cores that gained nothing that shows (two
 * alternating pairs, 2026-11-29: p50 2.49 / 2.56 / 2.03 / 1.89 s, 645–930 ms CPU per fill, against 1.91 / 1.56 /
 * 1.85 / 1.67 s, 552–680 ms; a run before them had 1.53 and 1.38 s).
 *
 * Per size: fills/s of both (n / time from the first take started to the last Claimed seen) and their ratio,
 * signature → credit p50/p99 of both, and per fill the CPU ms of the whole process tree (this process, the service,
 * the maker client, both anvils, PostgreSQL) and the database statements (pg_stat_statements, loaded when
 * BENCH_STATEMENT_STATS=true) over the timed part (test/bench/Cost.ts). Only prints; no assertion on time.
 */
import { mkdirSync, writeFileSync } from "node:fs"
import { loadavg } from "node:os"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import { Duration, Effect } from "effect"
import { databaseLayer } from "../../src/Sql/Database.ts"
import { stopService } from "../support/ChainProcess.ts"
import { testDatabaseUrl } from "../support/Database.ts"
import { killNow, type MakerProcess, mineForever, startV2Service, v2Stack } from "../support/SettleV2Stack.ts"
import { costMeter, type PerUnit, printSweep } from "./Cost.ts"
import { seedSettledHistory } from "./History.ts"
import { type RawTake, rawOrder, rawSign, runRaw } from "./SettleV2Raw.ts"
import { prepareTakers, serviceTake, startMaker } from "./SettleV2Service.ts"
import { chainWatcher, eventBlocks, pct } from "./SettleV2Watch.ts"
import { summarize } from "./Summary.ts"

const SIZES =
  process.env.BENCH_TAKES !== undefined
    ? [Number(process.env.BENCH_TAKES)]
    : (process.env.BENCH_SETTLE_SIZES ?? "8,64,256").split(",").map(Number)
/**
 * Untimed rounds before the sweep (BENCH_SETTLE_WARMUP, default "8,8": two rounds of 8 takes; "" none), each run as a
 * size and printed, but left out of the table. A fresh service plans its statements per connection (PostgreSQL uses
 * a custom plan for a prepared statement's first five runs on each of the pool's connections, and the take's pass
 * read plans in ~4 ms) and its code runs unoptimised: on 2 cores, three rounds of 8 in a row measured 935, 635 and
 * 508 ms of CPU per fill (PostgreSQL 296, 145 and 105) and a signature → credit p50 of 2.38, 1.85 and 1.56 s. A
 * service runs for days; the sweep measures it warm, as relay.ts does.
 */
const WARMUP = (process.env.BENCH_SETTLE_WARMUP ?? "8,8")
  .split(",")
  .filter((x) => x.trim() !== "")
  .map(Number)
/**
 * A quiet spell before each measured size (BENCH_SETTLE_PAUSE_MS, default 0): a warm service after a pause, as a
 * user meets it between sporadic transfers (the pool's connections, their plans, idle since the last round).
 */
const PAUSE_MS = Number(process.env.BENCH_SETTLE_PAUSE_MS ?? 0)
/**
 * Settled transfers of the past in the service's database before the first round (BENCH_SETTLE_HISTORY, default 0):
 * takes, fills, the v2 index's locks and payments, relayer requests and journal rows as a long-running service has
 * them (test/bench/History.ts), so a statement whose cost grows with the tables shows against a run without.
 */
const HISTORY = Number(process.env.BENCH_SETTLE_HISTORY ?? 0)
const CONCURRENCY = process.env.BENCH_CONCURRENCY === undefined ? Infinity : Number(process.env.BENCH_CONCURRENCY)
const INTERVAL = (process.env.BENCH_MINING ?? "interval") !== "auto"
const PER_FILL = 1_000_000n
/** Keys are made and funded this many at a time (preparation, not timed). */
const PREPARE = 16

/**
 * The bench signs in every taker from one address (127.0.0.1): the per-client challenge budget (limits
 * client_challenge_burst 60, client_challenges_per_minute 60) would refuse most of 256 sign-ins, so it is raised
 * here; the global challenge budget (120, 60/s, not configurable) is met by retrying (prepareTakers).
 */
const LIMITS = { client_challenge_burst: 10_000, client_challenges_per_minute: 60_000 }

const sec = (ms: number) => (ms / 1000).toFixed(2)
const line = (label: string, xs: ReadonlyArray<number>) =>
  `  ${label.padEnd(46)} p50 ${sec(pct(xs, 50))} s  p99 ${sec(pct(xs, 99))} s  (n ${xs.length})`
const load = () =>
  loadavg()
    .map((x) => x.toFixed(2))
    .join(" ")

interface Point {
  readonly n: number
  readonly service: ReadonlyArray<number>
  readonly raw: ReadonlyArray<number>
  readonly serviceRate: number
  readonly rawRate: number
  readonly serviceCost: PerUnit
  readonly rawCost: PerUnit
}

const program = Effect.gen(function* () {
  const url = yield* testDatabaseUrl
  const { stack: s } = yield* v2Stack(url, {
    limits: LIMITS,
    ...(INTERVAL ? { blockTime: 1 } : {}),
    ...(process.env.BENCH_WATCHER ? { watcher: JSON.parse(process.env.BENCH_WATCHER) } : {}),
  })
  const procs: { service?: Effect.Effect.Success<ReturnType<typeof startV2Service>>; maker?: MakerProcess } = {}
  yield* Effect.addFinalizer(() =>
    Effect.all([
      procs.maker ? killNow(procs.maker) : Effect.void,
      // Stopped as an operator would (SIGTERM, SIGKILL after 10 s): a service run with SERVICE_NODE_ARGS="--cpu-prof"
      // writes its profile as it exits.
      procs.service ? stopService(procs.service) : Effect.void,
    ]),
  )
  if (!INTERVAL) yield* Effect.forkScoped(mineForever(s))
  const mining = INTERVAL ? "a block every 1 s (devnet)" : "automine + a block every 250 ms"
  console.log(
    `settle bench (v2): sizes ${SIZES.join(", ")} after warm-up rounds of ${WARMUP.join(", ") || "none"} (takes of 1 fill, all at once${
      Number.isFinite(CONCURRENCY) ? `, at most ${CONCURRENCY}` : ""
    }); ${mining}; finality 2 blocks${HISTORY > 0 ? `; ${HISTORY} settled transfers of history` : ""}; load ${load()}`,
  )
  procs.service = yield* startV2Service(s)
  const db = databaseLayer(url)
  if (HISTORY > 0) {
    const t = performance.now()
    yield* seedSettledHistory(HISTORY, { maker: "hyperliquid", taker: "aster" }).pipe(Effect.provide(db))
    console.log(`history: ${HISTORY} settled transfers in ${sec(performance.now() - t)} s, load ${load()}`)
  }
  const w = chainWatcher(s)
  const points: Array<Point> = []

  const rounds = [...WARMUP.map((n) => ({ n, warmup: true })), ...SIZES.map((n) => ({ n, warmup: false }))]
  for (const { n, warmup } of rounds) {
    const concurrency = Math.min(n, CONCURRENCY)
    if (!warmup && PAUSE_MS > 0) {
      console.log(`quiet for ${PAUSE_MS} ms before size ${n}`)
      yield* Effect.sleep(Duration.millis(PAUSE_MS))
    }
    const point = yield* Effect.gen(function* () {
      const cost = yield* costMeter
      const t0 = performance.now()
      const step = (what: string) =>
        console.log(`  [size ${n}] ${what} at ${sec(performance.now() - t0)} s, load ${load()}`)
      // Raw first: the service is up but has nothing of its own to do (it indexes the raw orders' events).
      const orders = yield* Effect.forEach(Array.from({ length: n }), () => rawOrder(s, PER_FILL), {
        concurrency: PREPARE,
      })
      const raws: ReadonlyArray<RawTake> = yield* Effect.forEach(orders, (o) => rawSign(s, o), { concurrency: PREPARE })
      step("raw takes prepared")
      const rawBefore = yield* cost.snapshot
      const rawStart = performance.now()
      const rawRuns = yield* Effect.forEach(raws, (r) => Effect.promise(() => runRaw(s, w, r)), { concurrency })
      const rawCost = yield* cost.perUnit(rawBefore, n)
      step("raw takes claimed")

      // The service with the maker client and the scripted taker.
      const maker = yield* startMaker(s, n, PER_FILL)
      procs.maker = maker.client
      const takers = yield* prepareTakers(s, n, PER_FILL)
      step("maker quoting, takers signed in")
      const before = yield* cost.snapshot
      const start = performance.now()
      const timed = yield* Effect.forEach(takers, (t) => serviceTake(s, w, t, PER_FILL), { concurrency })
      const serviceCost = yield* cost.perUnit(before, n)
      step("service takes claimed")
      yield* maker.retire

      // Finality of every event seen, then each event's block.
      const [h, a] = yield* Effect.promise(() => Promise.all([s.hl.pub.getBlockNumber(), s.aster.pub.getBlockNumber()]))
      yield* Effect.promise(() => Promise.all([w.finalOn(s.hl, h), w.finalOn(s.aster, a)]))
      const block = yield* Effect.promise(() => eventBlocks(s))
      const { hl, aster } = s
      const claimedAt = (digest: `0x${string}`) => w.at(hl, block("Claimed", digest))
      const service = timed.map((t) => claimedAt(t.digest) - t.signed)
      const raw = rawRuns.map((r) => claimedAt(r.digest) - r.start)
      const rate = (startMs: number, digests: ReadonlyArray<`0x${string}`>) =>
        (n * 1000) / (Math.max(...digests.map(claimedAt)) - startMs)
      console.log(`size ${n} (${concurrency} at a time)${warmup ? ", warm-up (not in the table)" : ""}, load ${load()}`)
      // Not in signature → credit: the take's request and its signatures (takes on one order queue on its row lock).
      console.log(
        line(
          "take reserved after round start",
          timed.map((t) => t.reserved - start),
        ),
      )
      console.log(
        line(
          "take reserved + signed after round start",
          timed.map((t) => t.signed - start),
        ),
      )
      console.log(
        line(
          "service lock after signatures (Locked mined)",
          timed.map((t) => w.at(hl, block("Locked", t.digest)) - t.signed),
        ),
      )
      console.log(
        line(
          "taker authorisation after lock final",
          timed.map((t) => t.authorized - w.final(hl, block("Locked", t.digest))),
        ),
      )
      console.log(
        line(
          "payTake after authorisation (Paid mined)",
          timed.map((t) => w.at(aster, block("Paid", t.digest)) - t.authorized),
        ),
      )
      console.log(
        line(
          "maker reveal after payment final (mined)",
          timed.map((t) => w.at(aster, block("PaymentClaimed", t.digest)) - w.final(aster, block("Paid", t.digest))),
        ),
      )
      console.log(
        line(
          "claim after reveal mined (Claimed mined)",
          timed.map((t) => claimedAt(t.digest) - w.at(aster, block("PaymentClaimed", t.digest))),
        ),
      )
      console.log(line("service: first signature → recipient credit", service))
      console.log(line("raw (funded keys, same order): lock → credit", raw))
      return {
        n,
        service,
        raw,
        serviceRate: rate(
          start,
          timed.map((t) => t.digest),
        ),
        rawRate: rate(
          rawStart,
          rawRuns.map((r) => r.digest),
        ),
        serviceCost,
        rawCost,
      } satisfies Point
    }).pipe(
      // A failed size says why only with the processes' output (a take's row alone rarely does): the last lines
      // here, the whole of both under test/bench/out/ (ignored by git).
      Effect.tapErrorCause(() =>
        Effect.sync(() => {
          const dir = join(dirname(fileURLToPath(import.meta.url)), "out")
          mkdirSync(dir, { recursive: true })
          const stem = join(dir, `settle-${n}-${Date.now()}`)
          writeFileSync(`${stem}-maker.log`, procs.maker?.output() ?? "")
          writeFileSync(`${stem}-service.log`, procs.service?.output() ?? "")
          console.error(
            `--- maker client:\n${procs.maker?.output().slice(-6000)}\n--- service:\n${procs.service?.output().slice(-4000)}\n` +
              `(whole output: ${stem}-maker.log, ${stem}-service.log)`,
          )
        }),
      ),
      Effect.provide(db),
      Effect.orDie,
    )
    if (!warmup) points.push(point)
  }
  yield* Effect.promise(() => w.stop())

  const stat = (x: number | null) => (x === null ? "n/a" : x.toFixed(1))
  printSweep(
    `settle v2 sweep (${INTERVAL ? "1 s blocks" : "automine"}): n takes of 1 fill at once, service vs raw`,
    points.map((p) => ({
      fills: p.n,
      "fills/s": p.serviceRate,
      "raw fills/s": p.rawRate,
      "ratio (>= 0.5)": p.serviceRate / p.rawRate,
      "sig→credit p50 s": sec(pct(p.service, 50)),
      "p99 s": sec(pct(p.service, 99)),
      "raw p50 s": sec(pct(p.raw, 50)),
      "raw p99 s": sec(pct(p.raw, 99)),
      "CPU ms/fill": p.serviceCost.cpuMs,
      "stmts/fill": stat(p.serviceCost.statements),
      "raw CPU ms/fill": p.rawCost.cpuMs,
      "raw stmts/fill": stat(p.rawCost.statements),
    })),
  )
  const mode = INTERVAL ? "1 s blocks" : "automine"
  const first = points[0]!
  summarize({
    bench: `settle v2: first signature → credit p50, ${mode}, ${first.n} at once`,
    figure: `${sec(pct(first.service, 50))} s`,
    baseline: `raw same order ${sec(pct(first.raw, 50))} s`,
    // higher is better: raw / service; the target service <= 1.2 × raw is a ratio >= 0.83
    ratio: pct(first.raw, 50) / pct(first.service, 50),
    target: "<= 1.2 × raw (>= 0.83)",
    atLeast: 1 / 1.2,
  })
  // The throughput target is at 64 at once; without 64 in the sweep, the largest size stands in.
  const at = points.find((p) => p.n === 64) ?? points.reduce((a, b) => (b.n > a.n ? b : a))
  summarize({
    bench: `settle v2: fills/s, ${mode}, ${at.n} at once`,
    figure: `${at.serviceRate.toFixed(2)} fills/s`,
    baseline: `raw ${at.rawRate.toFixed(2)} fills/s`,
    ratio: at.serviceRate / at.rawRate,
    target: ">= 0.5 × raw",
    atLeast: 0.5,
  })
})

Effect.runPromise(Effect.scoped(program)).then(
  () => process.exit(0),
  (e: unknown) => {
    console.error(e)
    process.exit(1)
  },
)
