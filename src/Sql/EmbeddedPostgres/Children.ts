// Child-process helpers of the embedded PostgreSQL (src/Sql/EmbeddedPostgres.ts): the error every step fails
// with, short bounded commands, the server's spawn (as the `postgres` user when we are root), its exit and output.
import { type ChildProcess, execFile, spawn } from "node:child_process"
import { Data, Effect } from "effect"

export class EmbeddedPostgresError extends Data.TaggedError("EmbeddedPostgresError")<{
  readonly message: string
  readonly cause?: unknown
  /**
   * prepare: a directory could not be made; access: the `postgres` user (we are root) cannot reach what it needs,
   * or cannot be made; data: existing data is out of that user's reach; start: initdb or the server ran and failed
   * (the message carries their words).
   */
  readonly reason?: "prepare" | "access" | "data" | "start"
}> {}

/** Bound on the small commands (id, useradd, the reachability check). */
const COMMAND_TIMEOUT_MS = 10_000
/** Lines of the server's own output kept for an error message. */
const LOG_LINES = 40
/** Messages in English: the server's ready line is looked for in them (src/Sql/EmbeddedPostgres.ts). */
export const LOCALE = "C"
export const OR_ELSE = "or set DATABASE_URL to a PostgreSQL of your own"

export const oneLine = (text: string) => text.replace(/\s+/g, " ").trim()
export const describe = (e: unknown) => oneLine(e instanceof Error ? e.message : String(e))
export const failure = (reason: NonNullable<EmbeddedPostgresError["reason"]>, message: string, cause?: unknown) =>
  new EmbeddedPostgresError({ reason, message, ...(cause === undefined ? {} : { cause }) })

/** The last lines PostgreSQL printed, so a failure names its cause. */
export const logTail = () => {
  const lines: string[] = []
  return {
    push: (chunk: unknown) => {
      const text = chunk instanceof Error ? chunk.message : String(chunk)
      for (const line of text.split("\n")) if (line.trim() !== "") lines.push(line.trim())
      lines.splice(0, Math.max(0, lines.length - LOG_LINES))
    },
    text: () => lines.join("\n"),
  }
}

/** Who the server runs as: undefined when we are not root (ourselves), else the `postgres` user. */
export interface RunAs {
  readonly uid: number
  readonly gid: number
}

interface Ran {
  readonly code: number
  readonly stdout: string
  readonly stderr: string
}

/** A short command, bounded: a spawn failure or a timeout fails; any exit code succeeds with its output. */
export const command = (file: string, args: ReadonlyArray<string>, as?: RunAs): Effect.Effect<Ran, Error> =>
  Effect.async<Ran, Error>((resume) => {
    const child = execFile(
      file,
      [...args],
      { timeout: COMMAND_TIMEOUT_MS, killSignal: "SIGKILL", encoding: "utf8", ...as },
      (error, stdout, stderr) => {
        if (error === null) return resume(Effect.succeed({ code: 0, stdout, stderr }))
        if (typeof error.code === "number") return resume(Effect.succeed({ code: error.code, stdout, stderr }))
        resume(Effect.fail(error.killed ? new Error(`${file} gave no answer in ${COMMAND_TIMEOUT_MS} ms`) : error))
      },
    )
    return Effect.sync(() => child.kill("SIGKILL"))
  })

/** Postgres children still running, stopped when this process exits or dies of a signal nobody else handles. */
const running = new Set<ChildProcess>()
let hooksInstalled = false
export const track = (child: ChildProcess) => {
  running.add(child)
  child.once("exit", () => running.delete(child))
  if (hooksInstalled) return
  hooksInstalled = true
  const stopAll = () => {
    for (const c of running) c.kill("SIGINT")
  }
  process.on("exit", stopAll)
  for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"] as const) {
    const onSignal = () => {
      // Someone else handles it (the service, the devnet): they stop us in order through the scope.
      if (process.listenerCount(signal) > 1) return
      stopAll()
      process.removeListener(signal, onSignal)
      process.kill(process.pid, signal)
    }
    process.on(signal, onSignal)
  }
}

/** Settles once: the first of a child's `error`, exit (after its output, at most 1 s later) or success. */
export const once = <A, E>(resume: (effect: Effect.Effect<A, E>) => void) => {
  let done = false
  return (effect: Effect.Effect<A, E>) => {
    if (done) return
    done = true
    resume(effect)
  }
}
export const onExit = (child: ChildProcess, f: (code: number | null, signal: NodeJS.Signals | null) => void) =>
  child.once("exit", (code, signal) => {
    const late = setTimeout(() => f(code, signal), 1_000)
    child.once("close", () => {
      clearTimeout(late)
      f(code, signal)
    })
  })

/** One line for a child that could not be spawned at all (EACCES, ENOENT), with what fixes it. */
export const spawnFailure = (file: string, as: RunAs | undefined, error: Error) => {
  const code = (error as NodeJS.ErrnoException).code
  const who = as === undefined ? "" : " as the postgres user (PostgreSQL refuses to run as root)"
  const fix =
    code === "EACCES"
      ? `it or a directory above it is not executable${as === undefined ? "" : " by that user"}: fix its permissions or reinstall with npm ci, ${OR_ELSE}`
      : code === "ENOENT"
        ? `reinstall with npm ci, ${OR_ELSE}`
        : OR_ELSE
  return failure("access", `embedded PostgreSQL cannot run ${file}${who}: ${describe(error)}; ${fix}`, error)
}

export const spawnAs = (file: string, args: ReadonlyArray<string>, as: RunAs | undefined) =>
  spawn(file, [...args], {
    ...as,
    env: { ...process.env, LC_MESSAGES: LOCALE },
    stdio: ["ignore", "pipe", "pipe"],
  })
