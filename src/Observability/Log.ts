import {
  Cause,
  Config,
  Context,
  Effect,
  FiberId,
  FiberRef,
  FiberRefs,
  HashMap,
  Layer,
  List,
  Logger,
  LogLevel,
  Option,
  Tracer,
} from "effect"

/**
 * The service's log (issue 17 item 1): one line per record, in the format LOG_FORMAT names — `json` (one
 * JSON object per line, the default when stdout is not a terminal), `logfmt`, or `pretty` (the default on
 * a terminal) — at LOG_LEVEL and above (default `info`).
 *
 * Every record has `time` (ISO 8601), `level` and `message`, then the fiber's log annotations
 * (`request_id` on everything a request causes, `actor`, and the ids of what the line is about), then
 * fields passed as objects in the message (`Effect.logInfo("text", { fill_id })`; never `[object Object]`),
 * then `cause` when there is one.
 *
 * The redaction guard runs in the formatter, on every record, whatever the call site wrote: a field whose
 * name says it holds a secret (token, signature, secret, private key, password, authorization, ...) is
 * replaced by `[redacted]`, and in any text `st_`/`mk_` bearer tokens, `Bearer ...` values, hex blobs of
 * signature length or longer (signatures, calldata carrying them) and URL credentials, paths and queries
 * (RPC API keys live there) are masked.
 */

export type LogFormat = "json" | "logfmt" | "pretty"

/** Where finished lines go (stdout in the service; a buffer in tests). */
export type LogSink = (line: string) => void

/**
 * Gathers lines and hands them to `write` once per turn of the event loop (at once past 64 KiB, and on
 * process exit): one write for a turn's lines instead of one each. A write per access line cost ~15-20% of
 * GET /v1/info's throughput under load (test/bench/info.ts, metrics-only vs metrics + log). Lines keep their
 * order; a line is at most one turn late; only a kill that runs no exit handler (SIGKILL) loses the last turn's.
 */
export const batchedSink = (write: (text: string) => void): LogSink => {
  let pending: Array<string> = []
  let size = 0
  let scheduled = false
  let hooked = false
  const flush = () => {
    scheduled = false
    if (pending.length === 0) return
    const text = pending.join("")
    pending = []
    size = 0
    write(text)
  }
  return (line) => {
    if (!hooked) {
      hooked = true
      process.on("exit", flush)
    }
    pending.push(`${line}\n`)
    size += line.length + 1
    if (size >= 65_536) flush()
    else if (!scheduled) {
      scheduled = true
      setImmediate(flush)
    }
  }
}

/** process.stdout (synchronous for files and pipes on Linux), batched per event-loop turn. */
export const stdoutSink: LogSink = batchedSink((text) => {
  process.stdout.write(text)
})

// ------------------------------------------------------------------------------------------ redaction

/** Field names whose values are never printed. */
const SECRET_KEY =
  /token|signature|secret|private_?key|privatekey|operator_?key|api_?key|password|passphrase|authorization|cookie|mnemonic|seed|ciphertext|preimage/i

export const REDACTED = "[redacted]"

