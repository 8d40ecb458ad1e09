// The maker CLI as README "Run a maker" tells a new maker to use it, against the real devnet (`npm start` on a
// temporary data dir and free ports): from one funded key (anvil #5), `npm run maker -- setup` signs in, links,
// registers the identity, issues the credential and funds a v2 order; `npm run maker -- run` quotes it; a taker
// (`npm run demo` with DEMO_MAKER=external: no maker of its own) takes the quote and the transfer settles, the bot
// revealing its payment and counting the fill in its heartbeat; `status` shows the order, a refused quote set stops
// the bot with its code and message, `close` closes the order. And `--help` on every command exits 0 naming its
// options.
import { spawn } from "node:child_process"
import { statSync } from "node:fs"
import { join } from "node:path"
import { Effect } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { ANVIL_PRIVATE_KEYS } from "../../infra/devnet/Anvil.ts"
import { type DevnetProcess, freeTcpPort, makeDataDir, REPO_ROOT, spawnDevnet } from "../support/DevnetProcess.ts"
import { pollUntil } from "../support/Poll.ts"

/**
 * `npm run <script> -- args` as a user runs it in a terminal (a process group of its own, so `stop` is a terminal's
 * signal to the whole group: npm does not pass a signal on to the script): its child, output so far, exit code.
 */
const npmRun = (script: string, args: ReadonlyArray<string>, env: Record<string, string> = {}) => {
  const child = spawn("npm", ["run", "--silent", script, "--", ...args], {
    cwd: REPO_ROOT,
    env: { ...process.env, ...env },
    detached: true,
    stdio: ["ignore", "pipe", "pipe"],
  })
  const stop = () => {
    try {
      process.kill(-child.pid!, "SIGTERM")
    } catch {
      // the group is gone
    }
  }
  let output = ""
  child.stdout.on("data", (d: Buffer) => (output += d.toString("utf8")))
  child.stderr.on("data", (d: Buffer) => (output += d.toString("utf8")))
  const exited = new Promise<number>((resolve) => child.once("close", (code) => resolve(code ?? -1)))
  return { child, exited, stop, output: () => output }
}

const finished = async (p: ReturnType<typeof npmRun>) => ({ code: await p.exited, output: p.output() })

/** Help text without its ANSI styling. */
const plain = (s: string) => s.replace(new RegExp(`${String.fromCharCode(27)}\\[[0-9;]*m`, "g"), "")

const OWNER_KEY = ANVIL_PRIVATE_KEYS[5] as string

describe("maker CLI --help", () => {
  it("every command answers --help with exit 0, naming its options", async () => {
    const expected: Record<string, ReadonlyArray<string>> = {
      "": ["setup", "run", "status", "close"],
      setup: [
        "--venue",
        "--amount",
        "--api",
        "--state",
        "--venues-from",
        "--escrow-v2",
        "--rpc",
        "--supply",
        "--receive",
      ],
      run: ["--state", "--quote", "--quote-size", "--ttl", "--renew", "--validity", "--heartbeat", "--reveal-only"],
      status: ["--state", "--api"],
      close: ["--state", "--to-margin", "--revoke"],
    }
    for (const [command, names] of Object.entries(expected)) {
      const { code, output } = await finished(npmRun("maker", command === "" ? ["--help"] : [command, "--help"]))
      expect(code, output).toBe(0)
      for (const name of names) expect(plain(output), `${command} --help`).toContain(name)
    }
  }, 120_000)
})

