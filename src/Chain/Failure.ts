import { Cause } from "effect"
import { maskText } from "../Observability/Log.ts"
import { RpcError } from "./RpcError.ts"

const causeMessage = (e: unknown): string => {
  const inner = (e as { cause?: unknown }).cause
  return inner instanceof Error ? `: ${inner.message}` : ""
}

/**
 * One line for a failed watcher poll or relayer pass, for the status row and the logs: the RPC
 * method and message, a tagged error's tag and message (and its cause's message, e.g. the SQL
 * error behind "Failed to execute statement"), a defect's message. No stack traces.
 */
export const describeCause = (cause: Cause.Cause<unknown>): string => {
  const failure = Cause.failureOption(cause)
  if (failure._tag === "Some") {
    const e = failure.value
    if (e instanceof RpcError) return `rpc ${e.method}: ${e.message}`
    if (typeof e === "object" && e !== null && "_tag" in e) {
      const tagged = e as { _tag: string; message?: string }
      return `${tagged._tag}${tagged.message ? `: ${tagged.message}` : ""}${causeMessage(e)}`
    }
    if (e instanceof Error) return `${e.message}${causeMessage(e)}`
    return String(e)
  }
  const defect = Cause.dieOption(cause)
  if (defect._tag === "Some") return defect.value instanceof Error ? defect.value.message : String(defect.value)
  return "interrupted"
}

/**
 * describeCause for what anyone may read (/health's `last_failure` and chain `error`, a transaction's `error`):
 * its first line only (viem puts the URL and the request body, calldata and addresses, on the lines below),
 * masked like a log line (tokens, signature-length hex, URL paths and queries), at most 300 characters.
 */
export const publicDescription = (cause: Cause.Cause<unknown>): string =>
  maskText(describeCause(cause).split("\n")[0] ?? "").slice(0, 300)

/** True for failures that retrying soon cannot fix (terminal RPC errors). */
export const isTerminal = (cause: Cause.Cause<unknown>): boolean => {
  const failure = Cause.failureOption(cause)
  return failure._tag === "Some" && failure.value instanceof RpcError && !failure.value.retryable
}
