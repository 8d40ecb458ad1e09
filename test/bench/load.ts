import { Agent, request } from "node:http"

export interface LoadResult {
  readonly requests: number
  readonly errors: number
  readonly seconds: number
  readonly rps: number
  readonly p50ms: number
  readonly p99ms: number
}

const percentile = (sorted: Float64Array, p: number) =>
  sorted.length === 0 ? 0 : sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!

/**
 * A closed-loop load generator: `concurrency` keep-alive connections, each sending the next GET as
 * soon as the previous answer is read, for `seconds`. Bounded in time; loopback only.
 */
export const load = async (url: string, concurrency: number, seconds: number): Promise<LoadResult> => {
  const agent = new Agent({ keepAlive: true, maxSockets: concurrency })
  const latencies: Array<number> = []
  let errors = 0
  const deadline = performance.now() + seconds * 1000
  const one = () =>
    new Promise<void>((resolve) => {
      const start = performance.now()
      const req = request(url, { agent }, (res) => {
        res.resume()
        res.on("end", () => {
          if (res.statusCode === 200) latencies.push(performance.now() - start)
          else errors++
          resolve()
        })
      })
      req.on("error", () => {
        errors++
        resolve()
      })
      req.end()
    })
  const started = performance.now()
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < deadline) await one()
    }),
  )
  const elapsed = (performance.now() - started) / 1000
  agent.destroy()
  const sorted = Float64Array.from(latencies).sort()
  return {
    requests: latencies.length,
    errors,
    seconds: elapsed,
    rps: latencies.length / elapsed,
    p50ms: percentile(sorted, 50),
    p99ms: percentile(sorted, 99),
  }
}

export const format = (name: string, r: LoadResult) =>
  `${name.padEnd(28)} ${r.rps.toFixed(0).padStart(7)} req/s  p50 ${r.p50ms.toFixed(2).padStart(6)} ms  p99 ${r.p99ms
    .toFixed(2)
    .padStart(6)} ms  (${r.requests} ok, ${r.errors} errors)`
