import { HttpApiBuilder, HttpApiError, type HttpApp, HttpServerError, HttpServerRequest } from "@effect/platform"
import { Cause, Effect, Either, FiberRef, Layer, Option } from "effect"
import { AppConfig } from "../Config.ts"
import {
  type CatalogueError,
  Internal,
  InvalidRequest,
  MethodNotAllowed,
  NotFound,
  PayloadTooLarge,
} from "../Domain/Errors.ts"
import { limitBody, refuseUnexpectedBody } from "./BodyLimit.ts"
import { envelopeResponse } from "./Envelope.ts"
import { allowedMethods, bodilessRoute, type Route } from "./RouteTable.ts"
import { bearerAuthenticator, DeferredToken } from "./Security.ts"

/**
 * Renders into the envelope every failure that would otherwise get the platform's bodiless
 * default: request decode errors, unknown routes (404, or 405 when the path exists), malformed or
 * oversized bodies, and defects (500 INTERNAL, retryable, no internals). It runs inside HttpApi,
 * before its error encoder, where these are still failures; declared errors pass through.
 */
const renderFailures =
  (
    methodsFor: (pathname: string) => ReadonlyArray<string>,
    authenticate: (header: string | undefined) => Effect.Effect<unknown, CatalogueError>,
  ) =>
  (app: HttpApp.Default): HttpApp.Default =>
    Effect.catchAllCause(app, (cause) =>
      Effect.gen(function* () {
        const failure = Option.getOrUndefined(Cause.failureOption(cause)) as unknown
        const defect = Option.getOrUndefined(Cause.dieOption(cause))
        const error = failure ?? defect
        if (failure !== undefined && defect === undefined && !isFrameworkError(failure)) {
          return yield* Effect.failCause(cause)
        }
        // A route that authenticates in its own statement never ran: its bearer is checked (and charged) now, before
        // the request's own 400 (src/Http/Security.ts DeferredAuthentication).
        const deferred = yield* FiberRef.get(DeferredToken)
        if (deferred !== undefined && (error instanceof HttpApiError.HttpApiDecodeError || isBodyError(error))) {
          const refused = yield* Effect.either(authenticate(`Bearer ${deferred}`))
          if (Either.isLeft(refused)) return yield* envelopeResponse(refused.left)
        }
        if (error instanceof HttpApiError.HttpApiDecodeError) {
          return yield* envelopeResponse(new InvalidRequest({ message: describeDecodeError(error) }))
        }
        const request = yield* HttpServerRequest.HttpServerRequest
        if (error instanceof HttpServerError.RouteNotFound) {
          const pathname = new URL(request.url, "http://localhost").pathname
          const allowed = methodsFor(pathname)
          return allowed.length > 0
            ? yield* envelopeResponse(
                new MethodNotAllowed({ message: `${request.method} is not allowed on ${pathname}` }),
                {
                  headers: { allow: allowed.join(", ") },
                },
              )
            : yield* envelopeResponse(new NotFound({ message: `no route ${pathname}` }))
        }
        if (error instanceof HttpServerError.RequestError) {
          if (String(error.cause).includes("maxBytes exceeded")) {
            return yield* envelopeResponse(new PayloadTooLarge({ message: "request body too large" }), {
              headers: { connection: "close" },
            })
          }
          return yield* envelopeResponse(new InvalidRequest({ message: "malformed request body: expected valid JSON" }))
        }
        if (Cause.isInterruptedOnly(cause)) return yield* Effect.failCause(cause)
        yield* Effect.logError("unexpected failure", {
          method: request.method,
          url: request.url,
          error: summarize(error ?? Cause.squash(cause)),
        })
        return yield* envelopeResponse(new Internal({ message: "internal error" }))
      }),
    )

/** The body limit applies before any handler reads the body; everything below renders envelopes. */
export const apiMiddleware = (routes: ReadonlyArray<Route>) =>
  Layer.unwrapEffect(
    Effect.gen(function* () {
      const config = yield* AppConfig
      const { authenticate } = yield* bearerAuthenticator
      const render = renderFailures(allowedMethods(routes), authenticate)
      const noBody = refuseUnexpectedBody(bodilessRoute(routes))
      return HttpApiBuilder.middleware((app) => render(limitBody(config.deployment.limits.body_bytes)(noBody(app))))
    }),
  )

/** A body the request could not be read as (not its size: that is a 413 whoever sends it). */
const isBodyError = (u: unknown) =>
  u instanceof HttpServerError.RequestError && !String(u.cause).includes("maxBytes exceeded")

const isFrameworkError = (u: unknown) =>
  u instanceof HttpApiError.HttpApiDecodeError ||
  u instanceof HttpServerError.RouteNotFound ||
  u instanceof HttpServerError.RequestError

/** The error's class and message only: no stack trace reaches the log. */
const summarize = (u: unknown): string => {
  const e = u instanceof Error ? `${u.name}: ${u.message}` : String(u)
  return e.length > 300 ? `${e.slice(0, 300)}…` : e
}

/**
 * `path: message` per issue. Values the client sent are cut from the text so that a signature or
 * token is never echoed back.
 */
export const describeDecodeError = (e: HttpApiError.HttpApiDecodeError): string => {
  const parts = e.issues.slice(0, 5).map((i) => {
    const where = i.path.length > 0 ? i.path.map(String).join(".") : "request"
    const what = i.message
      .replace(/,?\s*actual\b[\s\S]*$/, "")
      .replace(/\s+/g, " ")
      .trim()
    return `${where}: ${what.length > 200 ? `${what.slice(0, 200)}…` : what}`
  })
  return parts.length > 0 ? parts.join("; ") : "invalid request"
}
