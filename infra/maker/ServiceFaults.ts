/**
 * How the maker client treats the service's answers (issue 23): a network fault, a 5xx, a 408 or a 429 is transient
 * (retried with capped, jittered backoff, Retry-After honoured); any other 4xx is a permanent refusal (quoting stops,
 * revealing does not). One log line per change of state, never per retry.
 */

/** A transient fault: the request did not reach the service, or the service asked to be asked again. */
export class ServiceUnavailable extends Error {
  constructor(
    readonly reason: string,
    /** The service's Retry-After, in milliseconds, when it gave one. */
    readonly retryAfterMs?: number,
  ) {
    super(`service unavailable (${reason})`)
  }
}

/** A permanent refusal (4xx other than 408/429): the request will not succeed by being sent again. */
export class ServiceRefused extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    readonly detail: string,
  ) {
    super(`${status} ${code}: ${detail}`)
  }
}

/** Retry-After (delta seconds or an HTTP date) in milliseconds, at most an hour; undefined when absent or invalid. */
export const retryAfterMs = (header: string | null, nowMs: number): number | undefined => {
  if (header === null || header.trim() === "") return undefined
  const seconds = Number(header)
  const ms = Number.isFinite(seconds) ? seconds * 1000 : Date.parse(header) - nowMs
  return Number.isFinite(ms) && ms >= 0 ? Math.min(ms, 3_600_000) : undefined
}

/** Sorts an answer: 2xx returned, transient faults and permanent refusals thrown as the classes above. */
export const classify = (status: number, json: Record<string, unknown>, retryAfter: string | null) => {
  if (status >= 200 && status < 300) return
  if (status >= 500 || status === 408 || status === 429) {
    throw new ServiceUnavailable(`HTTP ${status}`, retryAfterMs(retryAfter, Date.now()))
  }
  const error = (json.error ?? {}) as { code?: unknown; message?: unknown }
  throw new ServiceRefused(status, String(error.code ?? "unknown"), String(error.message ?? ""))
}

/**
 * Capped exponential backoff with full jitter (ms): attempt 0 waits up to `baseMs`, each further attempt doubles the
 * ceiling up to `capMs`. A Retry-After longer than the draw is waited out instead.
 */
export const backoffMs = (
  attempt: number,
  baseMs: number,
  capMs: number,
  retryAfter?: number,
  random = Math.random,
) => {
  const ceiling = Math.min(capMs, baseMs * 2 ** Math.min(attempt, 30))
  const draw = Math.max(baseMs / 4, ceiling * random())
  return retryAfter !== undefined && retryAfter > draw ? retryAfter : draw
}

/**
 * The service's reachability as the client last saw it; `report` logs only when it changes (down → up, up → down),
 * so a long outage is one line, not one per retry.
 */
export const reachability = (log: (line: string) => void, meanwhile = "reveals continue") => {
  let down: string | undefined
  return {
    ok: () => {
      if (down !== undefined) log(`service reachable again (after: ${down})`)
      down = undefined
    },
    fault: (reason: string) => {
      if (down === undefined) log(`service unreachable (${reason}); retrying with backoff, ${meanwhile}`)
      down = reason
    },
    isDown: () => down !== undefined,
  }
}

/** Sleeps that a stop request (SIGINT/SIGTERM) cuts short. */
export const stopper = () => {
  let stopped = false
  const wakers = new Set<() => void>()
  return {
    stop: () => {
      stopped = true
      for (const w of wakers) w()
      wakers.clear()
    },
    stopped: () => stopped,
    sleep: (ms: number) =>
      new Promise<void>((resolve) => {
        if (stopped) return resolve()
        const done = () => {
          clearTimeout(timer)
          wakers.delete(done)
          resolve()
        }
        const timer = setTimeout(done, ms)
        wakers.add(done)
      }),
  }
}
