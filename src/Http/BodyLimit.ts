import type { IncomingMessage } from "node:http"
import { type HttpApp, HttpIncomingMessage, HttpMethod, HttpServerRequest } from "@effect/platform"
import { NodeHttpServerRequest } from "@effect/platform-node"
import { Effect, Option } from "effect"
import { InvalidRequest, PayloadTooLarge } from "../Domain/Errors.ts"
import { exceedsJsonDepth, tooDeepMessage } from "../Domain/JsonDepth.ts"
import { envelopeResponse } from "./Envelope.ts"

const TOO_LARGE = Symbol("too-large")

/** Reads a body of unknown length, stopping at `limit` bytes; the rest is drained and discarded. */
const readLimited = (source: IncomingMessage, limit: number) =>
  Effect.async<Buffer | typeof TOO_LARGE, Error>((resume) => {
    const chunks: Array<Buffer> = []
    let size = 0
    const cleanup = () => {
      source.off("data", onData)
      source.off("end", onEnd)
      source.off("error", onError)
    }
    const onData = (chunk: Buffer) => {
      size += chunk.length
      if (size > limit) {
        cleanup()
        source.resume()
        resume(Effect.succeed(TOO_LARGE))
      } else chunks.push(chunk)
    }
    const onEnd = () => {
      cleanup()
      resume(Effect.succeed(Buffer.concat(chunks)))
    }
    const onError = (e: Error) => {
      cleanup()
      resume(Effect.fail(e))
    }
    source.on("data", onData)
    source.on("end", onEnd)
    source.on("error", onError)
    return Effect.sync(cleanup)
  })

const tooLarge = (limit: number) =>
  envelopeResponse(new PayloadTooLarge({ message: `request body exceeds ${limit} bytes` }), {
    headers: { connection: "close" },
  })

const tooDeep = envelopeResponse(new InvalidRequest({ message: tooDeepMessage("the request body") }))

// PostgreSQL's text and jsonb refuse U+0000: a string holding it must be a 400 here, not a failed insert later.
// JSON can carry it only as the escape `\u0000` preceded by an even number of backslashes (an odd number would make
// the escape's own backslash a literal one).
const ESCAPED_NUL = /(?:^|[^\\])(?:\\\\)*\\u0000/
const hasNul = envelopeResponse(new InvalidRequest({ message: "a string in the request body holds U+0000 (NUL)" }))

// Every payload is JSON, but the platform parses a body by its content type: a multipart one to parts (files on
// disk), and one with a malformed boundary kills the request (500). Such a body is refused at the door, as a too
// deep one is, before its bearer is checked.
const isMultipart = (request: HttpServerRequest.HttpServerRequest) =>
  HttpMethod.hasBody(request.method) && (request.headers["content-type"] ?? "").toLowerCase().includes("multipart/")
const multipart = envelopeResponse(
  new InvalidRequest({ message: "multipart bodies are not accepted: request bodies are JSON (application/json)" }),
)

/** What the body's text refuses before anything parses it (too deep, a NUL), or undefined. */
const refusal = (text: string) => (exceedsJsonDepth(text) ? tooDeep : ESCAPED_NUL.test(text) ? hasNul : undefined)

/**
 * Whether the framework will JSON.parse this request's body: HttpApi decodes the payload of a method
 * with a body as JSON when its content type says so or is missing.
 */
const readsJson = (request: HttpServerRequest.HttpServerRequest) => {
  if (!HttpMethod.hasBody(request.method)) return false
  const type = request.headers["content-type"]
  return type === undefined || type.toLowerCase().includes("application/json")
}

/**
 * Refuses a JSON body nested deeper than MAX_JSON_DEPTH, or holding a NUL, before anything parses it. The
 * body text is read here within the limit; the platform caches it on the request, so the handler's decoding
 * reads the same text again without touching the socket. A body that cannot be read is left to the app,
 * which fails on the same cached read (413 or 400).
 */
const limitDepth = <E, R>(
  limited: HttpApp.Default<E, R>,
  request: HttpServerRequest.HttpServerRequest,
  limit: number,
) =>
  Effect.gen(function* () {
    if (!readsJson(request)) return yield* limited
    const text = yield* request.text.pipe(HttpIncomingMessage.withMaxBodySize(Option.some(limit)), Effect.option)
    const refused = Option.isSome(text) ? refusal(text.value) : undefined
    return yield* refused ?? limited
  })

