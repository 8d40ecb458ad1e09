/**
 * Time to a ready devnet: wall time from spawning `npm start` (the real script, a fresh data dir, free ports) to
 * the service answering GET /v1/info with 200 (target <= 10 s), and separately to GET /health answering 200 (it
 * does once the chain watchers report every chain fresh; until then "not yet ready" after a bounded wait). Then
 * the same for a restart on the existing data (resumed deployment). Never touches ./.data.
 *
 * Wall time depends on what else the machine runs, so each line also gives the load average and the CPU seconds
 * the devnet's processes had used when /v1/info first answered (load-independent).
 */
import { readFileSync } from "node:fs"
import { availableParallelism, loadavg } from "node:os"
import {
  type DevnetProcess,
  descendants,
  eventually,
  freeTcpPort,
  makeDataDir,
  spawnDevnet,
} from "../support/DevnetProcess.ts"
import { summarize } from "./Summary.ts"

const TARGET_S = 10
const INFO_TIMEOUT_MS = 120_000
const HEALTH_WAIT_MS = Number(process.env.BENCH_HEALTH_WAIT_MS ?? 20_000)

const status = async (url: string): Promise<number> => {
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(2_000) })
    await res.arrayBuffer()
    return res.status
  } catch {
    return 0
  }
}

const pollUntil200 = async (url: string, since: number, timeoutMs: number): Promise<number | undefined> => {
  const deadline = Date.now() + timeoutMs
  while (Date.now() < deadline) {
    if ((await status(url)) === 200) return (performance.now() - since) / 1000
    await new Promise((r) => setTimeout(r, 50))
  }
  return undefined
}

const TICKS_PER_SECOND = 100 // USER_HZ, 100 on Linux

/** CPU seconds used by `root` and every process below it, including children they already reaped (initdb). */
const treeCpuSeconds = (root: number): number => {
  let ticks = 0
  for (const pid of [root, ...descendants(root).map((p) => p.pid)]) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, "utf8")
      const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
      ticks += Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14])
    } catch {
      // exited meanwhile
    }
  }
  return ticks / TICKS_PER_SECOND
}

const stop = async (devnet: DevnetProcess) => {
  devnet.interrupt()
  const stopped = await Promise.race([devnet.exited.then(() => true), new Promise((r) => setTimeout(r, 20_000, false))])
  if (!stopped) devnet.killGroup()
}

const run = async (label: string, dataDir: string) => {
  const port = await freeTcpPort()
  const t0 = performance.now()
  const devnet = spawnDevnet({ dataDir, port, viaNpm: true })
  try {
    const load = loadavg()[0]!
    const info = await pollUntil200(`${devnet.apiUrl}/v1/info`, t0, INFO_TIMEOUT_MS)
    if (info === undefined) throw new Error(`no /v1/info within ${INFO_TIMEOUT_MS / 1000} s:\n${devnet.output()}`)
    const cpu = treeCpuSeconds(devnet.pid)
    const health = await pollUntil200(`${devnet.apiUrl}/health`, t0, HEALTH_WAIT_MS)
    let healthText = `${health?.toFixed(2)} s`
    if (health === undefined) {
      const body = await fetch(`${devnet.apiUrl}/health`)
        .then((r) => r.json() as Promise<{ chains?: Array<{ venue: string; error?: string }> }>)
        .catch(() => ({ chains: [] }))
      const why = (body.chains ?? []).map((c) => `${c.venue}: ${c.error || "not ready"}`).join("; ")
      healthText = `not yet ready after ${(HEALTH_WAIT_MS / 1000).toFixed(0)} s (${why || "503"})`
    }
    // Wait for the banner too, so that the stop below is a normal shutdown rather than one mid-start.
    await eventually(() => /Settlement devnet is up/.test(devnet.output()), 10_000)
    console.log(
      `${label.padEnd(26)} /v1/info 200 after ${info.toFixed(2)} s ` +
        `(target <= ${TARGET_S} s: ${info <= TARGET_S ? "met" : "MISSED"}; ${cpu.toFixed(1)} CPU-s used, ` +
        `load ${load.toFixed(1)} on ${availableParallelism()} CPUs);  /health 200: ${healthText}`,
    )
    summarize({
      bench: `devnet: ${label.trim()} → /v1/info 200`,
      figure: `${info.toFixed(2)} s`,
      baseline: "",
      ratio: null,
      target: `<= ${TARGET_S} s: ${info <= TARGET_S ? "met" : "missed"}`,
    })
    return info
  } finally {
    await stop(devnet)
  }
}

const dir = makeDataDir()
try {
  console.log("devnet time to ready: `npm start` spawned -> GET /v1/info 200 (loopback, fresh temporary data dir)")
  await run("fresh (deploys contracts)", dir.dataDir)
  await run("restart (resumes)", dir.dataDir)
} finally {
  dir.remove()
}
process.exit(0)
