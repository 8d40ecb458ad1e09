import { appendFileSync, readdirSync, readFileSync } from "node:fs"
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * Per-unit cost of a bench phase (issue 21 item 2): CPU milliseconds of this process and every process it started
 * (the service, clients, the embedded PostgreSQL and its backends; Linux /proc) and the database statements run
 * (pg_stat_statements, loaded when BENCH_STATEMENT_STATS=true: test/bench/run.ts sets it). Divide by the units done
 * (fills, renewals, delivered events, indexed events) so a growth worse than linear shows across a size sweep.
 *
 *   const cost = yield* costMeter
 *   const before = yield* cost.snapshot
 *   … the phase …
 *   const per = yield* cost.perUnit(before, unitsDone)   // { cpuMs, statements }
 *
 * BENCH_STATEMENT_TOP=n also prints, for each phase measured, the n statements run most often in it (calls per
 * unit, the server's execution time per unit in ms, then the normalised query's first 160 characters), to tell which
 * ones a cut would remove and where the database's time goes.
 */
export interface CostSnapshot {
  readonly cpuMs: number
  /** cpuMs by kind of process (treeCpuByKind). */
  readonly cpuByKind: ReadonlyMap<string, number>
  /** null when pg_stat_statements is not loaded. */
  readonly statements: number | null
  /** Calls and execution time (ms) per normalised query, only when BENCH_STATEMENT_TOP is set. */
  readonly byQuery: ReadonlyMap<string, QueryTotals> | null
}

export interface PerUnit {
  readonly cpuMs: number
  readonly statements: number | null
}

const TICK_MS = 10 // USER_HZ is 100 on Linux

/** utime + stime of a process (ms) and, for the root, what its reaped children used (cutime + cstime). */
const readStat = (pid: number): { ppid: number; own: number; reaped: number } | null => {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, "utf8")
    // Fields after the command name, which may hold spaces and parentheses: split after the last ')'.
    const f = text.slice(text.lastIndexOf(")") + 2).split(" ")
    return {
      ppid: Number(f[1]),
      own: (Number(f[11]) + Number(f[12])) * TICK_MS,
      reaped: (Number(f[13]) + Number(f[14])) * TICK_MS,
    }
  } catch {
    return null // gone, or not Linux
  }
}

/** What a process of the tree is, from its command line: the service, the maker client, postgres, anvil, … */
const kindOf = (pid: number, root: number): string => {
  if (pid === root) return "bench"
  try {
    const argv = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0")
    if (argv.some((a) => a.endsWith("src/main.ts"))) return "service"
    if (argv.some((a) => a.includes("infra/maker/"))) return "maker"
    // PostgreSQL retitles its processes: a client backend is "postgres: <user> <db> <host>(<port>) <state>"; the
    // others (autovacuum, checkpointer, walwriter, io workers, the postmaster with the workers it reaped) are apart.
    if (argv[0]!.startsWith("postgres: ")) return /\(\d+\)/.test(argv[0]!) ? "postgres" : "postgres bg"
    if (argv[0]!.endsWith("/postgres")) return "postgres bg"
    return argv[0]!.split("/").at(-1)!.split(":")[0]! || "other"
  } catch {
    return "other"
  }
}

/**
 * CPU ms of `root` and all its live descendants, plus the children each already reaped, by kind of process
 * (kindOf; a reaped child counts for its parent's kind: PostgreSQL's finished backends for `postgres`).
 */
export const treeCpuByKind = (root: number = process.pid): Map<string, number> => {
  const stats = new Map<number, { ppid: number; own: number; reaped: number }>()
  let pids: Array<string> = []
  try {
    pids = readdirSync("/proc").filter((d) => /^\d+$/.test(d))
  } catch {
    const u = process.cpuUsage()
    return new Map([["bench", (u.user + u.system) / 1000]])
  }
  for (const p of pids) {
    const s = readStat(Number(p))
    if (s !== null) stats.set(Number(p), s)
  }
  const children = new Map<number, Array<number>>()
  for (const [pid, s] of stats) children.set(s.ppid, [...(children.get(s.ppid) ?? []), pid])
  const byKind = new Map<string, number>()
  const stack = [root]
  while (stack.length > 0) {
    const pid = stack.pop()!
    const s = stats.get(pid)
    if (s === undefined) continue
    const kind = kindOf(pid, root)
    byKind.set(kind, (byKind.get(kind) ?? 0) + s.own + s.reaped)
    stack.push(...(children.get(pid) ?? []))
  }
  return byKind
}

