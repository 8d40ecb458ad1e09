// The devnet's pure parts: options from the environment, the lock (refusal, stale takeover, pid reuse, orphan
// reaping), the generated service config and the banner. The whole devnet runs in test/integration/devnet.test.ts.
import { spawn, spawnSync } from "node:child_process"
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { Effect } from "effect"
import type { Address, Hex } from "viem"
import { privateKeyToAddress } from "viem/accounts"
import { afterEach, describe, expect, it } from "vitest"
import { ANVIL_PRIVATE_KEYS } from "../../infra/devnet/Anvil.ts"
import { renderBanner } from "../../infra/devnet/Banner.ts"
import type { Deployment } from "../../infra/devnet/Deploy.ts"
import { buildDevnetConfig, type RunningChain } from "../../infra/devnet/DevnetConfig.ts"
import { devnetOptionsFromEnv } from "../../infra/devnet/DevnetOptions.ts"
import { acquireLock, DevnetAlreadyRunning, type LockInfo, pidAlive, readLock } from "../../infra/devnet/Lock.ts"

const dirs: Array<string> = []
const tempDir = () => {
  const dir = mkdtempSync(join(tmpdir(), "devnet-unit-"))
  dirs.push(dir)
  return dir
}
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true })
})

const deadPid = () => Number(spawnSync(process.execPath, ["-e", "process.stdout.write(String(process.pid))"]).stdout)

describe("devnet options", () => {
  it("defaults: ./.data, API 8080, RPC 8545/8546, venue APIs 8547/8548, chains 999 and 42161", () => {
    const o = devnetOptionsFromEnv({}, "/work/x")
    expect(o.dataDir).toBe("/work/x/.data")
    expect(o.apiPort).toBe(8080)
    expect(o.chains.map((c) => [c.kind, c.chainId, c.rpcPort, c.apiPort])).toEqual([
      ["hyperliquid", 999, 8545, 8547],
      ["aster", 42161, 8546, 8548],
    ])
    expect(o.blockTimeSeconds).toBe(1)
    expect(o.slotsInAnEpoch).toBe(2)
    expect(o.databaseUrl).toBeUndefined()
  })

  it("overrides from the environment; a malformed port names its variable", () => {
    const o = devnetOptionsFromEnv({ DEVNET_DATA_DIR: "d", PORT: "9000", DEVNET_ASTER_RPC_PORT: "0" }, "/w")
    expect(o.dataDir).toBe(resolve("/w", "d"))
    expect(o.apiPort).toBe(9000)
    expect(o.chains[1]?.rpcPort).toBe(0)
    expect(() => devnetOptionsFromEnv({ DEVNET_HYPERLIQUID_RPC_PORT: "85x" })).toThrow(/DEVNET_HYPERLIQUID_RPC_PORT/)
    expect(() => devnetOptionsFromEnv({ PORT: "0" })).toThrow(/PORT must be a fixed port/)
  })
})

describe("devnet lock", () => {
  it("is taken once: a second taker gets a message naming the owner's pid, and release frees it", async () => {
    const dir = tempDir()
    const file = join(dir, "devnet.lock")
    const lock = await acquireLock(file, dir)
    expect(readLock(file)?.pid).toBe(process.pid)
    const second = await acquireLock(file, dir).catch((e: unknown) => e)
    expect(second).toBeInstanceOf(DevnetAlreadyRunning)
    expect((second as Error).message).toMatch(new RegExp(`already running on .* \\(pid ${process.pid}`))
    lock.update({ api_url: "http://127.0.0.1:1" })
    expect(readLock(file)?.api_url).toBe("http://127.0.0.1:1")
    lock.release()
    expect(existsSync(file)).toBe(false)
    ;(await acquireLock(file, dir)).release()
  })

  it("takes over a lock whose pid is dead, one whose pid was reused, and an unparsable one", async () => {
    const dir = tempDir()
    const file = join(dir, "devnet.lock")
    const stale: LockInfo = { pid: deadPid(), started_at: "then", data_dir: dir, children: [] }
    for (const content of [
      JSON.stringify(stale),
      // Our own pid, but another start time: the pid was reused by an unrelated process.
      JSON.stringify({ ...stale, pid: process.pid, proc_start: "1" }),
      "{ not json",
    ]) {
      writeFileSync(file, content)
      const lock = await acquireLock(file, dir)
      expect(readLock(file)?.pid).toBe(process.pid)
      lock.release()
    }
  })

  it("stops the children a dead devnet left running, only when their command line still matches", async () => {
    const dir = tempDir()
    const file = join(dir, "devnet.lock")
    const spawnSleeper = () => spawn("sleep", ["30"], { stdio: "ignore" })
    const orphan = spawnSleeper()
    const stranger = spawnSleeper()
    try {
      const lock: LockInfo = {
        pid: deadPid(),
        started_at: "then",
        data_dir: dir,
        children: [
          { name: "anvil", pid: orphan.pid!, match: "sleep" },
          { name: "postgres", pid: stranger.pid!, match: "postgres" },
        ],
      }
      writeFileSync(file, JSON.stringify(lock))
      const lines: Array<string> = []
      const held = await acquireLock(file, dir, (l) => lines.push(l))
      held.release()
      await new Promise((r) => setTimeout(r, 100))
      expect(pidAlive(orphan.pid!)).toBe(false)
      expect(pidAlive(stranger.pid!)).toBe(true)
      expect(lines.join("\n")).toMatch(new RegExp(`stopping anvil \\(pid ${orphan.pid}\\)`))
      expect(lines.join("\n")).not.toMatch(/stopping postgres/)
    } finally {
      orphan.kill("SIGKILL")
      stranger.kill("SIGKILL")
    }
  })
})

