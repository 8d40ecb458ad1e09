// Starts and stops local anvil chains (one child process per chain id).
//
// The platform binary from @foundry-rs/anvil-linux-amd64 is spawned directly (no npm wrapper: faster, and
// signals reach anvil itself). Every started child is SIGTERMed when this process exits or receives
// SIGINT/SIGTERM, so tests and the devnet leave no orphans (a SIGKILLed parent cannot clean up; nothing can).
// SIGTERM, not SIGKILL, so that anvil dumps its `--state` file on the way out.
//
// Each anvil keeps the states of older blocks that no longer fit in memory in a directory of its own
// (`--cache-path`, under the OS temp dir), removed when it exits or this process does. Anvil's default place,
// ~/.foundry/anvil/tmp, is never cleaned (not even on SIGTERM): a day of test runs left 78 GB there, 48 GB of it
// from one 100k-event ingest bench. anvil keeps at most 3,600 there (~0.8 MB each on the devnet's chains, ~3 GB a
// chain after an hour of 1 s blocks). Do not lower that (`--max-persisted-states`, `--prune-history`) for a chain
// that takes concurrent sends: anvil 1.7.1 then lost its latest state (a sender's nonce fell back thousands) within
// a few thousand blocks at 128, 600 and prune 200 (README, Devnet).
import { type ChildProcess, spawn } from "node:child_process"
import { mkdtempSync, rmSync } from "node:fs"
import { createRequire } from "node:module"
import { tmpdir } from "node:os"
import { join } from "node:path"

export interface AnvilOptions {
  /** Chain id (default 31337). */
  readonly chainId?: number
  /** TCP port on 127.0.0.1; 0 (default) lets the OS pick a free one. */
  readonly port?: number
  /** Interval mining every `blockTime` seconds; omitted = automine (a block per transaction). */
  readonly blockTime?: number
  /** `--slots-in-an-epoch`: safe lags latest by `slots`, finalized by `2 × slots` (anvil default 32). */
  readonly slotsInAnEpoch?: number
  /** `--state <file>`: loaded at start when it exists, written when anvil exits (persistence across restarts). */
  readonly stateFile?: string
  /** `--state-interval <s>`: also dump the state file periodically (survives a SIGKILL, up to the interval). */
  readonly stateIntervalSeconds?: number
  /** `--timestamp`: genesis block timestamp (Unix seconds). */
  readonly genesisTimestamp?: number
  /** Extra raw anvil flags. */
  readonly extraArgs?: ReadonlyArray<string>
  /** How long to wait for the RPC to answer `eth_chainId` (default 15 s). */
  readonly startTimeoutMs?: number
}

export interface AnvilInstance {
  readonly rpcUrl: string
  readonly port: number
  readonly chainId: number
  readonly pid: number
  /** SIGTERM (anvil dumps its state file), then SIGKILL after `timeoutMs` (default 5 s). Idempotent. */
  readonly stop: (timeoutMs?: number) => Promise<void>
  /** Why anvil is gone (its exit code or signal, and the tail of its output), or undefined while it runs. */
  readonly exitReason: () => string | undefined
  /** Where this anvil spills older blocks' states (`--cache-path`); removed when it exits. */
  readonly cacheDir: string
}

/** The default anvil accounts ("test test … junk" mnemonic), each funded with 10 000 ETH. */
export const ANVIL_PRIVATE_KEYS = [
  "0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80",
  "0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d",
  "0x5de4111afa1a4b94908f83103eb1f1706367c2e68ca870fc3fb9a804cdab365a",
  "0x7c852118294e51e653712a81e05800f419141751be58f605c371e15141b007a6",
  "0x47e179ec197488593b187f80a00eb0da91f1b9d0b13f8733639f19c30a34926a",
  "0x8b3a350cf5c34c9194ca85829a2df0ec3153be0318b5e2d3348e872092edffba",
  "0x92db14e403b83dfe3df233f83dfa3a0d7096f21ca9b0d6d6b8d88b2b4ec1564e",
  "0x4bbbf85ce3377467afe5d46f804f221813b2bb87f24d81f60f1fcdbf7cbf4356",
  "0xdbda1821b80551c9d65939329250298aa3472ba22feea921c0cf5d620ea67b97",
  "0x2a871d0798f97d79848a013d4936a73bf4cc922c825d33c1cf7073dff6d409c6",
] as const

const require = createRequire(import.meta.url)

/** Absolute path of the anvil binary shipped in the platform package. */
export const anvilBinaryPath = (): string => require.resolve("@foundry-rs/anvil-linux-amd64/bin/anvil")

/** Running children and their state cache directories. */
const running = new Map<ChildProcess, string>()
let hooksInstalled = false

const removeCache = (dir: string) => rmSync(dir, { recursive: true, force: true })