const BEARER_TOKEN = /\b(st|mk)_[A-Za-z0-9_-]{8,}/g
const BEARER_HEADER = /\b(Bearer)\s+[^\s"',;]+/gi
/** 65 bytes (a signature) or longer: signatures and the calldata that carries them. */
const LONG_HEX = /0x[0-9a-fA-F]{130,}/g
const URL_PARTS = /\b([a-z][a-z0-9+.-]*:\/\/)(?:[^\s/@'"]*@)?([^\s/?#'"]+)[^\s'"]*/gi

/** URLs lose their credentials, path and query (RPC endpoints carry API keys there); scheme and host stay. */
export const scrubUrls = (text: string): string => text.replace(URL_PARTS, "$1$2")

export const isSecretKey = (key: string): boolean => SECRET_KEY.test(key)

/** Masks secret-shaped values inside a text; cheap when none can be there. */
export const maskText = (s: string): string => {
  if (s.length < 11) return s
  let out = s
  if (out.includes("_")) out = out.replace(BEARER_TOKEN, (_m, kind: string) => `${kind}_${REDACTED}`)
  if (out.length >= 132 && out.includes("0x"))
    out = out.replace(LONG_HEX, (m) => `${m.slice(0, 10)}…[${(m.length - 2) / 2} bytes]`)
  if (out.includes("earer")) out = out.replace(BEARER_HEADER, `$1 ${REDACTED}`)
  if (out.includes("://")) out = scrubUrls(out)
  return out
}

/** A JSON-safe, redacted copy of a value (bigints as strings, errors as name and message, depth bounded). */
export const redactValue = (value: unknown, depth = 0): unknown => {
  switch (typeof value) {
    case "string":
      return maskText(value)
    case "number":
    case "boolean":
      return value
    case "bigint":
      return value.toString()
    case "undefined":
      return undefined
    case "function":
    case "symbol":
      return String(value)
  }
  if (value === null) return null
  if (depth > 5) return "[…]"
  if (value instanceof Date) return Number.isNaN(value.getTime()) ? String(value) : value.toISOString()
  if (value instanceof Error) return { name: value.name, message: maskText(value.message) }
  if (value instanceof Uint8Array) return `[${value.length} bytes]`
  if (Array.isArray(value)) return value.slice(0, 50).map((v) => redactValue(v, depth + 1))
  if (value instanceof Map) return redactFields(Object.fromEntries(value), depth + 1)
  return redactFields(value as Record<string, unknown>, depth + 1)
}

export const redactFields = (fields: Record<string, unknown>, depth = 0): Record<string, unknown> => {
  const out: Record<string, unknown> = {}
  for (const key of Object.keys(fields)) {
    out[key] = isSecretKey(key) ? REDACTED : redactValue(fields[key], depth)
  }
  return out
}

// ------------------------------------------------------------------------------------------ records

export interface LogRecord {
  readonly time: string
  readonly level: string
  readonly message: string
  readonly fields: Record<string, unknown>
  readonly cause: string | undefined
}

const LEVEL: Record<string, string> = {
  All: "all",
  Trace: "trace",
  Debug: "debug",
  Info: "info",
  Warning: "warn",
  Error: "error",
  Fatal: "fatal",
  None: "none",
}

const isPlainObject = (u: unknown): u is Record<string, unknown> =>
  typeof u === "object" &&
  u !== null &&
  !Array.isArray(u) &&
  (Object.getPrototypeOf(u) === Object.prototype || Object.getPrototypeOf(u) === null)

/** The record of one Effect log call: texts joined into the message, objects merged into the fields. */
export const toRecord = (options: Logger.Logger.Options<unknown>): LogRecord => {
  const texts: Array<string> = []
  const fields: Record<string, unknown> = {}
  for (const [key, value] of HashMap.toEntries(options.annotations)) {
    fields[key] = isSecretKey(key) ? REDACTED : redactValue(value)
  }
  const parts = Array.isArray(options.message) ? options.message : [options.message]
  for (const part of parts) {
    if (typeof part === "string") texts.push(maskText(part))
    else if (isPlainObject(part)) Object.assign(fields, redactFields(part))
    else if (part instanceof Error) fields.error = redactValue(part)
    else if (part !== undefined) {
      // Other objects (class instances the libraries log, e.g. @effect/cluster's Runner) as redacted JSON,
      // never `[object Object]`; their own toString could print fields the redaction has not seen.
      const value = redactValue(part)
      texts.push(typeof value === "string" ? value : maskText(JSON.stringify(value) ?? String(value)))
    }
  }
  if (List.isCons(options.spans)) {
    const now = options.date.getTime()
    for (const span of options.spans) fields[`${span.label}_ms`] = now - span.startTime
  }
  return {
    time: options.date.toISOString(),
    level: LEVEL[options.logLevel._tag] ?? options.logLevel.label.toLowerCase(),
    message: texts.join(" "),
    fields,
    cause: Cause.isEmpty(options.cause) ? undefined : renderCause(options.cause),
  }
}

/**
 * A cause for a log line: each error's name and message, with the errors it wraps (`cause`) after an arrow, one
 * error a line, masked like any text. Never a stack trace (its frames name files and arguments; the guide's rule):
 * the span and the request id locate the failure.
 */
export const renderCause = (cause: Cause.Cause<unknown>): string => {
  if (Cause.isInterruptedOnly(cause)) return "interrupted"
  const lines = Cause.prettyErrors(cause).map((e) => {
    const chain = [`${e.name}: ${e.message}`]
    let inner: unknown = e.cause
    for (let depth = 0; inner instanceof Error && depth < 5; depth++) {
      chain.push(`${inner.name}: ${inner.message}`)
      inner = inner.cause
    }
    return chain.join(" ← ")
  })
  return maskText(lines.join("\n"))
}

/**
 * Effect's tracer logger (every log line inside a span becomes a span event) with this file's redaction: the
 * built-in one exports the raw message and annotations and `Cause.pretty` with its stack frames to the collector.
 * Here the event carries the masked message, the redacted fields and `renderCause` (no frames), as the log does.
 */
export const redactingTracerLogger: Logger.Logger<unknown, void> = Logger.make((options) => {
  const span = Context.getOption(FiberRefs.getOrDefault(options.context, FiberRef.currentContext), Tracer.ParentSpan)
  if (Option.isNone(span) || span.value._tag === "ExternalSpan") return
  const r = toRecord(options)
  const attributes: Record<string, unknown> = {
    ...r.fields,
    "effect.fiberId": FiberId.threadName(options.fiberId),
    "effect.logLevel": options.logLevel.label,
  }
  if (r.cause !== undefined) attributes["effect.cause"] = r.cause
  // The record's date is the fiber's Clock (milliseconds), as the log line's own time.
  span.value.event(r.message, BigInt(options.date.getTime()) * 1_000_000n, attributes)
})

// ------------------------------------------------------------------------------------------ formats

export const formatJson = (r: LogRecord): string => {
  const o: Record<string, unknown> = { time: r.time, level: r.level, message: r.message }
  for (const key of Object.keys(r.fields)) if (!(key in o)) o[key] = r.fields[key]
  if (r.cause !== undefined) o.cause = r.cause
  return JSON.stringify(o)
}

const LOGFMT_BARE = /^[^\s="\\]+$/
const logfmtValue = (v: unknown): string => {
  const s = typeof v === "string" ? v : v === undefined ? "" : JSON.stringify(v)
  return s.length > 0 && LOGFMT_BARE.test(s) ? s : JSON.stringify(s)
}

export const formatLogfmt = (r: LogRecord): string => {
  let line = `time=${r.time} level=${r.level} msg=${logfmtValue(r.message)}`
  for (const key of Object.keys(r.fields)) line += ` ${key}=${logfmtValue(r.fields[key])}`
  if (r.cause !== undefined) line += ` cause=${logfmtValue(r.cause)}`
  return line
}

const COLOR: Record<string, string> = {
  trace: "\x1b[90m",
  debug: "\x1b[36m",
  info: "\x1b[32m",
  warn: "\x1b[33m",
  error: "\x1b[31m",
  fatal: "\x1b[41m",
}

export const formatPretty = (r: LogRecord): string => {
  let line = `\x1b[2m${r.time.slice(11, 23)}\x1b[0m ${COLOR[r.level] ?? ""}${r.level.toUpperCase().padEnd(5)}\x1b[0m ${r.message}`
  for (const key of Object.keys(r.fields)) line += ` \x1b[2m${key}=\x1b[0m${logfmtValue(r.fields[key])}`
  if (r.cause !== undefined) line += `\n${r.cause.replace(/^/gm, "    ")}`
  return line
}

const FORMATTERS: Record<LogFormat, (r: LogRecord) => string> = {
  json: formatJson,
  logfmt: formatLogfmt,
  pretty: formatPretty,
}

export const makeLogger = (format: LogFormat, sink: LogSink): Logger.Logger<unknown, void> => {
  const render = FORMATTERS[format]
  return Logger.make((options) => {
    try {
      sink(render(toRecord(options)))
    } catch {
      // A log line must never take the fiber that logs it down.
    }
  })
}

// ------------------------------------------------------------------------------------------ the service

/**
 * The log's output, for lines written where building an Effect log call would cost more than the line
 * (the access line of every request, src/Observability/HttpObserver.ts).
 */
export class LogOutput extends Context.Tag("LogOutput")<
  LogOutput,
  {
    readonly enabled: (level: LogLevel.LogLevel) => boolean
    /** Writes one record; `fields` are trusted (no redaction pass): ids, numbers, route templates. */
    readonly write: (level: LogLevel.LogLevel, message: string, fields: Record<string, unknown>) => void
  }
>() {}

export interface LoggingOptions {
  readonly format: LogFormat
  readonly level: LogLevel.LogLevel
  readonly sink: LogSink
}

/** Replaces Effect's default logger and sets the minimum level; provides LogOutput on the same sink. */
export const loggingLayer = (options: LoggingOptions): Layer.Layer<LogOutput> => {
  const render = FORMATTERS[options.format]
  const output = LogOutput.of({
    enabled: (level) => LogLevel.greaterThanEqual(level, options.level),
    write: (level, message, fields) => {
      if (!LogLevel.greaterThanEqual(level, options.level)) return
      try {
        options.sink(
          render({
            time: new Date().toISOString(),
            level: LEVEL[level._tag] ?? "info",
            message,
            fields,
            cause: undefined,
          }),
        )
      } catch {
        // as above
      }
    },
  })
  return Layer.mergeAll(
    Logger.replace(Logger.defaultLogger, makeLogger(options.format, options.sink)),
    Logger.minimumLogLevel(options.level),
    Layer.succeed(LogOutput, output),
  )
}

const LEVELS: Record<string, LogLevel.LogLevel> = {
  all: LogLevel.All,
  trace: LogLevel.Trace,
  debug: LogLevel.Debug,
  info: LogLevel.Info,
  warn: LogLevel.Warning,
  warning: LogLevel.Warning,
  error: LogLevel.Error,
  fatal: LogLevel.Fatal,
  none: LogLevel.None,
}

/** LOG_FORMAT (json | logfmt | pretty; default pretty on a terminal, json otherwise) and LOG_LEVEL (default info). */
export const LoggingConfig = Config.all({
  format: Config.literal(
    "json",
    "logfmt",
    "pretty",
  )("LOG_FORMAT").pipe(Config.withDefault<LogFormat>(process.stdout.isTTY ? "pretty" : "json")),
  level: Config.literal(...(Object.keys(LEVELS) as [string, ...Array<string>]))("LOG_LEVEL").pipe(
    Config.withDefault("info"),
    Config.map((name) => LEVELS[name] ?? LogLevel.Info),
  ),
})

export const LoggingLive: Layer.Layer<LogOutput, import("effect/ConfigError").ConfigError> = Layer.unwrapEffect(
  Effect.map(LoggingConfig, ({ format, level }) => loggingLayer({ format, level, sink: stdoutSink })),
)
