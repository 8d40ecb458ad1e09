import { appendFileSync } from "node:fs"
import { loadavg } from "node:os"
import { Effect } from "effect"

/**
 * One row of `npm run bench`'s summary table (issue 21 item 4). A bench calls `summarize` once per figure
 * it measures against a baseline; the row is printed as one `BENCH_ROW {json}` line and, when the bench runs
 * under test/bench/run.ts, appended to the file that runner names (BENCH_SUMMARY_FILE).
 */
export interface SummaryRow {
  /** The bench and what it measured, e.g. "info: GET /v1/info throughput". */
  readonly bench: string
  /** The service's figure with its unit, e.g. "24,100 req/s". */
  readonly figure: string
  /** The baseline measured in the same run, with its unit. */
  readonly baseline: string
  /** service / baseline, oriented so that higher is better (for times: baseline / service) — or null if none. */
  readonly ratio: number | null
  /** The target in words, e.g. ">= 0.9". */
  readonly target: string
  /** Whether the ratio meets the target (null when there is no numeric target). */
  readonly met: boolean | null
  /** The 1-minute load average when the row was measured. */
  readonly load: number
}

export const summarize = (row: Omit<SummaryRow, "load" | "met"> & { readonly atLeast?: number }) => {
  const { atLeast, ...rest } = row
  const full: SummaryRow = {
    ...rest,
    met: atLeast === undefined || row.ratio === null ? null : row.ratio >= atLeast,
    load: Number(loadavg()[0]!.toFixed(2)),
  }
  const line = `BENCH_ROW ${JSON.stringify(full)}`
  console.log(line)
  const file = process.env.BENCH_SUMMARY_FILE
  if (file !== undefined && file !== "") appendFileSync(file, `${JSON.stringify(full)}\n`)
  return full
}

/** Thousands separators, no decimals: 24100.4 → "24,100". */
export const whole = (n: number) => Math.round(n).toLocaleString("en-US")

/** The middle value; of an even count, the mean of the two middle ones. */
export const median = (xs: ReadonlyArray<number>) => {
  const s = [...xs].sort((a, b) => a - b)
  const m = Math.floor(s.length / 2)
  return s.length % 2 === 1 ? s[m]! : (s[m - 1]! + s[m]!) / 2
}

/**
 * Seconds each measured path runs before its first measured phase (BENCH_WARMUP_SECONDS, default 10). The JIT takes
 * that long to settle on a path of the service (a lease renewal went from ~260 to ~370 /s over its first 12 s on the
 * 2-core machine, then stayed); a 1 s warm-up measured the compiler's progress, which favours the shorter code path,
 * not what a long-running service does. Every side of a comparison gets the same warm-up.
 */
export const WARMUP_SECONDS = Number(process.env.BENCH_WARMUP_SECONDS ?? 10)

/**
 * The summary row of a read that should not grow with the history (candidates, trades, metrics): its p50 at the
 * largest size against the smallest size's, in the same run (1 = flat; met at >= 0.5, at most twice the time).
 */
export const summarizeFlat = (bench: string, p50: number, baselineP50: number, baseline: string) =>
  summarize({
    bench,
    figure: `${p50.toFixed(2)} ms p50`,
    baseline: `${baselineP50.toFixed(2)} ms p50, ${baseline}`,
    ratio: baselineP50 / p50,
    target: ">= 0.5 (flat)",
    atLeast: 0.5,
  })

/**
 * A history sweep (candidates, trades, metrics, fades): for each size, smallest first, the history grows to it by
 * `grow(from, to)` (how long that took is printed), then `measure(size)` reads at that size.
 */
export const historySweep = <E, R, E2, R2>(
  sizes: ReadonlyArray<number>,
  unit: string,
  grow: (from: number, to: number) => Effect.Effect<void, E, R>,
  measure: (size: number) => Effect.Effect<void, E2, R2>,
) =>
  Effect.gen(function* () {
    let history = 0
    for (const size of sizes) {
      if (size > history) {
        const t = performance.now()
        yield* grow(history, size)
        console.log(`history: ${size} ${unit} (${((performance.now() - t) / 1000).toFixed(1)} s to add)`)
        history = size
      }
      yield* measure(size)
    }
  })

/** Runs a bench's program to its end and exits: 0 when it ended, 1 (its error printed) when it failed. */
export const runBench = <A, E>(program: Effect.Effect<A, E>) =>
  Effect.runPromise(program).then(
    () => process.exit(0),
    (e) => {
      console.error(e)
      process.exit(1)
    },
  )
