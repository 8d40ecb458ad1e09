import { type ChildProcess, spawn } from "node:child_process"
import { Effect } from "effect"

export interface ServiceProcess {
  readonly child: ChildProcess
  readonly output: () => string
}

/**
 * Runs `src/main.ts` as a real process (as `npm start` does) and waits for its start-up line.
 * The process is stopped with SIGTERM when the scope closes, SIGKILL if it lingers.
 */
export const startService = (env: Record<string, string>, timeoutMs = 90_000) =>
  Effect.acquireRelease(
    Effect.async<ServiceProcess, Error>((resume) => {
      const child = spawn(process.execPath, ["--import", "tsx", "src/main.ts"], {
        env: { ...process.env, ...env },
        stdio: ["ignore", "pipe", "pipe"],
      })
      let out = ""
      const timer = setTimeout(() => resume(Effect.fail(new Error(`service did not start:\n${out}`))), timeoutMs)
      const onData = (d: Buffer) => {
        out += d.toString()
        if (out.includes("listening on")) {
          clearTimeout(timer)
          resume(Effect.succeed({ child, output: () => out }))
        }
      }
      child.stdout.on("data", onData)
      child.stderr.on("data", (d: Buffer) => (out += d.toString()))
      child.on("exit", (code) => {
        clearTimeout(timer)
        resume(Effect.fail(new Error(`service exited with ${code}:\n${out}`)))
      })
    }),
    ({ child }) => stopProcess(child),
  )

export const stopProcess = (child: ChildProcess): Effect.Effect<void> =>
  Effect.async<void>((resume) => {
    if (child.exitCode !== null || child.signalCode !== null) return resume(Effect.void)
    const kill = setTimeout(() => child.kill("SIGKILL"), 15_000)
    child.once("exit", () => {
      clearTimeout(kill)
      resume(Effect.void)
    })
    child.kill("SIGTERM")
  })
