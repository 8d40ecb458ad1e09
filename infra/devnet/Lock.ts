// One devnet per data dir: a lock file holding the owner's pid.
//
// Created with O_EXCL, so two starts racing for a free lock cannot both win. A lock whose pid is dead is stale
// (the devnet was SIGKILLed, or the machine rebooted) and is taken over; the children it recorded (anvil,
// postgres, the service) may have outlived it as orphans still holding the ports and the database, so they are
// stopped first, but only when /proc confirms the pid still runs the program we recorded (pids get reused).
import {
  closeSync,
  existsSync,
  linkSync,
  openSync,
  readFileSync,
  renameSync,
  unlinkSync,
  writeFileSync,
  writeSync,
} from "node:fs"

export interface LockChild {
  readonly name: string
  readonly pid: number
  /** A substring of the process's command line, checked before the pid is signalled. */
  readonly match: string
}

export interface LockInfo {
  readonly pid: number
  /** /proc start time of `pid` (clock ticks since boot): tells our process from a later one reusing the pid. */
  readonly proc_start?: string
  readonly started_at: string
  readonly data_dir: string
  readonly api_url?: string
  readonly children: ReadonlyArray<LockChild>
}

export class DevnetAlreadyRunning extends Error {
  constructor(
    readonly lockFile: string,
    readonly owner: LockInfo,
  ) {
    super(
      [
        `a devnet is already running on ${owner.data_dir} (pid ${owner.pid}, started ${owner.started_at}` +
          `${owner.api_url ? `, API ${owner.api_url}` : ""}).`,
        `Stop it first (Ctrl-C in its terminal, or kill ${owner.pid}), or use another data dir (DEVNET_DATA_DIR).`,
        `Lock file: ${lockFile}`,
      ].join("\n"),
    )
    this.name = "DevnetAlreadyRunning"
  }
}

/** Field 22 of /proc/<pid>/stat (start time); undefined off Linux or when the process is gone. */
export const procStartTime = (pid: number): string | undefined => {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8")
    // The command name (field 2) is parenthesised and may contain spaces: count fields after the last ')'.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
    // fields[0] is field 3 (state); a zombie has exited already.
    if (fields[0] === "Z") return undefined
    return fields[19]
  } catch {
    return undefined
  }
}

const procCmdline = (pid: number): string | undefined => {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, "utf8").replaceAll("\0", " ")
  } catch {
    return undefined
  }
}

/** Whether `pid` runs (zombies do not count). */
export const pidAlive = (pid: number): boolean => {
  try {
    process.kill(pid, 0)
  } catch (e) {
    // EPERM: it exists but belongs to someone else.
    return (e as NodeJS.ErrnoException).code === "EPERM"
  }
  return existsSync("/proc/self/stat") ? procStartTime(pid) !== undefined : true
}

/** Whether the lock's owner still runs: same pid and, where /proc tells, the same process (not a reused pid). */
export const lockOwnerAlive = (info: LockInfo): boolean => {
  if (!pidAlive(info.pid)) return false
  if (info.proc_start === undefined) return true
  const now = procStartTime(info.pid)
  return now === undefined || now === info.proc_start
}