/** CPU ms of `root` and all its live descendants, plus the children it already reaped. */
export const treeCpuMs = (root: number = process.pid): number =>
  [...treeCpuByKind(root).values()].reduce((a, b) => a + b, 0)

const statementCount = (sql: SqlClient.SqlClient) =>
  Effect.gen(function* () {
    yield* sql`create extension if not exists pg_stat_statements`
    const [row] = yield* sql<{ calls: string | null }>`
      select sum(calls)::text as calls from pg_stat_statements where query not like '%pg_stat_statements%'`
    return row?.calls === null || row?.calls === undefined ? 0 : Number(row.calls)
  }).pipe(Effect.orElseSucceed(() => null))

const TOP = Number(process.env.BENCH_STATEMENT_TOP ?? 0)

interface QueryTotals {
  readonly calls: number
  /** pg_stat_statements' total_exec_time: the server's execution time, ms (planning and waits for the client not). */
  readonly ms: number
  /** total_plan_time: the server's planning time, ms (a named statement's generic plan is made once). */
  readonly planMs: number
}

const callsByQuery = (sql: SqlClient.SqlClient) =>
  Effect.map(
    sql<{ query: string; calls: string; ms: number; plan_ms: number }>`
      select query, sum(calls)::text as calls, sum(total_exec_time)::float8 as ms,
             sum(total_plan_time)::float8 as plan_ms from pg_stat_statements
      where query not like '%pg_stat_statements%' group by query`,
    (rows) =>
      new Map(rows.map((r) => [r.query, { calls: Number(r.calls), ms: Number(r.ms), planMs: Number(r.plan_ms) }])),
  ).pipe(Effect.orElseSucceed(() => null))

/** The TOP statements run most often between two snapshots: calls and execution ms per unit. */
const printTop = (before: ReadonlyMap<string, QueryTotals>, after: ReadonlyMap<string, QueryTotals>, n: number) => {
  const rows = [...after]
    .map(([query, t]) => ({
      query,
      calls: t.calls - (before.get(query)?.calls ?? 0),
      ms: t.ms - (before.get(query)?.ms ?? 0),
      planMs: t.planMs - (before.get(query)?.planMs ?? 0),
    }))
    .filter((r) => r.calls > 0)
    .sort((a, b) => b.calls - a.calls)
    .slice(0, TOP)
  const total = rows.reduce((sum, r) => sum + r.ms, 0)
  const planned = rows.reduce((sum, r) => sum + r.planMs, 0)
  console.log(
    `top ${rows.length} statements per unit (of ${n} units; calls, execution ms, planning ms), ` +
      `${(total / n).toFixed(4)} ms executing, ${(planned / n).toFixed(4)} ms planning:`,
  )
  for (const r of rows)
    console.log(
      `${(r.calls / n).toFixed(2).padStart(8)} ${(r.ms / n).toFixed(4).padStart(9)} ${(r.planMs / n).toFixed(4).padStart(9)}  ${r.query.replace(/\s+/g, " ").slice(0, 160)}`,
    )
}

/**
 * Where a unit's CPU went, one line: ms per unit by kind of process, largest first. A process that started and
 * exited inside the phase without being reaped by one of the tree is missed (none of the benches has one).
 */
const printByKind = (before: ReadonlyMap<string, number>, after: ReadonlyMap<string, number>, n: number) => {
  const parts = [...after]
    .map(([kind, ms]) => [kind, (ms - (before.get(kind) ?? 0)) / n] as const)
    .filter(([, ms]) => ms > 0)
    .sort((a, b) => b[1] - a[1])
    .map(([kind, ms]) => `${kind} ${ms.toPrecision(3)}`)
  console.log(`CPU ms per unit by process (of ${n} units): ${parts.join(", ")}`)
}

