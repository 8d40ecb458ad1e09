import * as OtlpSerialization from "@effect/opentelemetry/OtlpSerialization"
import * as OtlpTracer from "@effect/opentelemetry/OtlpTracer"
import { FetchHttpClient } from "@effect/platform"
import { Cause, Config, Context, Duration, Effect, Exit, Layer, Logger, Option, Tracer } from "effect"
import { redactingTracerLogger, renderCause } from "./Log.ts"

/**
 * Traces (issue 17 item 3). Spans: the request's server span (src/Http/GlobalMiddleware.ts, named by the
 * route template, with `request_id`), the SQL client's own `sql.execute` / `sql.transaction` spans,
 * `relayer.submit` (src/Relayer.ts) and the TxRelayer's `relayer.sent`, parented on the submitting
 * span through the `trace_parent` stored on the relayer row (migration 0024), so a relayed call's trace
 * runs from the HTTP request into the actor that sends it.
 *
 * Exported over OTLP/HTTP (JSON) by @effect/opentelemetry's OtlpTracer when OTEL_EXPORTER_OTLP_ENDPOINT
 * (`/v1/traces` is appended) or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT (used as is) is set; headers from
 * OTEL_EXPORTER_OTLP_HEADERS (`k=v,k=v`), service name OTEL_SERVICE_NAME (default settlement-service).
 * Unset, nothing is exported, the server span is not even made and Effect's tracer is off (TracingOff).
 */

export class Tracing extends Context.Tag("Tracing")<Tracing, { readonly enabled: boolean }>() {}

export interface TracingOptions {
  /** The OTLP/HTTP traces URL, e.g. http://collector:4318/v1/traces. */
  readonly url: string
  readonly headers?: Readonly<Record<string, string>>
  readonly serviceName?: string
  /** How often batches are sent (default 5 s; tests shorten it). */
  readonly exportInterval?: Duration.DurationInput
}

/** An error as the log shows it: name and masked message chain, and a stack of that one line (no frames). */
class ScrubbedError extends Error {
  constructor(name: string, message: string) {
    super(message)
    this.name = name
    this.stack = `${name}: ${message}`
  }
}

/**
 * A failed span's cause as the collector gets it: one error, named as the first, whose message is the log's
 * `renderCause` (masked, no frames). OtlpTracer otherwise exports `Cause.pretty` as `exception.stacktrace`: the
 * stack frames and nested causes the log never shows (the guide: no stack trace in a log).
 */
export const scrubCause = (cause: Cause.Cause<unknown>): Cause.Cause<unknown> => {
  if (Cause.isInterruptedOnly(cause)) return cause
  const name = Cause.prettyErrors(cause)[0]?.name ?? "Error"
  const text = renderCause(cause)
  return Cause.fail(new ScrubbedError(name, text.startsWith(`${name}: `) ? text.slice(name.length + 2) : text))
}

/** `tracer`'s spans end with scrubbed causes and never take Effect.fn's `code.stacktrace` attribute. */
export const scrubbedTracer = (tracer: Tracer.Tracer): Tracer.Tracer =>
  Tracer.make({
    span: (name, parent, context, links, startTime, kind, options) => {
      const span = tracer.span(name, parent, context, links, startTime, kind, options)
      const end = span.end.bind(span)
      const attribute = span.attribute.bind(span)
      return Object.assign(span, {
        end: (endTime: bigint, exit: Exit.Exit<unknown, unknown>) =>
          end(endTime, Exit.isFailure(exit) ? Exit.failCause(scrubCause(exit.cause)) : exit),
        attribute: (key: string, value: unknown) => (key === "code.stacktrace" ? undefined : attribute(key, value)),
      })
    },
    context: (f, fiber) => tracer.context(f, fiber),
  })

/**
 * The OTLP tracer (scrubbed) as Effect's tracer, log lines inside spans as redacted span events (Log.ts), and
 * `Tracing.enabled`.
 */
