/**
 * `npm run bench`: every bench in turn (each its own process, so one's servers and chains are gone before the
 * next starts), then one summary table of the rows they reported (test/bench/Summary.ts), written as JSON to
 * test/bench/out/bench-<time>.json (ignored by git) so two runs can be compared.
 *
 * Usage: `npm run bench` (all) or `npm run bench -- info lease` (some). A bench that fails is listed as failed
 * in the table with its exit code and the run continues; the command exits 1 if any failed.
 */
import { spawnSync } from "node:child_process"
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { cpus, loadavg, tmpdir, totalmem } from "node:os"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import type { SummaryRow } from "./Summary.ts"

const here = dirname(fileURLToPath(import.meta.url))
/** Each bench, and the settle bench once per mining mode. */
const RUNS: ReadonlyArray<{ readonly name: string; readonly file: string; readonly env?: Record<string, string> }> = [
  { name: "info", file: "info.ts" },
  { name: "lease", file: "lease.ts" },
  { name: "devnet", file: "devnet.ts" },
  { name: "stream", file: "stream.ts" },
  { name: "ingest", file: "ingest.ts" },
  { name: "candidates", file: "candidates.ts" },
  { name: "trades", file: "trades.ts" },
  { name: "metrics", file: "metrics.ts" },
  { name: "fades", file: "fades.ts" },
  { name: "relay", file: "relay.ts" },
  { name: "settle", file: "settle.ts", env: { BENCH_MINING: "auto" } },
  { name: "settle", file: "settle.ts", env: { BENCH_MINING: "interval" } },
]
const ALL = [...new Set(RUNS.map((r) => r.name))]

const chosen = process.argv.slice(2).filter((a) => a !== "--")
const unknown = chosen.filter((name) => !(ALL as ReadonlyArray<string>).includes(name))
if (unknown.length > 0) {
  console.error(`unknown bench: ${unknown.join(", ")} (known: ${ALL.join(", ")})`)
  process.exit(2)
}
const benches = RUNS.filter((r) => chosen.length === 0 || chosen.includes(r.name))

const rows: Array<SummaryRow | { bench: string; failed: number }> = []
/** Each bench's size sweeps (test/bench/Cost.ts printSweep), kept in the JSON beside the rows. */
const sweeps: Array<{ sweep: string; rows: ReadonlyArray<Record<string, string | number>> }> = []
const started = new Date()
for (const [i, { name, file: script, env }] of benches.entries()) {
  const file = join(tmpdir(), `bench-rows-${process.pid}-${i}.jsonl`)
  rmSync(file, { force: true })
  const label = `${name}${
    env === undefined
      ? ""
      : ` (${Object.entries(env)
          .map(([k, v]) => `${k}=${v}`)
          .join(" ")})`
  }`
  console.log(`\n=== [${i + 1}/${benches.length}] ${label}, load ${loadavg()[0]!.toFixed(2)} ===`)
  const t0 = performance.now()
  const run = spawnSync(process.execPath, ["--import", "tsx", join(here, script)], {
    stdio: "inherit",
    // pg_stat_statements in the benches' embedded PostgreSQL: statements per unit (Cost.ts).
    env: { BENCH_STATEMENT_STATS: "true", ...process.env, ...env, BENCH_SUMMARY_FILE: file },
  })
  const seconds = (performance.now() - t0) / 1000
  console.log(`=== ${label} ended in ${seconds.toFixed(0)} s, exit ${run.status ?? run.signal} ===`)
  let reported: Array<SummaryRow | (typeof sweeps)[number]> = []
  try {
    reported = readFileSync(file, "utf8")
      .split("\n")
      .filter((l) => l !== "")
      .map((l) => JSON.parse(l) as SummaryRow | (typeof sweeps)[number])
  } catch {
    // no rows: the bench failed before reporting
  }
  rmSync(file, { force: true })
  for (const r of reported) {
    if ("sweep" in r) sweeps.push(r)
    else rows.push(r)
  }
  if (run.status !== 0) rows.push({ bench: label, failed: run.status ?? -1 })
}

const pad = (s: string, n: number) => (s.length >= n ? s : s + " ".repeat(n - s.length))
const header = ["bench", "figure", "baseline", "ratio", "target", "met", "load"]
const table = rows.map((r) =>
  "failed" in r
    ? [r.bench, `FAILED (exit ${r.failed})`, "", "", "", "no", ""]
    : [
        r.bench,
        r.figure,
        r.baseline,
        r.ratio === null ? "" : r.ratio.toFixed(2),
        r.target,
        r.met === null ? "" : r.met ? "yes" : "no",
        r.load.toFixed(2),
      ],
)
const widths = header.map((h, c) => Math.max(h.length, ...table.map((row) => row[c]!.length)))
const line = (cells: ReadonlyArray<string>) => cells.map((cell, c) => pad(cell, widths[c]!)).join("  ")
console.log(
  `\nsummary: ${started.toISOString()}, ${cpus().length} cores, ${(totalmem() / 2 ** 30).toFixed(0)} GiB, node ${process.version}`,
)
console.log(line(header))
console.log(line(widths.map((w) => "-".repeat(w))))
for (const row of table) console.log(line(row))

const out = join(here, "out")
mkdirSync(out, { recursive: true })
const path = join(out, `bench-${started.toISOString().replace(/[:.]/g, "-")}.json`)
writeFileSync(
  path,
  `${JSON.stringify({ started: started.toISOString(), cores: cpus().length, node: process.version, rows, sweeps }, null, 2)}\n`,
)
console.log(`written: ${path}`)
process.exit(rows.some((r) => "failed" in r) ? 1 : 0)
