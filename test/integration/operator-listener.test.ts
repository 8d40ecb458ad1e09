import { spawn } from "node:child_process"
import { createServer } from "node:net"
import { expect, layer } from "@effect/vitest"
import { Context, Effect, Layer, Redacted } from "effect"
import { freePorts } from "../../src/FreePort.ts"
import { testDatabaseUrl } from "../support/Database.ts"
import { rawRequest } from "../support/Http.ts"
import { pollUntil } from "../support/Poll.ts"
import { startService } from "../support/Process.ts"
import { parsePrometheus, seriesValue } from "../support/PrometheusText.ts"

/**
 * The service as `npm start` runs it (src/main.ts in a child process): the operator listener is announced at
 * start, serves GET /metrics (parsed by a real parser) apart from the public port, and the log on stdout is one
 * JSON object per line with an access line per request. An OPERATOR_PORT in use stops the start in one line.
 */

class Url extends Context.Tag("test/OperatorUrl")<Url, string>() {}
const Live = Layer.scoped(Url, Effect.map(testDatabaseUrl, Redacted.value))

layer(Live, { timeout: "180 seconds", excludeTestServices: true })("operator listener (process)", (it) => {
  it.effect("announced at start; /metrics parses and counts requests; the log is JSON lines with request ids", () =>
    Effect.gen(function* () {
      const url = yield* Url
      const [port, runnerPort] = yield* freePorts(2)
      const service = yield* startService({
        DATABASE_URL: url,
        PORT: String(port),
        RUNNER_PORT: String(runnerPort),
        LOG_FORMAT: "json",
        LOG_LEVEL: "info",
      })
      const announced = yield* pollUntil(
        Effect.sync(() => /operator listener at (http:\/\/127\.0\.0\.1:(\d+))/.exec(service.output())),
        (m) => m !== null,
        { within: "20 seconds" },
      )
      const operator = announced![1]!
      expect(Number(announced![2])).not.toBe(port)
      const base = `http://127.0.0.1:${port}`
      for (let i = 0; i < 2; i++) expect((yield* rawRequest(`${base}/v1/info?`)).status).toBe(200)
      expect((yield* rawRequest(`${base}/v1/info`)).status).toBe(200)
      const metrics = yield* rawRequest(`${operator}/metrics`)
      expect(metrics.status).toBe(200)
      const families = parsePrometheus(metrics.text)
      expect(seriesValue(families, "http_requests_total", { method: "GET", route: "/v1/info", status: "200" })).toBe(3)
      expect(families.get("watcher_ready")?.type).toBe("GAUGE")
      expect((yield* rawRequest(`${base}/metrics`)).status).toBe(404)

      // Every stdout line after the start-up lines is a JSON record; the requests left access lines.
      const records = service
        .output()
        .split("\n")
        .filter((l) => l.startsWith("{"))
        .map((l) => JSON.parse(l) as Record<string, unknown>)
      const access = records.filter((r) => r.message === "request" && r.route === "/v1/info")
      expect(access).toHaveLength(3)
      for (const r of access) {
        expect(r).toMatchObject({ level: "info", method: "GET", status: 200 })
        expect(r.request_id).toMatch(/^[0-9a-f-]{36}$/)
      }
    }).pipe(Effect.scoped),
  )

  it.effect("an OPERATOR_PORT in use: one line naming OPERATOR_PORT, exit 1", () =>
    Effect.gen(function* () {
      const url = yield* Url
      const busy = createServer()
      const taken = yield* Effect.promise(
        () =>
          new Promise<number>((resolve) =>
            busy.listen(0, "127.0.0.1", () => resolve((busy.address() as { port: number }).port)),
          ),
      )
      const [port, runnerPort] = yield* freePorts(2)
      const result = yield* Effect.promise(
        () =>
          new Promise<{ code: number | null; out: string }>((resolve) => {
            const child = spawn(process.execPath, ["--import", "tsx", "src/main.ts"], {
              env: {
                ...process.env,
                DATABASE_URL: url,
                PORT: String(port),
                RUNNER_PORT: String(runnerPort),
                OPERATOR_PORT: String(taken),
              },
              stdio: ["ignore", "pipe", "pipe"],
            })
            let out = ""
            child.stdout.on("data", (d: Buffer) => (out += d.toString()))
            child.stderr.on("data", (d: Buffer) => (out += d.toString()))
            const timer = setTimeout(() => child.kill("SIGKILL"), 90_000)
            child.on("exit", (code) => {
              clearTimeout(timer)
              resolve({ code, out })
            })
          }),
      )
      busy.close()
      expect(result.code).toBe(1)
      expect(result.out).toContain(`OPERATOR_PORT ${taken} is already in use`)
      expect(result.out).not.toMatch(/\n\s+at /)
    }),
  )
})