const fakeDeployment = (kind: "hyperliquid" | "aster", chainId: number): Deployment => {
  const at = (n: number) => ({ address: `0x${String(n).repeat(40)}` as Address, block: String(n) })
  return {
    kind,
    chainId,
    rpcUrl: "http://127.0.0.1:1",
    deployer: privateKeyToAddress(ANVIL_PRIVATE_KEYS[0] as Hex),
    operator: privateKeyToAddress(ANVIL_PRIVATE_KEYS[0] as Hex),
    revealWindowSeconds: 600,
    maxLockDurationSeconds: 86_400,
    contracts: { token: at(1), venue: at(2), router: at(3), escrow: at(4), legacyEscrow: at(5) },
    token: { symbol: "USDC", decimals: 6 },
    fundedAccounts: [],
    mintedPerAccount: "1000000000000",
    legacyOffers: [],
  }
}

const running = (): Array<RunningChain> =>
  devnetOptionsFromEnv({}).chains.map((spec, i) => ({
    spec,
    deployment: fakeDeployment(spec.kind, spec.chainId),
    rpcUrl: `http://127.0.0.1:${8545 + i}`,
    apiUrl: i === 0 ? "http://127.0.0.1:8547" : undefined,
  }))

describe("devnet service config", () => {
  it("passes the service's schema: venues from the deployment, anvil key #0 as operator, the app origins", async () => {
    const config = await Effect.runPromise(buildDevnetConfig(running()))
    expect(config.operator_key).toBe(ANVIL_PRIVATE_KEYS[0])
    expect(config.app_origins).toContain("http://localhost:5173")
    expect(config.venues.map((v) => [v.id, v.chain_id, v.rpc_urls[0], v.escrow, v.deployment_block])).toEqual([
      ["hyperliquid", 999, "http://127.0.0.1:8545", `0x${"4".repeat(40)}`, 4],
      ["aster", 42161, "http://127.0.0.1:8546", `0x${"4".repeat(40)}`, 4],
    ])
    expect(config.venues[0]).toHaveProperty("api_url", "http://127.0.0.1:8547")
    expect(config.venues[1]).not.toHaveProperty("api_url")
    expect(config.venues[0]).not.toHaveProperty("escrow_v2")
  })

  it("names each chain's SettlementEscrowV2 and its immutables as the settlement v2 values", async () => {
    const v2 = running().map((c) => ({
      ...c,
      deployment: {
        ...c.deployment,
        contracts: { ...c.deployment.contracts, escrowV2: { address: `0x${"6".repeat(40)}` as Address, block: "6" } },
        escrowV2Timing: {
          maxLockSeconds: 7200,
          payByMaxSeconds: 120,
          claimWindowSeconds: 600,
          maxQuoteLifeSeconds: 300,
          takerTimeoutMinSeconds: 900,
        },
      },
    }))
    const config = (await Effect.runPromise(buildDevnetConfig(v2))) as unknown as {
      venues: Array<{ escrow_v2?: unknown }>
      settlement: Record<string, number>
    }
    expect(config.venues.map((v) => v.escrow_v2)).toEqual([
      { address: `0x${"6".repeat(40)}`, deployment_block: 6 },
      { address: `0x${"6".repeat(40)}`, deployment_block: 6 },
    ])
    // New orders, takes and transfers on the devnet settle on v2.
    expect(config.settlement).toEqual({
      escrow_version: 2,
      max_lock_seconds: 7200,
      pay_by_max_seconds: 120,
      claim_window_seconds: 600,
      max_quote_life_seconds: 300,
      taker_timeout_min_seconds: 900,
    })
  })
})

describe("devnet banner", () => {
  it("names the API, docs, chain RPCs and every test key, marked test-only", () => {
    const text = renderBanner({
      apiUrl: "http://127.0.0.1:8080",
      chains: running(),
      dataDir: "/w/.data",
      configFile: "/w/.data/devnet-config.json",
      database: "embedded",
      fresh: true,
      startupMs: 4200,
      cwd: "/w",
    })
    for (const s of [
      "http://127.0.0.1:8080/v1/docs",
      "http://127.0.0.1:8545",
      "http://127.0.0.1:8546",
      "venue API http://127.0.0.1:8547",
      "TEST ONLY",
      "never use them on a real chain",
      "./.data/devnet-config.json",
      "curl http://127.0.0.1:8080/v1/info",
      ...ANVIL_PRIVATE_KEYS,
    ]) {
      expect(text).toContain(s)
    }
  })
})
