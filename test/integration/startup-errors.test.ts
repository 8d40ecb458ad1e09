import { spawn } from "node:child_process"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { createServer } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { SqlClient } from "@effect/sql"
import { Effect, Exit, Redacted, Scope } from "effect"
import { afterAll, describe, expect, it } from "vitest"
import { DevelopmentConfig } from "../../src/DevelopmentConfig.ts"
import { freePort } from "../../src/FreePort.ts"
import { pgClientLayer } from "../../src/Sql/Notifications.ts"
import { testDatabaseUrl } from "../support/Database.ts"

/**
 * Start-up errors an operator meets first (issue 15, item 5): each bad setting stops the service within
 * seconds with exit code 1 and exactly one line naming the variable and what would fix it, with no stack
 * and no secret of the environment or the config file. The service runs as `npm start` runs it with
 * SETTLEMENT_CONFIG: `node --import tsx src/main.ts`, as a child process.
 */
const dir = mkdtempSync(join(tmpdir(), "startup-errors-"))
afterAll(() => rmSync(dir, { recursive: true, force: true }))
const OPERATOR_KEY = DevelopmentConfig.operator_key
const PASSWORD = "pw-Secr3t-9f2c"

/** The development config pretty-printed (one field per line), the operator key first. */
const { operator_key: _, ...REST } = DevelopmentConfig
const CONFIG_TEXT = JSON.stringify({ operator_key: OPERATOR_KEY, ...REST }, null, 2)

/** The config as a file, with `edit` applied to its text. */
const configFile = (name: string, edit: (text: string) => string = (t) => t) => {
  const path = join(dir, name)
  writeFileSync(path, edit(CONFIG_TEXT))
  return path
}

/**
 * A DATABASE_URL nothing listens on, for the cases about other settings: should the setting under test
 * be accepted after all, the service still stops (at the database) instead of starting an embedded
 * PostgreSQL in ./.data.
 */
const unreachableDatabase = async () => `postgres://settle:${PASSWORD}@127.0.0.1:${await port()}/settlement`

interface Outcome {
  readonly code: number | null
  readonly output: string
  readonly ms: number
}

/** Starts the service with `env` (and none of the caller's settings) and waits for it to exit (at most 60 s). */
const runToExit = (env: Record<string, string>) =>
  new Promise<Outcome>((resolve, reject) => {
    const clean = Object.fromEntries(
      Object.entries(process.env).filter(
        ([k]) => !["SETTLEMENT_CONFIG", "DATABASE_URL", "OPERATOR_KEY", "PORT", "NODE_OPTIONS"].includes(k),
      ),
    )
    const t0 = performance.now()
    const child = spawn(process.execPath, ["--import", "tsx", "src/main.ts"], {
      env: { ...clean, ...env },
      stdio: ["ignore", "pipe", "pipe"],
    })
    let output = ""
    child.stdout.on("data", (d: Buffer) => (output += d.toString()))
    child.stderr.on("data", (d: Buffer) => (output += d.toString()))
    const timer = setTimeout(() => {
      child.kill("SIGKILL")
      reject(new Error(`the service did not exit within 60 s:\n${output}`))
    }, 60_000)
    child.on("exit", (code) => {
      clearTimeout(timer)
      resolve({ code, output, ms: performance.now() - t0 })
    })
  })

/** Exit 1, one line, within seconds, containing every `needle`, none of `secrets`, no stack frame. */
const expectOneLine = (
  outcome: Outcome,
  needles: ReadonlyArray<string>,
  secrets: ReadonlyArray<string> = [],
  /** Announcements of listeners that did open before the failing one (the failure is then the last line). */
  announced?: RegExp,
) => {
  const lines = outcome.output
    .split("\n")
    .filter((l) => l.trim().length > 0 && (announced === undefined || !announced.test(l)))
  expect(lines, outcome.output).toHaveLength(1)
  const [line] = lines as [string]
  for (const needle of needles) expect(line).toContain(needle)
  for (const secret of [OPERATOR_KEY, OPERATOR_KEY.slice(2, 20), PASSWORD, ...secrets]) {
    expect(outcome.output).not.toContain(secret)
  }
  expect(outcome.output).not.toMatch(/^\s+at /m)
  expect(outcome.output).not.toMatch(/UnknownException|SqlError|RangeError|getaddrinfo/)
  expect(outcome.code).toBe(1)
  // tsx compiles the service first: a few seconds, more on a loaded machine.
  expect(outcome.ms).toBeLessThan(30_000)
  return line
}

const port = () => Effect.runPromise(freePort)

/** The operator listener's and the cluster runner's start-up lines (src/Observability/OperatorListener.ts, src/Cluster/Runner.ts). */
const ANNOUNCED = /^operator listener at http|"message":"cluster runner bound to /

