// `npm start` without configuration = the devnet, run as a real process in a temporary data dir on free ports.
// The tests run in order on one data dir: a fresh boot, a refused second start, Ctrl-C, a restart through the
// real `npm start` script that takes over a stale lock and finds its balances again, SIGTERM, reset.
import { spawn, spawnSync } from "node:child_process"
import { existsSync, readFileSync, writeFileSync } from "node:fs"
import { type AddressInfo, createServer } from "node:net"
import { join } from "node:path"
import {
  type Address,
  createPublicClient,
  createWalletClient,
  defineChain,
  type Hex,
  http,
  type PublicClient,
  parseUnits,
} from "viem"
import { generatePrivateKey, privateKeyToAccount, privateKeyToAddress } from "viem/accounts"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { ANVIL_PRIVATE_KEYS } from "../../infra/devnet/Anvil.ts"
import type { Deployment } from "../../infra/devnet/Deploy.ts"
import { mockUSDCAbi } from "../../src/Chain/artifacts/index.ts"
import {
  type DevnetProcess,
  descendants,
  eventually,
  freeTcpPort,
  makeDataDir,
  processesMentioning,
  REPO_ROOT,
  spawnDevnet,
} from "../support/DevnetProcess.ts"

const BANNER = /Settlement devnet is up/
const dir = makeDataDir()
const started: Array<DevnetProcess> = []

interface VenueJson {
  readonly id: string
  readonly chain_id: number
  readonly rpc_urls: ReadonlyArray<string>
  readonly token: Address
  readonly escrow: Address
  readonly deployment_block: number
  readonly api_url?: string
}
interface ConfigJson {
  readonly venues: ReadonlyArray<VenueJson>
  readonly app_origins: ReadonlyArray<string>
  readonly operator_key: Hex
}

const readJson = <A>(name: string): A => JSON.parse(readFileSync(join(dir.dataDir, name), "utf8")) as A
const chainOf = (venue: VenueJson) =>
  defineChain({
    id: venue.chain_id,
    name: venue.id,
    nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 },
    rpcUrls: { default: { http: [...venue.rpc_urls] } },
  })
const client = (venue: VenueJson): PublicClient =>
  createPublicClient({ chain: chainOf(venue), transport: http(venue.rpc_urls[0]) }) as PublicClient

const start = async (options: { viaNpm?: boolean } = {}) => {
  const devnet = spawnDevnet({ dataDir: dir.dataDir, port: await freeTcpPort(), ...options })
  started.push(devnet)
  await devnet.waitFor(BANNER)
  return devnet
}

/** Every process of the devnet: all below the started one, plus anything naming the data dir (anvil, postgres). */
const devnetProcesses = (devnet: DevnetProcess) => {
  const pids = new Map<number, string>([[devnet.pid, "npm start"]])
  for (const p of [...descendants(devnet.pid), ...processesMentioning(dir.parent)]) pids.set(p.pid, p.args)
  return pids
}

const expectAllGone = async (devnet: DevnetProcess, before: Map<number, string>) => {
  const gone = await eventually(() => [...before.keys()].every((pid) => !isAlive(pid)), 15_000)
  const left = [...before].filter(([pid]) => isAlive(pid)).map(([pid, args]) => `${pid} ${args}`)
  expect(left, `left running:\n${left.join("\n")}\n${devnet.output()}`).toEqual([])
  expect(gone).toBe(true)
  expect(processesMentioning(dir.parent)).toEqual([])
}

const isAlive = (pid: number) => {
  try {
    process.kill(pid, 0)
    return !readFileSync(`/proc/${pid}/stat`, "utf8").includes(") Z ")
  } catch {
    return false
  }
}

const reset = () =>
  spawnSync(process.execPath, ["--import", "tsx", "infra/devnet/Reset.ts"], {
    cwd: REPO_ROOT,
    env: { ...process.env, DEVNET_DATA_DIR: dir.dataDir },
    encoding: "utf8",
    timeout: 60_000,
  })

const recipient = privateKeyToAddress(generatePrivateKey())
const sent = parseUnits("12.345678", 6)
let firstDeployment: ReadonlyArray<Deployment> = []
let blockBeforeStop = 0n

afterAll(() => {
  for (const d of started) d.killGroup()
  dir.remove()
})

