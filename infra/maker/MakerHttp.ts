/**
 * The maker CLI's requests to the service. Resolves with the 2xx body; throws ServiceUnavailable for a network fault
 * (the error's name only: a message may quote the URL) or a 5xx/408/429, ServiceRefused for any other 4xx
 * (infra/maker/ServiceFaults.ts sorts them).
 */
import { backoffMs, classify, reachability, ServiceUnavailable } from "./ServiceFaults.ts"

/** An error's name only: messages of HTTP and chain clients may quote call arguments or an endpoint's URL. */
export const errorName = (e: unknown) => (e instanceof Error ? e.name : "error")

export const call = async (
  api: string,
  bearer: string | undefined,
  method: string,
  path: string,
  body?: unknown,
  // biome-ignore lint/suspicious/noExplicitAny: JSON as the API answers it
): Promise<any> => {
  let res: Response
  try {
    res = await fetch(`${api}${path}`, {
      method,
      headers: {
        ...(bearer === undefined ? {} : { authorization: `Bearer ${bearer}` }),
        ...(body === undefined ? {} : { "content-type": "application/json" }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      signal: AbortSignal.timeout(10_000),
    })
  } catch (e) {
    throw new ServiceUnavailable(errorName(e))
  }
  const json = (await res.json().catch(() => ({}))) as Record<string, unknown>
  classify(res.status, json, res.headers.get("retry-after"))
  return json
}

/**
 * `f` retried through transient faults (network, 5xx, 408, 429: capped jittered backoff, Retry-After honoured, one
 * log line per change of reachability) for at most `giveUpMs`; a permanent refusal (ServiceRefused) is thrown at once.
 */
export const retrying = async <A>(
  f: () => Promise<A>,
  log: (line: string) => void,
  { giveUpMs = 120_000, capMs = 5_000 }: { readonly giveUpMs?: number; readonly capMs?: number } = {},
): Promise<A> => {
  const service = reachability(log, "still trying")
  const started = Date.now()
  for (let attempt = 0; ; attempt++) {
    try {
      const a = await f()
      service.ok()
      return a
    } catch (e) {
      if (!(e instanceof ServiceUnavailable) || Date.now() - started > giveUpMs) throw e
      service.fault(e.reason)
      await new Promise((r) => setTimeout(r, backoffMs(attempt, 250, capMs, e.retryAfterMs)))
    }
  }
}