describe("start-up errors: one line naming the setting and the fix", { timeout: 180_000 }, () => {
  it("a JSON syntax error in SETTLEMENT_CONFIG names the file, line and column", async () => {
    // A missing comma after the operator key (line and column of the next field), quoting nothing of it.
    const missingComma = configFile("missing-comma.json", (t) =>
      t.replace(`"operator_key": "${OPERATOR_KEY}",`, `"operator_key": "${OPERATOR_KEY}"`),
    )
    const next = CONFIG_TEXT.split("\n").findIndex((l) => l.includes('"operator_key"')) + 2
    const db = await unreachableDatabase()
    const line = expectOneLine(await runToExit({ SETTLEMENT_CONFIG: missingComma, PORT: "18080", DATABASE_URL: db }), [
      "SETTLEMENT_CONFIG",
      missingComma,
      `line ${next}, column 3`,
    ])
    expect(line).toContain("not valid JSON")
    // A bad token right after the key: V8's own message would quote the text around it.
    const badToken = configFile("bad-token.json", (t) =>
      t.replace(`"operator_key": "${OPERATOR_KEY}",`, `"operator_key": "${OPERATOR_KEY}", "x": tru,`),
    )
    expectOneLine(await runToExit({ SETTLEMENT_CONFIG: badToken, PORT: "18080", DATABASE_URL: db }), [
      "SETTLEMENT_CONFIG",
      badToken,
      `line ${next - 1}, column`,
    ])
    // A file that is not there.
    expectOneLine(await runToExit({ SETTLEMENT_CONFIG: join(dir, "absent.json"), PORT: "18080", DATABASE_URL: db }), [
      "SETTLEMENT_CONFIG",
      "absent.json",
      "no such file",
    ])
  })

  it("DATABASE_URL to a closed port names DATABASE_URL, where, why and the fix", async () => {
    const closed = await port()
    const outcome = await runToExit({
      SETTLEMENT_CONFIG: configFile("good.json"),
      PORT: "18080",
      DATABASE_URL: `postgres://settle:${PASSWORD}@127.0.0.1:${closed}/settlement`,
    })
    const line = expectOneLine(outcome, ["DATABASE_URL", `127.0.0.1:${closed}`, "connection refused"])
    expect(line).toMatch(/start PostgreSQL there or fix DATABASE_URL/)
  })

  it("DATABASE_URL that is not a URL says it is not a valid postgres URL", async () => {
    for (const url of ["notaurl", `mysql://root:${PASSWORD}@127.0.0.1/db`]) {
      const outcome = await runToExit({
        SETTLEMENT_CONFIG: configFile("good.json"),
        PORT: "18080",
        DATABASE_URL: url,
      })
      expectOneLine(outcome, ["DATABASE_URL", "not a valid postgres URL", "postgres://"], [url])
    }
  })

  it("a bad OPERATOR_KEY names OPERATOR_KEY, not the config file, and never echoes it", async () => {
    const config = configFile("good.json")
    for (const key of [`0x${"7".repeat(63)}`, `${"7".repeat(64)}`, `0x${"0".repeat(64)}`]) {
      const outcome = await runToExit({
        SETTLEMENT_CONFIG: config,
        PORT: "18080",
        OPERATOR_KEY: key,
        DATABASE_URL: await unreachableDatabase(),
      })
      const line = expectOneLine(outcome, ["OPERATOR_KEY"], [key.slice(2, 40)])
      expect(line).not.toContain(config)
      expect(line).not.toContain("invalid configuration")
    }
  })

  it("a role the migrations cannot run as names DATABASE_URL, PostgreSQL's refusal and the fix, no stack", async () => {
    const scope = Effect.runSync(Scope.make())
    const url = Redacted.value(await Effect.runPromise(Scope.extend(testDatabaseUrl, scope)))
    const role = `limited_${process.pid}`
    // PostgreSQL 15 and later grant PUBLIC no CREATE on `public`; older ones do: take it away either way.
    await Effect.runPromise(
      Effect.gen(function* () {
        const sql = yield* SqlClient.SqlClient
        yield* sql.unsafe(`drop role if exists ${role}`)
        yield* sql.unsafe(`create role ${role} login password '${PASSWORD}'`)
        yield* sql.unsafe("revoke create on schema public from public")
      }).pipe(
        Effect.provide(
          pgClientLayer({ url: Redacted.make(url), maxConnections: 1, applicationName: "startup-errors" }),
        ),
      ),
    )
    try {
      const limited = new URL(url)
      limited.username = role
      limited.password = PASSWORD
      const outcome = await runToExit({
        SETTLEMENT_CONFIG: configFile("good.json"),
        PORT: "18080",
        DATABASE_URL: limited.toString(),
      })
      const line = expectOneLine(outcome, ["DATABASE_URL", "refused the service's migrations", "SQLSTATE 42501"])
      expect(line).toContain("permission denied")
      expect(line).toContain("grant this role CREATE")
    } finally {
      await Effect.runPromise(Scope.close(scope, Exit.void))
    }
  })

  it("a port already in use (RUNNER_PORT, PORT, OPERATOR_PORT) names the variable, the port and the fix", async () => {
    // A reachable database, so the start gets as far as binding its ports.
    const scope = Effect.runSync(Scope.make())
    const url = Redacted.value(await Effect.runPromise(Scope.extend(testDatabaseUrl, scope)))
    const busy = createServer()
    const taken = await new Promise<number>((resolve) =>
      busy.listen(0, "127.0.0.1", () => resolve((busy.address() as { port: number }).port)),
    )
    try {
      for (const variable of ["RUNNER_PORT", "PORT", "OPERATOR_PORT"]) {
        const [api, runner, operator] = await Promise.all([port(), port(), port()])
        const env: Record<string, string> = {
          SETTLEMENT_CONFIG: configFile("good.json"),
          DATABASE_URL: url,
          PORT: String(api),
          RUNNER_PORT: String(runner),
          OPERATOR_PORT: String(operator),
          [variable]: String(taken),
        }
        const outcome = await runToExit(env)
        const line = expectOneLine(
          outcome,
          [`${variable} ${taken} is already in use`, `stop the other process or set ${variable} to a free port`],
          [],
          ANNOUNCED,
        )
        expect(outcome.output.trimEnd().endsWith(line)).toBe(true)
        expect(line).not.toContain("EADDRINUSE")
      }
    } finally {
      busy.close()
      await Effect.runPromise(Scope.close(scope, Exit.void))
    }
  })
})
