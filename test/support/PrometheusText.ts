import { createRequire } from "node:module"

/**
 * Prometheus text exposition, read by a real parser (parse-prometheus-text-format, which throws on a
 * malformed line), into families keyed by name.
 */
export interface PromSample {
  readonly labels?: Record<string, string>
  readonly value?: string
  readonly buckets?: Record<string, string>
  readonly count?: string
  readonly sum?: string
}
export interface PromFamily {
  readonly name: string
  readonly help: string
  readonly type: "COUNTER" | "GAUGE" | "HISTOGRAM" | "SUMMARY" | "UNTYPED"
  readonly metrics: ReadonlyArray<PromSample>
}

const parse = createRequire(import.meta.url)("parse-prometheus-text-format") as (text: string) => Array<PromFamily>

export const parsePrometheus = (text: string): Map<string, PromFamily> => new Map(parse(text).map((f) => [f.name, f]))

/** The sample of `family` whose labels include `labels` (undefined when none). */
export const sampleOf = (
  families: Map<string, PromFamily>,
  family: string,
  labels: Record<string, string> = {},
): PromSample | undefined =>
  families.get(family)?.metrics.find((m) => Object.entries(labels).every(([k, v]) => m.labels?.[k] === v))

/** A counter's or gauge's value (0 when the series is absent), or a histogram's count. */
export const seriesValue = (families: Map<string, PromFamily>, family: string, labels: Record<string, string> = {}) => {
  const s = sampleOf(families, family, labels)
  return Number(s?.value ?? s?.count ?? 0)
}

/**
 * A labelled histogram's `_count` read from the text itself: the parser above keeps a histogram's buckets but
 * drops its series' labels, `_count` and `_sum` (it merges labelled series), so the count is taken from the line.
 */
export const histogramCount = (text: string, family: string, labels: Record<string, string>): number => {
  for (const line of text.split("\n")) {
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)/.exec(line)
    if (m === null || m[1] !== `${family}_count`) continue
    const found = Object.fromEntries(
      [...(m[2] ?? "").matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)].map((l) => [l[1], l[2]]),
    )
    if (Object.entries(labels).every(([k, v]) => found[k] === v)) return Number(m[3])
  }
  return 0
}

/** Every sample line's value is a number (the parser above accepts any text there). */
export const sampleValuesAreNumbers = (text: string): boolean =>
  text
    .split("\n")
    .filter((l) => l !== "" && !l.startsWith("#"))
    .every((l) => /^\S+(?:\{.*\})? (?:[-+]?(?:\d+\.?\d*(?:e[-+]?\d+)?|\.\d+)|NaN|[+-]Inf)(?: \d+)?$/i.test(l))
