import { describe, expect, it } from "@effect/vitest"
import { ConfigProvider, Effect, Fiber, FiberRef, Option } from "effect"
import {
  currentTraceParent,
  parentOf,
  parseOtlpHeaders,
  TracingLive,
  tracesUrl,
} from "../../src/Observability/Tracing.ts"

describe("tracing configuration (OTLP variables)", () => {
  it("the traces URL: the traces endpoint as is, else the endpoint with /v1/traces, else none (tracing off)", () => {
    expect(tracesUrl(Option.some("http://c:4318"), Option.none())).toEqual(Option.some("http://c:4318/v1/traces"))
    expect(tracesUrl(Option.some("http://c:4318/"), Option.none())).toEqual(Option.some("http://c:4318/v1/traces"))
    expect(tracesUrl(Option.some("http://c:4318"), Option.some("http://t/x"))).toEqual(Option.some("http://t/x"))
    expect(tracesUrl(Option.none(), Option.none())).toEqual(Option.none())
  })
  it("headers: k=v pairs, percent-decoded; malformed pairs skipped", () => {
    expect(parseOtlpHeaders("api-key=a%20b, x=1,bad,=no")).toEqual({ "api-key": "a b", x: "1" })
  })
  it("a stored traceparent becomes a parent span; anything else none", () => {
    const t = "0af7651916cd43dd8448eb211c80319c"
    expect(parentOf(`00-${t}-b7ad6b7169203331-01`)).toMatchObject({
      traceId: t,
      spanId: "b7ad6b7169203331",
      sampled: true,
    })
    expect(parentOf(null)).toBeUndefined()
    expect(parentOf("00-xyz-01")).toBeUndefined()
  })

  // What a forked fiber sees: whether the tracer is on, and the trace a span inside it would continue.
  const probe = Effect.fork(
    Effect.all([FiberRef.get(FiberRef.currentTracerEnabled), currentTraceParent.pipe(Effect.withSpan("probe"))]),
  ).pipe(Effect.flatMap(Fiber.join))
  it.effect("no OTLP endpoint: Effect's tracer is off in every fiber forked under it; no span to continue", () =>
    Effect.gen(function* () {
      // Effect's default, for contrast: native spans, sampled, so a trace parent exists.
      const [onByDefault, parentByDefault] = yield* probe
      expect(onByDefault).toBe(true)
      expect(parentByDefault).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/)
      const noEndpoint = ConfigProvider.fromMap(new Map([["OTEL_SERVICE_NAME", "x"]]))
      const off = yield* probe.pipe(Effect.provide(TracingLive), Effect.withConfigProvider(noEndpoint))
      expect(off).toEqual([false, null])
    }),
  )
})