const terminateAll = () => {
  for (const [child, cacheDir] of running) {
    child.kill("SIGTERM")
    // This process is exiting: its exit handlers below will not run.
    removeCache(cacheDir)
  }
}

const installExitHooks = () => {
  if (hooksInstalled) return
  hooksInstalled = true
  process.on("exit", terminateAll)
  for (const signal of ["SIGINT", "SIGTERM"] as const) {
    const onSignal = () => {
      terminateAll()
      // If nobody else handles the signal, keep its default meaning (terminate) after cleaning up.
      if (process.listenerCount(signal) === 1) {
        process.removeListener(signal, onSignal)
        process.kill(process.pid, signal)
      }
    }
    process.on(signal, onSignal)
  }
}

const rpcChainId = async (rpcUrl: string): Promise<number | undefined> => {
  try {
    const res = await fetch(rpcUrl, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "eth_chainId", params: [] }),
      signal: AbortSignal.timeout(1_000),
    })
    const body = (await res.json()) as { result?: string }
    return typeof body.result === "string" ? Number.parseInt(body.result, 16) : undefined
  } catch {
    return undefined
  }
}

const buildArgs = (o: AnvilOptions, chainId: number): Array<string> => {
  const args = ["--host", "127.0.0.1", "--port", String(o.port ?? 0), "--chain-id", String(chainId)]
  if (o.blockTime !== undefined) args.push("--block-time", String(o.blockTime))
  if (o.slotsInAnEpoch !== undefined) args.push("--slots-in-an-epoch", String(o.slotsInAnEpoch))
  if (o.stateFile !== undefined) args.push("--state", o.stateFile)
  if (o.stateIntervalSeconds !== undefined) args.push("--state-interval", String(o.stateIntervalSeconds))
  if (o.genesisTimestamp !== undefined) args.push("--timestamp", String(o.genesisTimestamp))
  args.push(...(o.extraArgs ?? []))
  return args
}

/** Starts anvil and resolves once its RPC answers `eth_chainId` with the requested chain id. */
export const startAnvil = async (options: AnvilOptions = {}): Promise<AnvilInstance> => {
  const chainId = options.chainId ?? 31337
  const timeoutMs = options.startTimeoutMs ?? 15_000
  installExitHooks()
  const cacheDir = mkdtempSync(join(tmpdir(), "anvil-states-"))
  const args = [...buildArgs(options, chainId), "--cache-path", cacheDir]
  const child = spawn(anvilBinaryPath(), args, { stdio: ["ignore", "pipe", "pipe"] })
  running.set(child, cacheDir)

  let output = ""
  let exited: string | undefined
  const exitPromise = new Promise<void>((resolve) => {
    child.once("exit", (code, signal) => {
      running.delete(child)
      removeCache(cacheDir)
      exited = `anvil exited (code ${code}, signal ${signal})`
      resolve()
    })
  })
  child.once("error", (e) => {
    running.delete(child)
    removeCache(cacheDir)
    exited = `anvil failed to start: ${e.message}`
  })
  // Keep only the tail: anvil logs every request; the pipes must be drained or anvil blocks.
  const collect = (chunk: Buffer) => {
    output = (output + chunk.toString("utf8")).slice(-8_192)
  }
  child.stdout.on("data", collect)
  child.stderr.on("data", collect)

  const stop = async (stopTimeoutMs = 5_000): Promise<void> => {
    if (child.exitCode !== null || child.signalCode !== null) return
    child.kill("SIGTERM")
    const timer = setTimeout(() => child.kill("SIGKILL"), stopTimeoutMs)
    await exitPromise
    clearTimeout(timer)
  }

  const deadline = Date.now() + timeoutMs
  let port: number | undefined
  while (Date.now() < deadline) {
    if (exited !== undefined) throw new Error(`${exited}\n${output}`)
    // Trust the port only once our own child says it is listening (a fixed port may belong to another process).
    if (port === undefined) {
      const match = /Listening on 127\.0\.0\.1:(\d+)/.exec(output)
      if (match?.[1] !== undefined) port = Number(match[1])
    }
    if (port !== undefined) {
      const rpcUrl = `http://127.0.0.1:${port}`
      if ((await rpcChainId(rpcUrl)) === chainId) {
        const pid = child.pid
        if (pid === undefined) throw new Error("anvil has no pid")
        const exitReason = () => (exited === undefined ? undefined : `${exited}\n${output.slice(-2_000)}`)
        return { rpcUrl, port, chainId, pid, stop, exitReason, cacheDir }
      }
    }
    await new Promise((r) => setTimeout(r, 25))
  }
  await stop()
  throw new Error(`anvil did not answer within ${timeoutMs} ms\n${output}`)
}
