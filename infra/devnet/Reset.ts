// `npm run devnet:reset`: wipes the devnet's data dir (DEVNET_DATA_DIR, default ./.data): database, chain
// state, deployment record, config. Refuses while a devnet (or a service on the embedded database) runs on it.
//
// It takes the devnet lock itself before deleting, so a devnet starting meanwhile is refused rather than having
// its files deleted under it; a stale lock's leftover processes are stopped first (Lock.ts).
import { existsSync, readFileSync, rmSync, statSync } from "node:fs"
import { homedir } from "node:os"
import { relative, resolve, sep } from "node:path"
import { devnetPaths } from "./DevnetOptions.ts"
import { acquireLock, DevnetAlreadyRunning, pidAlive } from "./Lock.ts"

const fail = (message: string): never => {
  console.error(`[devnet:reset] ${message}`)
  process.exit(1)
}

const dataDir = resolve(process.env.DEVNET_DATA_DIR || ".data")
const paths = devnetPaths(dataDir)
const cwd = process.cwd()

// Guard against a DEVNET_DATA_DIR pointing somewhere precious.
if (dataDir === resolve("/") || dataDir === homedir() || cwd === dataDir || cwd.startsWith(`${dataDir}${sep}`)) {
  fail(`refusing to delete ${dataDir}: not a devnet data dir (check DEVNET_DATA_DIR)`)
}
if (!existsSync(dataDir)) {
  console.log(`[devnet:reset] nothing to reset: ${dataDir} does not exist`)
  process.exit(0)
}
if (!statSync(dataDir).isDirectory()) fail(`${dataDir} is not a directory`)

// A service started with SETTLEMENT_CONFIG but no DATABASE_URL runs the embedded PostgreSQL in ./.data/pg
// without the devnet lock.
try {
  const pid = Number(readFileSync(`${paths.pg}/postmaster.pid`, "utf8").split("\n")[0])
  if (Number.isInteger(pid) && pid > 0 && pidAlive(pid) && !existsSync(paths.lock)) {
    fail(`PostgreSQL (pid ${pid}) is running on ${paths.pg}; stop the service using it first`)
  }
} catch {
  // no postmaster.pid: no database running there
}

try {
  const lock = await acquireLock(paths.lock, dataDir, (line) => console.log(`[devnet:reset] ${line}`))
  rmSync(dataDir, { recursive: true, force: true })
  lock.release()
} catch (e) {
  if (e instanceof DevnetAlreadyRunning) fail(`not resetting: ${e.message}`)
  fail(e instanceof Error ? e.message : String(e))
}
const shown = relative(cwd, dataDir).startsWith("..") ? dataDir : `./${relative(cwd, dataDir)}`
console.log(`[devnet:reset] removed ${shown}; the next npm start deploys from scratch`)
