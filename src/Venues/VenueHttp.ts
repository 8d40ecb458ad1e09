/**
 * One HTTP exchange with a venue, reduced to what classification needs: did the request certainly not leave,
 * did an answer come back (status and raw body), or did it go out without an answer we could read.
 *
 * The distinction is what keeps funds safe: only "never sent" and clear refusals permit a new attempt; anything
 * that may have reached the venue is Unknown upstream. A timeout is enforced by Effect (the fiber is interrupted,
 * which aborts the fetch), so the Clock governs it. No retries here: retrying a transfer is a policy decision.
 */
import type { HttpClient, HttpClientError, HttpClientRequest } from "@effect/platform"
import { Data, Duration, Effect } from "effect"

export type HttpAnswer = Data.TaggedEnum<{
  /** The venue answered (any status). `body` is the raw text. */
  Answered: { readonly status: number; readonly body: string }
  /** Certainly never delivered (refused connection, unknown host, bad URL): nothing can have been applied. */
  NotSent: { readonly reason: string }
  /** It may have been delivered: timeout, reset, truncated or unreadable answer. */
  NoAnswer: { readonly reason: string }
}>
export const HttpAnswer = Data.taggedEnum<HttpAnswer>()

/** Socket errors that happen before a single byte of the request can reach the server. */
const NOT_SENT_CODES = new Set(["ECONNREFUSED", "ENOTFOUND", "EAI_AGAIN", "ENETUNREACH", "EHOSTUNREACH"])

/** Walks `cause` links (fetch wraps the socket error: TypeError("fetch failed", { cause })) for an errno code. */
const socketCode = (error: unknown): string | undefined => {
  let current: unknown = error
  for (let depth = 0; depth < 6 && typeof current === "object" && current !== null; depth++) {
    const code = (current as { code?: unknown }).code
    if (typeof code === "string" && /^E[A-Z_]+$/.test(code)) return code
    current = (current as { cause?: unknown }).cause
  }
  return undefined
}

const describe = (error: unknown): string => (error instanceof Error ? error.message : String(error))

const classifyFailure = (error: HttpClientError.HttpClientError): HttpAnswer => {
  if (error._tag === "RequestError") {
    if (error.reason === "Encode" || error.reason === "InvalidUrl") {
      return HttpAnswer.NotSent({ reason: `${error.reason}: ${describe(error.cause)}` })
    }
    const code = socketCode(error.cause)
    if (code !== undefined && NOT_SENT_CODES.has(code)) return HttpAnswer.NotSent({ reason: `transport: ${code}` })
    return HttpAnswer.NoAnswer({ reason: `transport: ${code ?? describe(error.cause)}` })
  }
  // A ResponseError: a status line arrived but the body could not be read; the request was delivered.
  return HttpAnswer.NoAnswer({ reason: `answer unreadable (HTTP ${error.response.status}): ${error.reason}` })
}

/** Sends `request` and reads the whole answer within `timeoutMs`; never fails. */
export const exchange = (
  client: HttpClient.HttpClient,
  request: HttpClientRequest.HttpClientRequest,
  timeoutMs: number,
): Effect.Effect<HttpAnswer> =>
  client.execute(request).pipe(
    Effect.flatMap((response) =>
      Effect.map(response.text, (body) => HttpAnswer.Answered({ status: response.status, body })),
    ),
    Effect.timeoutFail({
      duration: Duration.millis(timeoutMs),
      onTimeout: () => HttpAnswer.NoAnswer({ reason: `no answer within ${timeoutMs} ms` }),
    }),
    Effect.catchAll((e) => Effect.succeed(e._tag === "NoAnswer" ? e : classifyFailure(e))),
  )

/** Parses JSON without throwing. */
export const parseJson = (text: string): unknown => {
  try {
    return JSON.parse(text) as unknown
  } catch {
    return undefined
  }
}

export const isRecord = (x: unknown): x is Readonly<Record<string, unknown>> =>
  typeof x === "object" && x !== null && !Array.isArray(x)

/**
 * HTTP statuses that mean the request was rejected before any processing (malformed, unauthorised, not found,
 * too large, rate limited, banned). Any other non-2xx status may hide an executed request.
 */
export const PRE_EXECUTION_STATUSES: ReadonlySet<number> = new Set([400, 401, 403, 404, 405, 413, 415, 418, 422, 429])