export const readLock = (file: string): LockInfo | undefined => {
  try {
    return JSON.parse(readFileSync(file, "utf8")) as LockInfo
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT") return undefined
    // A lock being written this instant, or garbage: treat as unknown owner with a dead pid.
    return { pid: -1, started_at: "unknown", data_dir: "unknown", children: [] }
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

/**
 * Stops the processes a dead devnet left behind: SIGTERM (anvil dumps its state, postgres shuts down cleanly),
 * SIGKILL after `timeoutMs`. Only pids whose command line still contains the recorded `match` are touched.
 */
export const reapOrphans = async (info: LockInfo, log: (line: string) => void, timeoutMs = 10_000) => {
  const targets = info.children.filter((c) => pidAlive(c.pid) && (procCmdline(c.pid) ?? "").includes(c.match))
  if (targets.length === 0) return
  for (const c of targets) {
    log(`stopping ${c.name} (pid ${c.pid}) left running by the previous devnet (pid ${info.pid})`)
    process.kill(c.pid, "SIGTERM")
  }
  const deadline = Date.now() + timeoutMs
  while (targets.some((c) => pidAlive(c.pid)) && Date.now() < deadline) await sleep(50)
  for (const c of targets) if (pidAlive(c.pid)) process.kill(c.pid, "SIGKILL")
}

export interface HeldLock {
  readonly file: string
  readonly info: () => LockInfo
  /** Records the running children (for a later takeover's reaping) and the API URL (for the refusal message). */
  readonly update: (patch: Partial<Pick<LockInfo, "api_url" | "children">>) => void
  /** Removes the lock if it is still ours. Idempotent. */
  readonly release: () => void
}

const createExclusive = (file: string, info: LockInfo): boolean => {
  let fd: number
  try {
    fd = openSync(file, "wx")
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "EEXIST") return false
    throw e
  }
  try {
    writeSync(fd, JSON.stringify(info, null, 2))
  } finally {
    closeSync(fd)
  }
  return true
}

/**
 * Takes the data dir's lock, or throws DevnetAlreadyRunning. A stale lock is taken over after reaping its
 * orphans. The stale file is first moved aside with an atomic rename, and what was moved is checked: if another
 * start replaced the lock meanwhile, its lock is put back (link fails rather than overwrite) and we refuse.
 */
export const acquireLock = async (
  file: string,
  dataDir: string,
  log: (line: string) => void = () => {},
): Promise<HeldLock> => {
  const procStart = procStartTime(process.pid)
  let info: LockInfo = {
    pid: process.pid,
    ...(procStart === undefined ? {} : { proc_start: procStart }),
    started_at: new Date().toISOString(),
    data_dir: dataDir,
    children: [],
  }
  for (let attempt = 0; attempt < 5; attempt++) {
    if (createExclusive(file, info))
      return held(
        file,
        () => info,
        (next) => (info = next),
      )
    const owner = readLock(file)
    if (owner === undefined) continue // released between our open and read: try again
    if (owner.pid === -1) {
      // Unparsable: possibly a lock being written right now; give its writer a moment before judging it.
      await sleep(200)
      const again = readLock(file)
      if (again !== undefined && again.pid !== -1) continue
    } else if (lockOwnerAlive(owner)) {
      throw new DevnetAlreadyRunning(file, owner)
    }
    const aside = `${file}.stale.${process.pid}`
    try {
      renameSync(file, aside)
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === "ENOENT") continue
      throw e
    }
    const moved = readLock(aside)
    if (moved !== undefined && moved.pid !== owner.pid && moved.pid !== -1 && lockOwnerAlive(moved)) {
      // We moved a live lock that replaced the stale one after we read it: restore it and refuse.
      try {
        linkSync(aside, file)
      } catch {}
      unlinkSync(aside)
      throw new DevnetAlreadyRunning(file, moved)
    }
    unlinkSync(aside)
    if (owner.pid !== -1) {
      log(`taking over a stale lock of pid ${owner.pid} (no longer running)`)
      await reapOrphans(owner, log)
    }
  }
  throw new Error(`could not take the devnet lock ${file} (it keeps changing); is another devnet starting?`)
}

const held = (file: string, get: () => LockInfo, set: (info: LockInfo) => void): HeldLock => {
  let released = false
  return {
    file,
    info: get,
    update: (patch) => {
      if (released) return
      const next = { ...get(), ...patch }
      set(next)
      // Rename over the old file: readers see the old or the new lock, never a partial one.
      const tmp = `${file}.${process.pid}.tmp`
      writeFileSync(tmp, JSON.stringify(next, null, 2))
      renameSync(tmp, file)
    },
    release: () => {
      if (released) return
      released = true
      if (readLock(file)?.pid === process.pid) {
        try {
          unlinkSync(file)
        } catch {}
      }
    },
  }
}
