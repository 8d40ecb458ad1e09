/**
 * The maker CLI's requests to the service, through the typed client derived from the HttpApi contract
 * (src/Client/ApiClient.ts): `const api = apiOf(url, bearer)`, then
 * `await api((c) => c.quoteIdentities.renewLease({ … }))` resolves with the decoded 2xx answer. Failures are sorted
 * as infra/maker/ServiceFaults.ts does: a network fault (the error's name only: a message may quote the URL), a 5xx,
 * 408 or 429 is ServiceUnavailable (with the service's Retry-After), any other answer ServiceRefused with the
 * envelope's code and message.
 */
import { Cause, Effect, Exit, Option } from "effect"
import { type ApiFailure, makeApiClient, type RawClient, request } from "../../src/Client/ApiClient.ts"
import { backoffMs, reachability, ServiceRefused, ServiceUnavailable } from "./ServiceFaults.ts"

/** An error's name only: messages of HTTP and chain clients may quote call arguments or an endpoint's URL. */
export const errorName = (e: unknown) => (e instanceof Error ? e.name : "error")

const toFault = (e: ApiFailure) =>
  e._tag === "ApiUnreachable"
    ? new ServiceUnavailable(e.reason)
    : e.status >= 500 || e.status === 408 || e.status === 429
      ? new ServiceUnavailable(`HTTP ${e.status}`, e.retryAfterMs)
      : new ServiceRefused(e.status, e.code, e.message)

export type Api = <A, E>(f: (client: RawClient) => Effect.Effect<A, E>) => Promise<A>

/** Calls to `base` with `bearer` (a session token or `mk_` credential; none for public routes). */
export const apiOf = (base: string, bearer?: string): Api => {
  // No retry inside the client: the bot and the commands back off themselves (one line per outage).
  const client = Effect.runPromise(makeApiClient(base, { bearer, retries: 0, timeout: "10 seconds" }))
  return async (f) => {
    const exit = await Effect.runPromiseExit(request(f(await client)))
    if (Exit.isSuccess(exit)) return exit.value
    const failure = Cause.failureOption(exit.cause)
    throw Option.isSome(failure) ? toFault(failure.value) : new ServiceUnavailable("defect")
  }
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
