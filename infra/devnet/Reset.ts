// `npm run devnet:reset`: wipes the devnet's data dir (DEVNET_DATA_DIR, default ./.data): database, chain
// state, deployment record, config. Refuses while a devnet (or a service on the embedded database) runs on it.
// The database too when it lives elsewhere: as root in a private clone, <data>/pg moves to relocatedDataDir.
//
// It takes the devnet lock itself before deleting, so a devnet starting meanwhile is refused rather than having
// its files deleted under it; a stale lock's leftover processes are stopped first (Lock.ts).
import { existsSync, lstatSync, readFileSync, rmSync, statSync } from "node:fs"
import { homedir } from "node:os"
import { dirname, join, relative, resolve, sep } from "node:path"
import { relocatedDataDir } from "../../src/Sql/EmbeddedPostgres.ts"
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
// The relocated database's directory, when there is one made for this data dir (root-owned, naming it).
const relocatedHome = (() => {
  const home = dirname(relocatedDataDir(paths.pg))
  try {
    const st = lstatSync(home)
    const source = readFileSync(join(home, "SOURCE"), "utf8").trim()
    return st.isDirectory() && st.uid === 0 && source === paths.pg ? home : undefined
  } catch {
    return undefined
  }
})()

if (!existsSync(dataDir) && relocatedHome === undefined) {
  console.log(`[devnet:reset] nothing to reset: ${dataDir} does not exist`)
  process.exit(0)
}
if (existsSync(dataDir) && !statSync(dataDir).isDirectory()) fail(`${dataDir} is not a directory`)

// A service started with SETTLEMENT_CONFIG but no DATABASE_URL runs the embedded PostgreSQL in ./.data/pg
// without the devnet lock.
for (const pg of [paths.pg, ...(relocatedHome === undefined ? [] : [join(relocatedHome, "pg")])]) {
  try {
    const pid = Number(readFileSync(`${pg}/postmaster.pid`, "utf8").split("\n")[0])
    if (Number.isInteger(pid) && pid > 0 && pidAlive(pid) && !existsSync(paths.lock)) {
      fail(`PostgreSQL (pid ${pid}) is running on ${pg}; stop the service using it first`)
    }
  } catch {
    // no postmaster.pid: no database running there
  }
}

const removed: Array<string> = []
try {
  if (existsSync(dataDir)) {
    const lock = await acquireLock(paths.lock, dataDir, (line) => console.log(`[devnet:reset] ${line}`))
    if (relocatedHome !== undefined) rmSync(relocatedHome, { recursive: true, force: true })
    rmSync(dataDir, { recursive: true, force: true })
    lock.release()
    removed.push(relative(cwd, dataDir).startsWith("..") ? dataDir : `./${relative(cwd, dataDir)}`)
  } else if (relocatedHome !== undefined) {
    rmSync(relocatedHome, { recursive: true, force: true })
  }
  if (relocatedHome !== undefined) removed.push(`${relocatedHome} (its database)`)
} catch (e) {
  if (e instanceof DevnetAlreadyRunning) fail(`not resetting: ${e.message}`)
  fail(e instanceof Error ? e.message : String(e))
}
console.log(`[devnet:reset] removed ${removed.join(" and ")}; the next npm start deploys from scratch`)