describe("devnet (npm start without configuration)", () => {
  let devnet: DevnetProcess

  beforeAll(async () => {
    devnet = await start()
  }, 120_000)

  it("boots from scratch: contracts at every address, funded accounts, the service answering", async () => {
    expect(devnet.output()).toMatch(/contracts deployed now/)
    expect(devnet.output()).toMatch(/TEST ONLY/)
    const config = readJson<ConfigJson>("devnet-config.json")
    firstDeployment = readJson<{ chains: ReadonlyArray<Deployment> }>("deployment.json").chains
    expect(config.venues.map((v) => v.chain_id)).toEqual([999, 42161])
    expect(config.app_origins).toContain("http://localhost:5173")
    const operator = privateKeyToAddress(config.operator_key)
    expect(config.operator_key).toBe(ANVIL_PRIVATE_KEYS[0])

    const info = await fetch(`${devnet.apiUrl}/v1/info`)
    expect(info.status).toBe(200)
    expect(((await info.json()) as { operator: string }).operator.toLowerCase()).toBe(operator.toLowerCase())
    expect((await fetch(`${devnet.apiUrl}/v1/docs`)).status).toBe(200)

    for (const venue of config.venues) {
      const deployment = firstDeployment.find((d) => d.chainId === venue.chain_id)!
      expect(venue.escrow).toBe(deployment.contracts.escrow.address)
      expect(venue.token).toBe(deployment.contracts.token.address)
      expect(venue.deployment_block).toBe(Number(deployment.contracts.escrow.block))
      expect(venue.api_url, "the venue simulator's URL").toMatch(/^http:\/\/127\.0\.0\.1:\d+$/)
      const pub = client(venue)
      expect(await pub.getChainId()).toBe(venue.chain_id)
      for (const [name, contract] of Object.entries(deployment.contracts)) {
        expect(await pub.getCode({ address: contract.address }), name).toMatch(/^0x[0-9a-f]{2,}$/)
      }
      for (const account of deployment.fundedAccounts) {
        const balance = await pub.readContract({
          address: venue.token,
          abi: mockUSDCAbi,
          functionName: "balanceOf",
          args: [account],
        })
        expect(balance).toBeGreaterThanOrEqual(BigInt(deployment.mintedPerAccount))
      }
      expect(await pub.getBalance({ address: operator })).toBeGreaterThan(10n ** 18n)
      expect(deployment.legacyOffers.length).toBeGreaterThan(0)
    }
  })

  it("keeps mining with finalized a few blocks behind latest", async () => {
    const pub = client(readJson<ConfigJson>("devnet-config.json").venues[0]!)
    const first = await pub.getBlockNumber()
    expect(await eventually(async () => (await pub.getBlockNumber()) >= first + 2n, 10_000)).toBe(true)
    const [latest, finalized] = await Promise.all([pub.getBlock(), pub.getBlock({ blockTag: "finalized" })])
    expect(latest.number - finalized.number).toBeGreaterThanOrEqual(2n)
    expect(latest.number - finalized.number).toBeLessThanOrEqual(6n)
  })

  it("makes a token transfer (read back after the restart)", async () => {
    const venue = readJson<ConfigJson>("devnet-config.json").venues[0]!
    const pub = client(venue)
    const wallet = createWalletClient({
      account: privateKeyToAccount(ANVIL_PRIVATE_KEYS[3] as Hex),
      chain: chainOf(venue),
      transport: http(venue.rpc_urls[0]),
    })
    const hash = await wallet.writeContract({
      address: venue.token,
      abi: mockUSDCAbi,
      functionName: "transfer",
      args: [recipient, sent],
    })
    const receipt = await pub.waitForTransactionReceipt({ hash, pollingInterval: 100 })
    expect(receipt.status).toBe("success")
    blockBeforeStop = receipt.blockNumber
  })

  it("refuses a second start on the same data dir, clearly, and reset refuses too", async () => {
    const second = spawnDevnet({ dataDir: dir.dataDir, port: await freeTcpPort() })
    started.push(second)
    const { code } = await second.exited
    expect(code).toBe(1)
    const owner = readJson<{ pid: number }>("devnet.lock").pid
    expect(descendants(devnet.pid).map((p) => p.pid)).toContain(owner)
    expect(second.output()).toMatch(
      new RegExp(`a devnet is already running on .* \\(pid ${owner}, .*kill ${owner}`, "s"),
    )
    expect(second.output()).toMatch(/Ctrl-C/)
    expect(second.output()).not.toMatch(/starting PostgreSQL/)

    const refused = reset()
    expect(refused.status).toBe(1)
    expect(refused.stderr).toMatch(/not resetting: a devnet is already running/)
    expect(existsSync(join(dir.dataDir, "deployment.json"))).toBe(true)
  }, 60_000)

  it("Ctrl-C (SIGINT to the process group) stops everything: no anvil, postgres or service left", async () => {
    const before = devnetProcesses(devnet)
    const names = [...before.values()].join("\n")
    expect(names).toMatch(/anvil/)
    expect(names).toMatch(/postgres/)
    expect(names).toMatch(/ServiceLauncher/)
    expect(names).toMatch(/DevnetMain/)
    devnet.interrupt()
    const { code } = await devnet.exited
    expect(code).toBe(0)
    expect(devnet.output()).toMatch(/\[devnet\] stopped/)
    await expectAllGone(devnet, before)
    expect(existsSync(join(dir.dataDir, "devnet.lock"))).toBe(false)
  }, 60_000)
})

