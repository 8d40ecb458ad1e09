// `npm run demo` end to end: the real devnet (`npm start` without configuration, a temporary data dir, free
// ports) and the demo script against it, to completion: exit 0, every step printed, the transfer settled and
// both parties' balances on both venues at the end. Without a devnet the demo exits 2 and says how to start one.
// The devnet configures new orders on settlement v2: the transfer's take gets the taker client's pay key on its
// take route, the taker's typed flow checks before signing and authorises payment once the locks are final on its
// own endpoint, and the maker client reveals by its own claimPayment.
import { spawn } from "node:child_process"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type DevnetProcess, freeTcpPort, makeDataDir, REPO_ROOT, spawnDevnet } from "../support/DevnetProcess.ts"

const dir = makeDataDir()
let devnet: DevnetProcess | undefined

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
    devnet = spawnDevnet({ dataDir: dir.dataDir, port: await freeTcpPort() })
    await devnet.waitFor(/Settlement devnet is up/, 120_000)
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
  }, 220_000)
})