export const tracingLayer = (options: TracingOptions): Layer.Layer<Tracing> =>
  Layer.mergeAll(
    Logger.replace(Logger.tracerLogger, redactingTracerLogger),
    Layer.unwrapScoped(
      Effect.map(
        OtlpTracer.make({
          url: options.url,
          resource: { serviceName: options.serviceName ?? "settlement-service" },
          ...(options.headers === undefined ? {} : { headers: options.headers }),
          exportInterval: options.exportInterval ?? Duration.seconds(5),
        }),
        (tracer) => Layer.setTracer(scrubbedTracer(tracer)),
      ),
    ).pipe(Layer.provide(OtlpSerialization.layerJson), Layer.provide(FetchHttpClient.layer)),
    Layer.succeed(Tracing, { enabled: true }),
  )

/**
 * No exporter: Effect's tracer is switched off, so `Effect.fn`/`withSpan`, the RPC client and server and the SQL
 * client make no-op spans (no clock reads, attributes or span objects kept per call) instead of native spans
 * that nobody reads. About a tenth of a lease renewal's CPU (issue 22). Provided at the root (main.ts), so every
 * fiber the layers fork inherits it; `currentTraceParent` is then null, as nothing continues a trace.
 */
export const TracingOff: Layer.Layer<Tracing> = Layer.merge(
  Layer.succeed(Tracing, { enabled: false }),
  Layer.setTracerEnabled(false),
)

/** `k=v,k=v` (values may be percent-encoded, as the OTLP exporter spec allows). */
export const parseOtlpHeaders = (text: string): Record<string, string> => {
  const out: Record<string, string> = {}
  for (const pair of text.split(",")) {
    const eq = pair.indexOf("=")
    if (eq <= 0) continue
    out[pair.slice(0, eq).trim()] = decodeURIComponent(pair.slice(eq + 1).trim())
  }
  return out
}

/** The traces URL from the standard variables, if any. */
export const tracesUrl = (endpoint: Option.Option<string>, tracesEndpoint: Option.Option<string>) =>
  Option.orElse(tracesEndpoint, () => Option.map(endpoint, (e) => `${e.replace(/\/+$/, "")}/v1/traces`))

export const TracingLive: Layer.Layer<Tracing, import("effect/ConfigError").ConfigError> = Layer.unwrapEffect(
  Effect.gen(function* () {
    const nonEmpty = (name: string) =>
      Config.option(Config.string(name)).pipe(Config.map(Option.filter((s) => s.trim() !== "")))
    const url = tracesUrl(
      yield* nonEmpty("OTEL_EXPORTER_OTLP_ENDPOINT"),
      yield* nonEmpty("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"),
    )
    if (Option.isNone(url)) return TracingOff
    const headers = yield* nonEmpty("OTEL_EXPORTER_OTLP_HEADERS")
    const serviceName = yield* nonEmpty("OTEL_SERVICE_NAME")
    return tracingLayer({
      url: url.value,
      ...(Option.isSome(headers) ? { headers: parseOtlpHeaders(headers.value) } : {}),
      ...(Option.isSome(serviceName) ? { serviceName: serviceName.value } : {}),
    })
  }),
)

// ------------------------------------------------------------------------------------------ trace parents

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/

/** The current span as a W3C `traceparent`, to store with work another fiber picks up later; null without one. */
export const currentTraceParent: Effect.Effect<string | null> = Effect.map(Effect.currentSpan, (span) =>
  span.sampled && /^[0-9a-f]{32}$/.test(span.traceId) && /^[0-9a-f]{16}$/.test(span.spanId)
    ? `00-${span.traceId}-${span.spanId}-01`
    : null,
).pipe(Effect.orElseSucceed(() => null))

/** A stored `traceparent` as a parent span for work done later (another fiber, another runner). */
export const parentOf = (traceParent: string | null): Tracer.ExternalSpan | undefined => {
  const m = traceParent === null ? null : TRACEPARENT.exec(traceParent)
  return m === null ? undefined : Tracer.externalSpan({ traceId: m[1]!, spanId: m[2]!, sampled: m[3] === "01" })
}