describe("devnet restart (npm start again on the same data dir)", () => {
  let devnet: DevnetProcess

  beforeAll(async () => {
    // A lock left by a devnet that died without cleaning up: a pid that no longer runs.
    const dead = spawnSync(process.execPath, ["-e", "process.stdout.write(String(process.pid))"], {
      encoding: "utf8",
    })
    writeFileSync(
      join(dir.dataDir, "devnet.lock"),
      JSON.stringify({ pid: Number(dead.stdout), started_at: "earlier", data_dir: dir.dataDir, children: [] }),
    )
    devnet = await start({ viaNpm: true })
  }, 120_000)

  it("takes over a stale lock and resumes the recorded deployment", () => {
    expect(devnet.output()).toMatch(/taking over a stale lock of pid \d+/)
    expect(devnet.output()).toMatch(/resumed from existing data/)
    expect(readJson<{ chains: ReadonlyArray<Deployment> }>("deployment.json").chains).toEqual(firstDeployment)
  })

  it("keeps balances and blocks across the restart", async () => {
    const venue = readJson<ConfigJson>("devnet-config.json").venues[0]!
    const pub = client(venue)
    expect(await pub.getBlockNumber()).toBeGreaterThanOrEqual(blockBeforeStop)
    const balance = await pub.readContract({
      address: venue.token,
      abi: mockUSDCAbi,
      functionName: "balanceOf",
      args: [recipient],
    })
    expect(balance).toBe(sent)
    expect((await fetch(`${devnet.apiUrl}/v1/info`)).status).toBe(200)
  })

  it("SIGTERM to `npm start` alone stops everything", async () => {
    const before = devnetProcesses(devnet)
    expect([...before.values()].join("\n")).toMatch(/anvil/)
    process.kill(devnet.pid, "SIGTERM")
    await devnet.exited
    expect(devnet.output()).toMatch(/\[devnet\] stopped/)
    await expectAllGone(devnet, before)
  }, 60_000)

  it("npm run devnet:reset wipes the data dir once the devnet is stopped", () => {
    const result = reset()
    expect(result.status, result.stderr).toBe(0)
    expect(existsSync(dir.dataDir)).toBe(false)
  }, 60_000)
})

describe("devnet start-up exit paths", () => {
  it("a busy port fails with a message naming the variable, leaving nothing running", async () => {
    const other = makeDataDir()
    const server = createServer()
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r))
    const busy = (server.address() as AddressInfo).port
    try {
      const devnet = spawnDevnet({ dataDir: other.dataDir, port: busy })
      started.push(devnet)
      const seen = new Map<number, string>()
      const watch = setInterval(() => {
        for (const p of descendants(devnet.pid)) seen.set(p.pid, p.args)
      }, 25)
      const { code } = await devnet.exited
      clearInterval(watch)
      expect(code).toBe(1)
      expect(devnet.output()).toMatch(new RegExp(`port ${busy} \\(the service API\\) is already in use.*set PORT=`))
      // Whatever was started before the failure (the pre-warmed service, at least) is gone.
      expect(await eventually(() => [...seen.keys()].every((pid) => !isAlive(pid)), 10_000)).toBe(true)
      expect(processesMentioning(other.parent)).toEqual([])
      expect(existsSync(join(other.dataDir, "devnet.lock"))).toBe(false)
    } finally {
      server.close()
      other.remove()
    }
  }, 60_000)

  it("Ctrl-C in the middle of start-up stops what was started", async () => {
    const other = makeDataDir()
    try {
      const devnet = spawnDevnet({ dataDir: other.dataDir, port: await freeTcpPort() })
      started.push(devnet)
      await devnet.waitFor(/starting PostgreSQL/)
      const seen = new Map<number, string>()
      const watch = setInterval(() => {
        for (const p of [...descendants(devnet.pid), ...processesMentioning(other.parent)]) seen.set(p.pid, p.args)
      }, 50)
      await new Promise((r) => setTimeout(r, 500))
      devnet.interrupt()
      const { code } = await devnet.exited
      clearInterval(watch)
      expect(code).toBe(0)
      expect(devnet.output()).not.toMatch(BANNER)
      expect(await eventually(() => [...seen.keys()].every((pid) => !isAlive(pid)), 15_000)).toBe(true)
      expect(processesMentioning(other.parent)).toEqual([])
      expect(existsSync(join(other.dataDir, "devnet.lock"))).toBe(false)
    } finally {
      other.remove()
    }
  }, 90_000)
})

describe("npm start with SETTLEMENT_CONFIG", () => {
  it("runs the service alone with that config (no devnet)", async () => {
    const other = makeDataDir()
    try {
      const child = spawn(process.execPath, ["infra/devnet/Start.mjs"], {
        cwd: REPO_ROOT,
        env: { ...process.env, SETTLEMENT_CONFIG: join(other.parent, "missing.json"), DEVNET_DATA_DIR: other.dataDir },
        stdio: ["ignore", "pipe", "pipe"],
      })
      let out = ""
      child.stdout.on("data", (d: Buffer) => (out += d.toString()))
      child.stderr.on("data", (d: Buffer) => (out += d.toString()))
      const code = await new Promise<number | null>((resolve) => child.once("exit", resolve))
      expect(code).toBe(1)
      expect(out).toMatch(/SETTLEMENT_CONFIG .*missing\.json: cannot read the file \(no such file\)/)
      expect(out).not.toMatch(/\[devnet/)
      expect(existsSync(other.dataDir)).toBe(false)
    } finally {
      other.remove()
    }
  }, 60_000)
})
