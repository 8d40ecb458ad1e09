// The settlement service as a child process of the devnet (ServiceLauncher.ts running src/main.ts).
//
// A child rather than in-process: the service owns its process (NodeRuntime.runMain exits it on SIGINT/SIGTERM),
// while the devnet must outlive it to stop the chains and the database afterwards; and its logs stay its own.
// Spawned first thing, so that loading its libraries overlaps with the chains, and started with `go` once its
// config is written.
import { type ChildProcess, spawn } from "node:child_process"
import { fileURLToPath } from "node:url"

/** The repository root: where `--import tsx` resolves and src/main.ts lives. */
export const REPO_ROOT = fileURLToPath(new URL("../../", import.meta.url))

/** `--import` this instead of tsx: it loads the heavy packages natively first (seconds of CPU less). */
const PRELOAD = new URL("./Preload.mjs", import.meta.url).href

/** Identifies the service process in the lock file (Lock.ts checks the command line before signalling). */
export const SERVICE_MATCH = "infra/devnet/ServiceLauncher.ts"

export interface ServiceChild {
  readonly pid: number
  /** Starts the service with this environment on top of the devnet's own (once). */
  readonly go: (env: Record<string, string>) => void
  /** Resolves when the process has exited, with how. */
  readonly exited: Promise<{ readonly code: number | null; readonly signal: NodeJS.Signals | null }>
  readonly hasExited: () => boolean
  /** SIGTERM, SIGKILL after `timeoutMs`; resolves once it exited. Idempotent. */
  readonly stop: (timeoutMs?: number) => Promise<void>
}

const live = new Set<ChildProcess>()
let exitHookInstalled = false

/** Last resort for exit paths that skip the scopes (process.exit from elsewhere): never leave the service behind. */
const installExitHook = () => {
  if (exitHookInstalled) return
  exitHookInstalled = true
  process.on("exit", () => {
    for (const child of live) child.kill("SIGTERM")
  })
}

export const prewarmService = (): ServiceChild => {
  installExitHook()
  const env: NodeJS.ProcessEnv = { ...process.env, DEVNET_PRELOAD: "service" }
  // The devnet config's operator is the funded anvil key; a developer's OPERATOR_KEY would replace it with a key
  // that has no gas on these chains.
  delete env.OPERATOR_KEY
  // Logs go straight to the terminal; readiness is polled over HTTP instead of parsed from them.
  const child = spawn(process.execPath, ["--import", PRELOAD, SERVICE_MATCH], {
    cwd: REPO_ROOT,
    env,
    stdio: ["pipe", "inherit", "inherit"],
  })
  live.add(child)
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.once("exit", (code, signal) => {
      live.delete(child)
      resolve({ code, signal })
    })
    child.once("error", () => {
      live.delete(child)
      resolve({ code: null, signal: null })
    })
  })
  // A write to a process that died must not crash the devnet (EPIPE); its exit is reported instead.
  child.stdin?.on("error", () => undefined)
  const hasExited = () => !live.has(child)
  if (child.pid === undefined) throw new Error("could not spawn the service (node not executable?)")
  let went = false
  return {
    pid: child.pid,
    go: (extra) => {
      if (went) return
      went = true
      child.stdin?.write(`${JSON.stringify(extra)}\n`)
    },
    exited,
    hasExited,
    stop: async (timeoutMs = 10_000) => {
      if (hasExited()) return
      child.kill("SIGTERM")
      const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs)
      await exited
      clearTimeout(timer)
    },
  }
}

/** Polls `url` until it answers 200; fails early when the service exits, and after `timeoutMs`. */
export const waitUntilAnswering = async (url: string, service: ServiceChild, timeoutMs = 90_000): Promise<void> => {
  const deadline = Date.now() + timeoutMs
  while (Date.now() < deadline) {
    if (service.hasExited()) {
      const { code, signal } = await service.exited
      throw new Error(`the service exited during start-up (code ${code}, signal ${signal}); its output is above`)
    }
    try {
      const res = await fetch(url, { signal: AbortSignal.timeout(2_000) })
      await res.arrayBuffer()
      if (res.status === 200) return
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 100))
  }
  throw new Error(`the service did not answer ${url} within ${timeoutMs / 1000} s`)
}
