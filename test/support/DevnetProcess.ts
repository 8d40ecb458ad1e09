// Runs `npm start` (the devnet) as a real process for tests and benchmarks, in a data dir of its own and on free
// ports, so it never touches the developer's ./.data or a running devnet.
//
// Spawned detached, i.e. as the leader of a new process group, as a terminal runs a command: `interrupt()` sends
// SIGINT to that group, exactly what a terminal's Ctrl-C does. (The devnet itself runs in a group of its own under
// Start.mjs, so its processes are found by walking the process tree instead: `descendants`.)
import { type ChildProcess, execFileSync, spawn } from "node:child_process"
import { chmodSync, mkdtempSync, rmSync } from "node:fs"
import { createServer } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"

export const REPO_ROOT = fileURLToPath(new URL("../../", import.meta.url))

/** A free loopback port (racy by nature; the devnet binds it right away). */
export const freeTcpPort = () =>
  new Promise<number>((resolve, reject) => {
    const server = createServer()
    server.once("error", reject)
    server.listen(0, "127.0.0.1", () => {
      const address = server.address()
      const port = typeof address === "object" && address !== null ? address.port : 0
      server.close(() => resolve(port))
    })
  })

/** A temporary parent whose `data` subdirectory is the devnet's data dir. Traversable by the postgres user. */
export const makeDataDir = () => {
  const parent = mkdtempSync(join(tmpdir(), "devnet-test-"))
  chmodSync(parent, 0o755)
  return { parent, dataDir: join(parent, "data"), remove: () => rmSync(parent, { recursive: true, force: true }) }
}

export interface DevnetProcess {
  readonly child: ChildProcess
  readonly pid: number
  readonly apiUrl: string
  readonly output: () => string
  /** Resolves once `pattern` appears in stdout/stderr; rejects on exit or timeout, with the output so far. */
  readonly waitFor: (pattern: RegExp, timeoutMs?: number) => Promise<RegExpMatchArray>
  readonly exited: Promise<{ readonly code: number | null; readonly signal: NodeJS.Signals | null }>
  /** SIGINT to the whole process group, as a terminal's Ctrl-C. */
  readonly interrupt: () => void
  /** Last resort: SIGKILL to every process still in the group or below it. */
  readonly killGroup: () => void
}

export interface DevnetSpawnOptions {
  readonly dataDir: string
  readonly port: number
  /** `npm start` itself (default: what it runs, `node infra/devnet/Start.mjs`, without npm). */
  readonly viaNpm?: boolean
  readonly env?: Record<string, string>
}

export const spawnDevnet = (options: DevnetSpawnOptions): DevnetProcess => {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    DEVNET_DATA_DIR: options.dataDir,
    PORT: String(options.port),
    DEVNET_HYPERLIQUID_RPC_PORT: "0",
    DEVNET_ASTER_RPC_PORT: "0",
    DEVNET_HYPERLIQUID_API_PORT: "0",
    DEVNET_ASTER_API_PORT: "0",
    ...options.env,
  }
  // The devnet path is what is under test: no inherited service configuration.
  for (const name of ["SETTLEMENT_CONFIG", "DATABASE_URL", "OPERATOR_KEY"]) {
    if (options.env?.[name] === undefined) delete env[name]
  }
  const [command, args] = options.viaNpm
    ? ["npm", ["start", "--silent"]]
    : [process.execPath, ["infra/devnet/Start.mjs"]]
  const child = spawn(command, args, { cwd: REPO_ROOT, env, detached: true, stdio: ["ignore", "pipe", "pipe"] })
  if (child.pid === undefined) throw new Error(`could not spawn ${command}`)
  const pid = child.pid
  let out = ""
  const listeners = new Set<() => void>()
  const onData = (d: Buffer) => {
    out += d.toString("utf8")
    for (const l of listeners) l()
  }
  child.stdout?.on("data", onData)
  child.stderr?.on("data", onData)
  let done = false
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    // "close", not "exit": every byte of output has been read by then.
    child.once("close", (code, signal) => {
      done = true
      resolve({ code, signal })
      for (const l of listeners) l()
    })
  })

  const waitFor = (pattern: RegExp, timeoutMs = 90_000) =>
    new Promise<RegExpMatchArray>((resolve, reject) => {
      const check = () => {
        const match = out.match(pattern)
        if (match) {
          cleanup()
          resolve(match)
        } else if (done) {
          cleanup()
          reject(new Error(`devnet exited before printing ${pattern}:\n${out}`))
        }
      }
      const timer = setTimeout(() => {
        cleanup()
        reject(new Error(`devnet did not print ${pattern} within ${timeoutMs} ms:\n${out}`))
      }, timeoutMs)
      const cleanup = () => {
        clearTimeout(timer)
        listeners.delete(check)
      }
      listeners.add(check)
      check()
    })

  const signalGroup = (signal: NodeJS.Signals) => {
    try {
      process.kill(-pid, signal)
    } catch {
      // the group is gone
    }
  }
  return {
    child,
    pid,
    apiUrl: `http://127.0.0.1:${options.port}`,
    output: () => out,
    waitFor,
    exited,
    interrupt: () => signalGroup("SIGINT"),
    killGroup: () => {
      for (const p of descendants(pid)) {
        try {
          process.kill(p.pid, "SIGKILL")
        } catch {
          // gone
        }
      }
      signalGroup("SIGKILL")
    },
  }
}

/** Every process below `root` in the process tree (children, their children, …), from ps. */
export const descendants = (root: number): Array<{ readonly pid: number; readonly args: string }> => {
  const rows = execFileSync("ps", ["-eo", "pid=,ppid=,args="], { encoding: "utf8" })
    .split("\n")
    .map((line) => line.trim().match(/^(\d+)\s+(\d+)\s+(.*)$/))
    .flatMap((m) => (m === null ? [] : [{ pid: Number(m[1]), ppid: Number(m[2]), args: m[3]! }]))
  const found: Array<{ pid: number; args: string }> = []
  const frontier = [root]
  while (frontier.length > 0) {
    const parent = frontier.pop()
    for (const r of rows) {
      if (r.ppid === parent) {
        found.push({ pid: r.pid, args: r.args })
        frontier.push(r.pid)
      }
    }
  }
  return found
}

/** Processes whose command line mentions `text` (e.g. the data dir: anvil's state file, postgres -D). */
export const processesMentioning = (text: string): Array<{ readonly pid: number; readonly args: string }> =>
  execFileSync("ps", ["-eo", "pid=,args="], { encoding: "utf8" })
    .split("\n")
    .map((line) => line.trim().match(/^(\d+)\s+(.*)$/))
    .flatMap((m) =>
      m !== null && m[2]!.includes(text) && !m[2]!.startsWith("ps ") ? [{ pid: Number(m[1]), args: m[2]! }] : [],
    )

/** Polls `f` until it returns true, every 100 ms, for at most `timeoutMs`. */
export const eventually = async (f: () => boolean | Promise<boolean>, timeoutMs: number): Promise<boolean> => {
  const deadline = Date.now() + timeoutMs
  while (Date.now() < deadline) {
    if (await f()) return true
    await new Promise((r) => setTimeout(r, 100))
  }
  return f()
}