export const costMeter = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const snapshot: Effect.Effect<CostSnapshot> = Effect.gen(function* () {
    const statements = yield* statementCount(sql)
    const byQuery = TOP > 0 && statements !== null ? yield* callsByQuery(sql) : null
    const cpu = treeCpuByKind()
    return { cpuMs: [...cpu.values()].reduce((a, b) => a + b, 0), cpuByKind: cpu, statements, byQuery }
  })
  const perUnit = (before: CostSnapshot, units: number): Effect.Effect<PerUnit> =>
    Effect.map(snapshot, (after) => {
      const n = Math.max(1, units)
      if (before.byQuery !== null && after.byQuery !== null) printTop(before.byQuery, after.byQuery, n)
      printByKind(before.cpuByKind, after.cpuByKind, n)
      return {
        cpuMs: (after.cpuMs - before.cpuMs) / n,
        statements:
          after.statements === null || before.statements === null
            ? null
            : // the snapshot's own statements are excluded by the filter; the rest is the phase's
              (after.statements - before.statements) / n,
      }
    })
  return { snapshot, perUnit }
})

/** "1.23 ms CPU, 4.0 statements" per unit, for a sweep table. */
export const showPerUnit = (p: PerUnit) =>
  `${p.cpuMs.toFixed(2)} ms CPU, ${p.statements === null ? "n/a" : p.statements.toFixed(1)} statements`

const percentileOf = (sorted: ReadonlyArray<number>, p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0

/**
 * `read` run `warmup` times unmeasured, then `reads` times one after another: its p50 and p99 (ms) and, per read,
 * the cost (costMeter) and the sweep's columns for it.
 */
export const measureReads = <A, E, R>(
  cost: Effect.Effect.Success<typeof costMeter>,
  read: Effect.Effect<A, E, R>,
  reads: number,
  warmup = 10,
) =>
  Effect.gen(function* () {
    for (let i = 0; i < warmup; i++) yield* read
    const before = yield* cost.snapshot
    const times: Array<number> = []
    for (let i = 0; i < reads; i++) {
      const started = performance.now()
      yield* read
      times.push(performance.now() - started)
    }
    const per = yield* cost.perUnit(before, reads)
    times.sort((a, b) => a - b)
    const p50 = percentileOf(times, 50)
    const p99 = percentileOf(times, 99)
    const columns = (baseline: number, vs: string) => ({
      "p50 ms": p50,
      "p99 ms": p99,
      [vs]: p50 / baseline,
      "CPU ms/read": per.cpuMs,
      "stmts/read": per.statements === null ? "n/a" : per.statements.toFixed(1),
    })
    return { p50, p99, per, columns }
  })

/** A sweep's sizes from the environment variable `name` (comma-separated), else `fallback`; smallest first. */
export const sweepSizes = (name: string, fallback: string): ReadonlyArray<number> =>
  (process.env[name] ?? fallback)
    .split(",")
    .map((x) => Number(x.trim()))
    .sort((a, b) => a - b)

/**
 * One size sweep as one table (issue 21 item 2): a row per size with its figures and per-unit cost, so a growth
 * worse than linear shows as a rising per-unit column. Printed, and kept in the run's JSON by run.ts (SWEEP lines).
 */
export const printSweep = (title: string, rows: ReadonlyArray<Readonly<Record<string, string | number>>>): void => {
  const columns = [...new Set(rows.flatMap((r) => Object.keys(r)))]
  const cell = (v: string | number | undefined) =>
    v === undefined ? "" : typeof v === "number" ? (Number.isInteger(v) ? v.toLocaleString("en-US") : v.toFixed(2)) : v
  const widths = columns.map((c) => Math.max(c.length, ...rows.map((r) => cell(r[c]).length)))
  const line = (cells: ReadonlyArray<string>) => cells.map((c, i) => c.padEnd(widths[i]!)).join("  ")
  console.log(`\n${title}`)
  console.log(line(columns))
  console.log(line(widths.map((w) => "-".repeat(w))))
  for (const r of rows) console.log(line(columns.map((c) => cell(r[c]))))
  console.log(`SWEEP ${JSON.stringify({ title, rows })}`)
  const file = process.env.BENCH_SUMMARY_FILE
  if (file !== undefined && file !== "") appendFileSync(file, `${JSON.stringify({ sweep: title, rows })}\n`)
}
