import { Data, Duration, Effect, Schedule } from "effect"
import { BaseError, HttpRequestError, RpcRequestError, TimeoutError } from "viem"

/**
 * A failed JSON-RPC call, classified once where it happens:
 * - `retryable`: the same call may succeed later (network, timeout, 5xx, 429, node busy, unknown);
 * - terminal: it will not (malformed request, method missing, invalid params, chain id mismatch);
 * - `rangeTooLarge`: the node refused the size of an `eth_getLogs` range; the caller shrinks it.
 * The classification reads structured fields (JSON-RPC code, HTTP status, error class), never the
 * message text, except for the range refusal, which nodes only express in text.
 */
export class RpcError extends Data.TaggedError("RpcError")<{
  readonly method: string
  readonly message: string
  readonly retryable: boolean
  readonly rangeTooLarge: boolean
  readonly cause?: unknown
}> {}

/** JSON-RPC codes that mean the request itself is wrong (or reverts): repeating it cannot help. */
const TERMINAL_CODES = new Set([3, -32700, -32600, -32601, -32602, -32004, -32006])
/** HTTP statuses that mean the endpoint will never serve this request. */
const TERMINAL_STATUS = new Set([400, 401, 403, 404, 405, 501, 505])
const LIMIT_EXCEEDED = -32005

const findField = (error: unknown, field: "code" | "status"): number | undefined => {
  let current: unknown = error
  for (let depth = 0; depth < 8 && current !== undefined && current !== null; depth++) {
    const value = (current as Record<string, unknown>)[field]
    if (typeof value === "number") return value
    current = (current as { cause?: unknown }).cause
  }
  return undefined
}

const shortMessage = (error: unknown): string => {
  if (error instanceof BaseError) {
    // viem's short message of an unknown error says nothing; its details carry the cause.
    return error.details && !error.shortMessage.includes(error.details)
      ? `${error.shortMessage} ${error.details}`.slice(0, 300)
      : error.shortMessage
  }
  if (error instanceof Error) return error.message
  return String(error)
}

/** Classifies any error thrown by a viem request. */
export const classifyRpcError = (method: string, error: unknown): RpcError => {
  const message = shortMessage(error)
  const details = error instanceof BaseError ? `${error.details ?? ""} ${message}` : message
  // Node-specific wording for "your range returns too many logs": the only text we read.
  const rangeTooLarge =
    method === "eth_getLogs" &&
    (findField(error, "code") === LIMIT_EXCEEDED ||
      /block range|range (is )?too (large|wide|big)|too many (logs|results)|more than \d+ (logs|results)|query returned more/i.test(
        details,
      ) ||
      findField(error, "status") === 413)
  if (rangeTooLarge) return new RpcError({ method, message, retryable: true, rangeTooLarge: true, cause: error })
  const timeout = error instanceof BaseError && error.walk((e) => e instanceof TimeoutError) !== null
  if (timeout) return new RpcError({ method, message, retryable: true, rangeTooLarge: false, cause: error })
  const rpc = error instanceof BaseError ? error.walk((e) => e instanceof RpcRequestError) : null
  const code = findField(rpc ?? error, "code")
  if (code !== undefined && TERMINAL_CODES.has(code)) {
    return new RpcError({ method, message, retryable: false, rangeTooLarge: false, cause: error })
  }
  const http = error instanceof BaseError ? error.walk((e) => e instanceof HttpRequestError) : null
  const status = http instanceof HttpRequestError ? http.status : undefined
  if (status !== undefined && TERMINAL_STATUS.has(status)) {
    return new RpcError({ method, message, retryable: false, rangeTooLarge: false, cause: error })
  }
  return new RpcError({ method, message, retryable: true, rangeTooLarge: false, cause: error })
}

/** Runs one viem request as an Effect failing with a classified RpcError. */
export const rpc = <A>(method: string, run: (signal: AbortSignal) => Promise<A>): Effect.Effect<A, RpcError> =>
  Effect.tryPromise({ try: run, catch: (e) => classifyRpcError(method, e) })

/** Quick in-call retries of retryable errors (a blip must not flip readiness); terminal errors pass at once. */
export const retryRpc = <A, R>(effect: Effect.Effect<A, RpcError, R>, times = 2): Effect.Effect<A, RpcError, R> =>
  Effect.retry(effect, {
    schedule: Schedule.exponential(Duration.millis(100), 2).pipe(Schedule.jittered),
    times,
    while: (e) => e.retryable && !e.rangeTooLarge,
  })