/**
 * Enforces the body limit before any handler reads the body. A declared Content-Length is checked
 * up front; a chunked body is buffered here up to the limit, because the platform's own limit
 * destroys the socket instead of answering 413. A JSON body nested too deeply or holding a NUL, and a multipart
 * body, are refused here too.
 */
export const limitBody =
  (limit: number) =>
  <E, R>(app: HttpApp.Default<E, R>): HttpApp.Default<E, R> =>
    Effect.gen(function* () {
      const request = yield* HttpServerRequest.HttpServerRequest
      const declared = request.headers["content-length"]
      const limited = app.pipe(HttpIncomingMessage.withMaxBodySize(Option.some(limit)))
      if (isMultipart(request)) return yield* multipart
      if (declared !== undefined) {
        if (!/^\d{1,15}$/.test(declared))
          return yield* envelopeResponse(new InvalidRequest({ message: "bad Content-Length" }))
        if (Number(declared) > limit) return yield* tooLarge(limit)
        return Number(declared) > 0 ? yield* limitDepth(limited, request, limit) : yield* limited
      }
      if (request.headers["transfer-encoding"] === undefined) return yield* limited
      const source = NodeHttpServerRequest.toIncomingMessage(request)
      const body = yield* readLimited(source, limit).pipe(Effect.orElseSucceed(() => undefined))
      if (body === undefined)
        return yield* envelopeResponse(new InvalidRequest({ message: "request body could not be read" }))
      if (body === TOO_LARGE) return yield* tooLarge(limit)
      const refused = readsJson(request) ? refusal(body.toString("utf8")) : undefined
      if (refused !== undefined) return yield* refused
      // A GET or HEAD sent with a (chunked) body: read and ignored, as with a declared length (a Request with
      // those methods may carry no body at all).
      const carried = HttpMethod.hasBody(request.method) ? body : undefined
      const headers = { ...request.headers, "content-length": String(carried?.length ?? 0) }
      delete (headers as Record<string, string>)["transfer-encoding"]
      const buffered = HttpServerRequest.fromWeb(
        new Request(new URL(request.url, "http://localhost"), {
          method: request.method,
          headers,
          ...(carried === undefined ? {} : { body: carried }),
        }),
      ).modify({
        url: request.url,
        // The raw socket's address, which ClientIdentity reads from a rebuilt request (it has no socket).
        ...(source.socket?.remoteAddress === undefined ? {} : { remoteAddress: source.socket.remoteAddress }),
      })
      return yield* Effect.provideService(limited, HttpServerRequest.HttpServerRequest, buffered)
    })

/** An empty body, or `{}`: nothing a route without a payload would have to reject. */
const isEmptyBody = (text: string) => {
  const trimmed = text.trim()
  if (trimmed === "") return true
  try {
    const value: unknown = JSON.parse(trimmed)
    return typeof value === "object" && value !== null && !Array.isArray(value) && Object.keys(value).length === 0
  } catch {
    return false
  }
}

/**
 * A POST/PUT/PATCH/DELETE route that declares no body refuses one with anything in it (spec, Wire conventions 1:
 * unknown fields are rejected) with 400 INVALID_REQUEST; an empty body and `{}` pass. Runs inside limitBody, so
 * the read is within the limit (and a chunked body was buffered there); the text is cached for the app.
 */
export const refuseUnexpectedBody =
  (bodiless: (method: string, pathname: string) => boolean) =>
  <E, R>(app: HttpApp.Default<E, R>): HttpApp.Default<E, R> =>
    Effect.gen(function* () {
      const request = yield* HttpServerRequest.HttpServerRequest
      if (!HttpMethod.hasBody(request.method)) return yield* app
      if (!bodiless(request.method, new URL(request.url, "http://localhost").pathname)) return yield* app
      const text = yield* request.text.pipe(Effect.option)
      if (Option.isNone(text) || isEmptyBody(text.value)) return yield* app
      return yield* envelopeResponse(
        new InvalidRequest({ message: "this route takes no request body (send none, or {})" }),
      )
    })
