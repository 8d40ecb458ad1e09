/**
 * The service's own logging for a bench that runs service code in its process (info, lease, relay, ingest, stream),
 * as main.ts sets it up: the JSON logger at info, every line through the batched sink, and `LogOutput` for the HTTP
 * access line. Without it such a bench measured something production does not run: Effect's default logger (one
 * synchronous `console.log` a line, logfmt) where code logs, and no access line at all.
 *
 * The lines go to a file, written synchronously and batched per event-loop turn as stdout is, so the bench's own
 * output stays readable: BENCH_LOG_FILE, kept; else `bench-<name>-<pid>.log` in the temp dir, removed when the
 * process exits (a relay run writes ~6 MB).
 */
import { openSync, rmSync, writeSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { type Layer, LogLevel } from "effect"
import { batchedSink, type LogOutput, loggingLayer } from "../../src/Observability/Log.ts"

export const benchLogging = (name: string): { readonly layer: Layer.Layer<LogOutput>; readonly file: string } => {
  const kept = process.env.BENCH_LOG_FILE
  const file = kept ?? join(tmpdir(), `bench-${name}-${process.pid}.log`)
  const fd = openSync(file, "w")
  if (kept === undefined) process.on("exit", () => rmSync(file, { force: true }))
  const layer = loggingLayer({ format: "json", level: LogLevel.Info, sink: batchedSink((text) => writeSync(fd, text)) })
  return { layer, file }
}
