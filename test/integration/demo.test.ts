// `npm run demo` end to end: the real devnet (`npm start` without configuration, a temporary data dir, free
// ports) and the demo script against it, to completion: exit 0, every step printed, the transfer settled and
// both parties' balances on both venues at the end. Without a devnet the demo exits 2 and says how to start one.
// The devnet configures new orders on settlement v2: the transfer's take gets the taker client's pay key on its
// take route, the taker's typed flow checks before signing and authorises payment once the locks are final on its
// own endpoint, and the maker client reveals by its own claimPayment.
// Issue 17's done-when on the same run: the service's log during the demo (the devnet's output, LOG_FORMAT=json)
// is one JSON object per line, with a request id on every access line, a state-change line per settlement step of
// the demo's take, and no token, key, signature or revealed secret; `/metrics` on the operator listener (the URL
// the service prints at start) parses with a real Prometheus parser and its request and fill counters move.
import { spawn } from "node:child_process"
import { randomUUID } from "node:crypto"
import { Effect } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { ANVIL_PRIVATE_KEYS } from "../../infra/devnet/Anvil.ts"
import { type DevnetProcess, freeTcpPort, makeDataDir, REPO_ROOT, spawnDevnet } from "../support/DevnetProcess.ts"
import { pollUntil } from "../support/Poll.ts"
import { parsePrometheus, seriesValue } from "../support/PrometheusText.ts"

const dir = makeDataDir()
let devnet: DevnetProcess | undefined
/** The operator listener's URL, as the service announced it at start. */
let operatorUrl = ""

/** One scrape of the operator listener's `/metrics`, read by the real parser (it throws on a malformed line). */
const scrape = async () => {
  const res = await fetch(`${operatorUrl}/metrics`)
  expect(res.status).toBe(200)
  return parsePrometheus(await res.text())
}

/** The devnet's output from `mark` on, whole lines only. */
const linesFrom = (output: string, mark: number) => {
  const rest = output.slice(mark)
  const whole = mark === 0 || output[mark - 1] === "\n" ? rest : rest.slice(rest.indexOf("\n") + 1)
  return whole.split("\n").filter((l) => l.trim() !== "")
}

/** Every string under a key named `secret`, at any depth. */
const secretsIn = (value: unknown): Array<string> =>
  Array.isArray(value)
    ? value.flatMap(secretsIn)
    : typeof value === "object" && value !== null
      ? Object.entries(value).flatMap(([k, v]) => (k === "secret" && typeof v === "string" ? [v] : secretsIn(v)))
      : []

/** `npm run demo` as a user runs it (the real script), with its output and exit code. */
const runDemo = (env: Record<string, string>, timeoutMs: number) =>
  new Promise<{ code: number | null; output: string }>((resolve) => {
    const child = spawn("npm", ["run", "--silent", "demo"], {
      cwd: REPO_ROOT,
      env: { ...process.env, ...env },
      stdio: ["ignore", "pipe", "pipe"],
    })
    let output = ""
    child.stdout.on("data", (d: Buffer) => (output += d.toString("utf8")))
    child.stderr.on("data", (d: Buffer) => (output += d.toString("utf8")))
    const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs)
    child.once("close", (code) => {
      clearTimeout(timer)
      resolve({ code, output })
    })
  })

afterAll(async () => {
  if (devnet !== undefined) {
    devnet.interrupt()
    await Promise.race([devnet.exited, new Promise((r) => setTimeout(r, 20_000))])
    devnet.killGroup()
  }
  dir.remove()
})

