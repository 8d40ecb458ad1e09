import { type ChildProcess, spawn } from "node:child_process"
import { appendFileSync } from "node:fs"
import { Effect } from "effect"
import { freePorts } from "../../src/FreePort.ts"

/**
 * The service (`src/main.ts`) as a child process for the crash harness. Unlike startService it
 * does not insist on reaching "listening on": an armed fault point may kill the process at any
 * moment, and the harness wants to observe exactly that (exit by SIGKILL).
 */
export interface CrashableService {
  readonly child: ChildProcess
  readonly output: () => string
  /** Resolves with the exit code or signal once the process is gone. */
  readonly exited: Promise<{ readonly code: number | null; readonly signal: NodeJS.Signals | null }>
}

export const spawnService = (env: Record<string, string>): CrashableService => {
  // SERVICE_NODE_ARGS: node options for the service alone (e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof`: its CPU profile,
  // written when it stops by SIGTERM; node refuses --cpu-prof in NODE_OPTIONS).
  const nodeArgs = process.env.SERVICE_NODE_ARGS?.split(" ").filter((a) => a !== "") ?? []
  const child = spawn(process.execPath, [...nodeArgs, "--import", "tsx", "src/main.ts"], {
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  })
  let out = ""
  // SERVICE_LOG=<file>: every line the service writes is appended there too (a bench's whole timeline, e.g. each
  // fill's transitions and relayer steps by time), where `output` keeps only the last 20 kB.
  const logFile = process.env.SERVICE_LOG
  const keep = (d: Buffer) => {
    if (logFile) appendFileSync(logFile, d)
    out = (out + d.toString()).slice(-20_000)
  }
  child.stdout?.on("data", keep)
  child.stderr?.on("data", keep)
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once("exit", (code, signal) => resolve({ code, signal })),
  )
  return { child, output: () => out, exited }
}

/** SIGTERM, then SIGKILL after `graceMs`; resolves when the process is gone. */
export const stopService = (s: CrashableService, graceMs = 10_000) =>
  Effect.promise(async () => {
    if (s.child.exitCode !== null || s.child.signalCode !== null) return
    s.child.kill("SIGTERM")
    const timer = setTimeout(() => s.child.kill("SIGKILL"), graceMs)
    await s.exited
    clearTimeout(timer)
  })

/** Waits for the process to exit on its own, at most `ms`; None when it is still running. */
export const awaitExit = (s: CrashableService, ms: number) =>
  Effect.promise(() =>
    Promise.race([s.exited, new Promise<undefined>((resolve) => setTimeout(() => resolve(undefined), ms))]),
  )

/** A runner process that reached "listening on", on the ports it was given. */
export interface ListeningRunner {
  readonly service: CrashableService
  readonly port: number
  readonly runnerPort: number
}

const PORT_TAKEN = /EADDRINUSE|is already in use/

/**
 * Spawns the service on two fresh free ports (PORT, RUNNER_PORT) and waits for its "listening on" line. freePorts is
 * racy: between its answer and the service's bind, another process may take the port (any outgoing connection
 * on the machine draws from the same ephemeral range). Such a start exits with "… is already in use"
 * (src/StartupChecks.ts) and is tried again on new ports, up to 5 times; any other exit fails with its output.
 * The caller stops the service (stopService).
 */
export const spawnListening = (name: string, env: Record<string, string>) =>
  Effect.gen(function* () {
    for (let attempt = 1; ; attempt++) {
      const [port, runnerPort] = yield* freePorts(2).pipe(Effect.orDie)
      const service = spawnService({ ...env, PORT: String(port), RUNNER_PORT: String(runnerPort) })
      const outcome = yield* Effect.promise(async () => {
        for (;;) {
          if (service.output().includes("listening on")) return "listening" as const
          if (service.child.exitCode !== null || service.child.signalCode !== null) {
            return PORT_TAKEN.test(service.output()) ? ("taken" as const) : ("exited" as const)
          }
          await new Promise((r) => setTimeout(r, 100))
        }
      })
      if (outcome === "listening") return { service, port, runnerPort } satisfies ListeningRunner
      if (outcome === "exited" || attempt === 5) {
        return yield* Effect.dieMessage(`${name} exited:\n${service.output()}`)
      }
    }
  })
