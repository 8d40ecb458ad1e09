/**
 * The maker client's sorting of the service's answers (infra/maker/ServiceFaults.ts, issue 23): what is retried, what
 * stops quoting, how long a retry waits, and that an outage is logged once per change of state.
 */
import { describe, expect, it } from "vitest"
import {
  backoffMs,
  classify,
  reachability,
  retryAfterMs,
  ServiceRefused,
  ServiceUnavailable,
} from "../../infra/maker/ServiceFaults.ts"

describe("maker service faults", () => {
  it("a 2xx passes; 5xx, 408 and 429 are transient; any other 4xx is a refusal with its code and message", () => {
    expect(classify(200, {}, null)).toBeUndefined()
    for (const status of [500, 502, 503, 408, 429]) expect(() => classify(status, {}, null)).toThrow(ServiceUnavailable)
    for (const status of [400, 401, 403, 404, 409]) {
      expect(() => classify(status, { error: { code: "revoked", message: "credential revoked" } }, null)).toThrow(
        new ServiceRefused(status, "revoked", "credential revoked"),
      )
    }
  })

  it("Retry-After in seconds or as a date is honoured when longer than the drawn backoff", () => {
    expect(retryAfterMs("3", 0)).toBe(3000)
    expect(retryAfterMs(new Date(10_000).toUTCString(), 4_000)).toBe(6000)
    expect(retryAfterMs("soon", 0)).toBeUndefined()
    expect(retryAfterMs(null, 0)).toBeUndefined()
    expect(backoffMs(0, 250, 1000, 3000, () => 1)).toBe(3000)
  })

  it("backoff doubles its ceiling per attempt up to the cap, with jitter below it", () => {
    expect(backoffMs(0, 250, 1000, undefined, () => 1)).toBe(250)
    expect(backoffMs(1, 250, 1000, undefined, () => 1)).toBe(500)
    expect(backoffMs(10, 250, 1000, undefined, () => 1)).toBe(1000)
    expect(backoffMs(10, 250, 1000, undefined, () => 0.5)).toBe(500)
    expect(backoffMs(10, 250, 1000, undefined, () => 0)).toBe(62.5)
  })

  it("an outage is one line, and its end another", () => {
    const lines: Array<string> = []
    const r = reachability((l) => lines.push(l))
    r.ok()
    r.fault("TypeError")
    r.fault("HTTP 503")
    r.fault("TypeError")
    r.ok()
    r.ok()
    expect(lines).toEqual([
      "service unreachable (TypeError); retrying with backoff, reveals continue",
      "service reachable again (after: TypeError)",
    ])
  })
})