describe("maker CLI on the devnet, as README 'Run a maker' says", () => {
  const dir = makeDataDir()
  const state = join(dir.parent, "maker.json")
  let devnet: DevnetProcess | undefined
  let bot: ReturnType<typeof npmRun> | undefined

  beforeAll(async () => {
    devnet = spawnDevnet({ dataDir: dir.dataDir, port: await freeTcpPort() })
    await devnet.waitFor(/Settlement devnet is up/, 150_000)
  }, 180_000)

  afterAll(async () => {
    bot?.stop()
    if (devnet !== undefined) {
      devnet.interrupt()
      await Promise.race([devnet.exited, new Promise((r) => setTimeout(r, 20_000))])
      devnet.killGroup()
    }
    dir.remove()
  })

  it("setup from a funded key, run, a taker takes the quote, status, a refused set stops, close", async () => {
    const api = devnet!.apiUrl
    const secrets = (out: string) => {
      expect(out).not.toMatch(/mk_[A-Za-z0-9]/)
      expect(out.toLowerCase()).not.toContain(OWNER_KEY.slice(2).toLowerCase())
    }
    // 1. setup: one funded key; the escrows and endpoints reviewed from the deployment's own config file.
    const setup = await finished(
      npmRun(
        "maker",
        [
          ...["setup", "--api", api, "--venue", "aster", "--amount", "100000000"],
          ...["--venues-from", join(dir.dataDir, "devnet-config.json"), "--state", state],
        ],
        { MAKER_OWNER_KEY: OWNER_KEY },
      ),
    )
    expect(setup.code, setup.output).toBe(0)
    for (const line of [
      "signs in (SIWE)",
      "aster: linked",
      "quote identity",
      "credential",
      "settlement v2",
      "funded",
    ]) {
      expect(setup.output).toContain(line)
    }
    expect(setup.output).toContain("Ready: quote hyperliquid:")
    secrets(setup.output)
    expect(statSync(state).mode & 0o777).toBe(0o600)

    // 2. run: everything from the state file; the owner key pays the reveals' gas.
    bot = npmRun("maker", ["run", "--state", state, "--heartbeat", "2"], { MAKER_PAYEE_KEY: OWNER_KEY })
    const output = Effect.sync(() => bot!.output())
    await Effect.runPromise(
      pollUntil(output, (o) => o.includes("published quote set") || bot!.child.exitCode !== null, {
        within: "90 seconds",
      }),
    )
    expect(bot.output()).toContain("published quote set")
    expect(bot.output()).toMatch(/quoting order 0x[0-9a-f]{64} on aster \(settlement v2\)/)

    // 3. a taker's transfer from hyperliquid to aster takes the quote and settles.
    const demo = await finished(
      npmRun("demo", [], { DEVNET_DATA_DIR: dir.dataDir, DEMO_MAKER: "external", DEMO_TIMEOUT_SECONDS: "150" }),
    )
    expect(demo.code, demo.output).toBe(0)
    expect(demo.output).toContain("take_final true")
    // The bot revealed the payment to it, and its heartbeat counts the fill it served.
    await Effect.runPromise(
      pollUntil(output, (o) => /heartbeat: lease generation \d+ until .*fills served 1 /.test(o), {
        within: "60 seconds",
      }),
    )
    expect(bot.output()).toContain("reveal loop: reveal: claimPayment")

    // 4. status: the lease and, with the owner key, the order with its fill.
    const status = await finished(npmRun("maker", ["status", "--state", state], { MAKER_OWNER_KEY: OWNER_KEY }))
    expect(status.code, status.output).toBe(0)
    expect(status.output).toMatch(/identity [0-9a-f-]{36}: .* lease live until/)
    expect(status.output).toMatch(/order 0x[0-9a-f]{64} on aster: funded; .*filled \d+/)
    expect(status.output).toMatch(/quote set \d+: active/)
    // Stopped as a terminal stops it: the bot ends its loops and exits (npm itself ends by the signal).
    bot.stop()
    await bot.exited
    expect(bot.output()).toContain("maker: SIGTERM: stopping")
    expect(bot.output()).not.toContain("maker: quote set refused")
    secrets(bot.output())

    // 5. a quote the service will never admit (min_fill > supply) stops the bot with its code and message.
    const refused = await finished(
      npmRun("maker", [
        "run",
        "--state",
        state,
        "--run",
        "20",
        "--quote",
        `hyperliquid:0x${"11".repeat(20)}:100:100:1000`,
      ]),
    )
    expect(refused.code, refused.output).toBe(2)
    expect(refused.output).toContain(
      "refused: INVALID_REQUEST supply and receive must be positive and min_fill at most supply",
    )
    expect(refused.output).toContain("maker: quote set refused (400 INVALID_REQUEST")

    // 6. close: quotes off, the order closed through the service.
    const close = await finished(npmRun("maker", ["close", "--state", state], { MAKER_OWNER_KEY: OWNER_KEY }))
    expect(close.code, close.output).toBe(0)
    expect(close.output).toContain("closing")
    secrets(close.output + status.output + refused.output)
  }, 600_000)
})