describe("npm run demo", () => {
  beforeAll(async () => {
    // LOG_FORMAT=json explicitly (it is the default off a terminal); the operator listener on a free loopback port.
    devnet = spawnDevnet({ dataDir: dir.dataDir, port: await freeTcpPort(), env: { LOG_FORMAT: "json" } })
    await devnet.waitFor(/Settlement devnet is up/, 120_000)
    operatorUrl = (await devnet.waitFor(/operator listener at (http:\/\/127\.0\.0\.1:\d+)/, 10_000))[1]!
  }, 150_000)

  it("without a running devnet: exit 2 and how to start one", async () => {
    const empty = makeDataDir()
    try {
      const { code, output } = await runDemo({ DEVNET_DATA_DIR: empty.dataDir }, 60_000)
      expect(code, output).toBe(2)
      expect(output).toContain("npm start")
    } finally {
      empty.remove()
    }
  }, 70_000)

  it("a maker quotes, a taker's transfer intent settles on v2, balances before and after on both venues", async () => {
    const before = await scrape()
    const mark = devnet!.output().length
    const { code, output } = await runDemo({ DEVNET_DATA_DIR: dir.dataDir, DEMO_TIMEOUT_SECONDS: "150" }, 200_000)
    expect(code, output).toBe(0)
    // The per-step waits as the demo logged them (the last progress line of each wait), for the run's record.
    console.log(
      output
        .split("\n")
        .filter((l) => /\(\d+ s\)$/.test(l))
        .join("\n"),
    )
    for (const step of [
      "on settlement v2",
      "order funded",
      "[maker client] published quote set",
      "linked on hyperliquid",
      "linked on aster",
      "transfer intent",
      "pay key 0x",
      "signed permit",
      "signed margin_move",
      "signatures accepted",
      "lock on chain 42161: final",
      "locks final on the taker's own endpoint: the pay key signed PayTake",
      "pay on chain 999: final",
      "[maker client] reveal loop: reveal: claimPayment",
      "claim on chain 42161: final",
      "take_final true",
      "Balances before → after",
      "Done.",
    ]) {
      expect(output, output).toContain(step)
    }
    // Four lines of balances: each party on each venue. The taker paid 25 on hyperliquid and received the
    // quoted 24.975 (0.1 % spread) into margin on aster; the maker the reverse.
    expect(output).toMatch(/maker\s+hyperliquid\s.*\+25\.000000 USDC/)
    expect(output).toMatch(/maker\s+aster\s.*-24\.975000 USDC/)
    expect(output).toMatch(/taker\s+hyperliquid\s.*-25\.000000 USDC/)
    expect(output).toMatch(/taker\s+aster\s.*0\.000000 → 24\.975000\s+\+24\.975000 USDC/)
    // Secrets stay with their owners: no mk_ token or private key in the output.
    expect(output).not.toMatch(/mk_[A-Za-z0-9]/)

    // ---- issue 17 done-when: the service's log of this run and its metrics.
    const takeId = output.match(/ take ([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}):/)?.[1]
    expect(takeId, output).toBeDefined()
    // The revealed secret, from the public trade history (the proof carries it), and a request of ours whose access
    // line, once in the output, means every line of the demo's requests before it is there too (lines keep order).
    const marker = randomUUID()
    const history = await fetch(`${devnet!.apiUrl}/v1/trades/history`, { headers: { "x-request-id": marker } })
    expect(history.status).toBe(200)
    const revealed = secretsIn(await history.json())
    expect(revealed.length).toBeGreaterThanOrEqual(1)
    const lines = await Effect.runPromise(
      pollUntil(
        Effect.sync(() => linesFrom(devnet!.output(), mark)),
        (ls) => ls.some((l) => l.includes(marker)),
        { every: "200 millis", within: "30 seconds" },
      ),
    )
    const log = lines.join("\n")

    // One JSON object per line, each with its level, time and message.
    const records = lines.map((l) => {
      let r: unknown
      expect(() => (r = JSON.parse(l)), `not JSON: ${l}`).not.toThrow()
      expect(typeof r, l).toBe("object")
      return r as Record<string, unknown>
    })
    for (const r of records) {
      expect(typeof r.level).toBe("string")
      expect(typeof r.message).toBe("string")
      expect(Number.isNaN(Date.parse(String(r.time)))).toBe(false)
    }

    // An access line per request of the demo, each with its request id, on the take routes too.
    const access = records.filter((r) => r.message === "request" && r.request_id !== marker)
    expect(access.length).toBeGreaterThanOrEqual(10)
    for (const r of access) expect(r.request_id, JSON.stringify(r)).toMatch(/^[0-9a-f-]{36}$/)
    const routes = new Set(access.map((r) => String(r.route)))
    expect(
      [...routes].some((route) => route.startsWith("/v1/takes")),
      [...routes].join(" "),
    ).toBe(true)
    expect(
      [...routes].some((route) => route.startsWith("/v1/auth/")),
      [...routes].join(" "),
    ).toBe(true)

    // A state-change line per settlement step of the demo's take: the lock, the payment, the claim (to settled).
    const fillLines = records.filter((r) => r.take_id === takeId && String(r.message).startsWith("fill "))
    expect(
      fillLines.map((r) => r.state),
      log,
    ).toEqual(expect.arrayContaining(["locked", "paid", "settled"]))
    for (const r of fillLines) expect(r.fill_id).toBeTypeOf("string")

    // No session or mk_ token, private key, signature or revealed secret in any line.
    expect(log).not.toMatch(/\b(?:st|mk)_[A-Za-z0-9_-]{8,}/)
    expect(log).not.toMatch(/[0-9a-fA-F]{130,}/)
    for (const s of [...ANVIL_PRIVATE_KEYS, ...revealed]) {
      const bare = (s.startsWith("0x") ? s.slice(2) : s).toLowerCase()
      expect(log.toLowerCase().includes(bare), `the log holds a secret (${s.slice(0, 8)}…)`).toBe(false)
    }
    expect(log).not.toContain("[object Object]")

    // /metrics moved with the demo: every (method, route, status) the demo's access lines name counted at least
    // as often as those lines, and the fill transitions of its lock, payment and settlement.
    const after = await scrape()
    const counts = new Map<string, { labels: Record<string, string>; n: number }>()
    for (const r of access) {
      const labels = { method: String(r.method), route: String(r.route), status: String(r.status) }
      const key = JSON.stringify(labels)
      counts.set(key, { labels, n: (counts.get(key)?.n ?? 0) + 1 })
    }
    for (const { labels, n } of counts.values()) {
      const moved =
        seriesValue(after, "http_requests_total", labels) - seriesValue(before, "http_requests_total", labels)
      expect(moved, JSON.stringify(labels)).toBeGreaterThanOrEqual(n)
    }
    for (const state of ["locked", "paid", "settled"]) {
      const moved =
        seriesValue(after, "settlement_fill_transitions_total", { state }) -
        seriesValue(before, "settlement_fill_transitions_total", { state })
      expect(moved, state).toBeGreaterThanOrEqual(1)
    }
  }, 260_000)
})
