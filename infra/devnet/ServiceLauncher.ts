// Runs src/main.ts, the service exactly as `SETTLEMENT_CONFIG=… npm start` runs it, in a process the devnet
// starts before that config exists (Service.ts):
//
//  1. It loads the service's libraries at once (Preload.mjs, with DEVNET_PRELOAD=service). Loading them is most
//     of the service's start-up time, and here it overlaps with the database, the chains and the deployment.
//  2. It reads one JSON line on stdin, the service's environment (SETTLEMENT_CONFIG, DATABASE_URL, PORT), sets
//     it, and imports src/main.ts, which then runs as usual (its runtime owns SIGINT/SIGTERM).
//
// stdin is also a lifeline: when it closes, the devnet is gone (even SIGKILLed, which runs no cleanup). Before
// the go this process just exits; after it, it SIGTERMs itself, which the service handles as a graceful stop.

let started = false
let input = ""
const go = new Promise<Record<string, string>>((resolve, reject) => {
  process.stdin.setEncoding("utf8")
  process.stdin.on("data", (chunk: string) => {
    if (started) return
    input += chunk
    const newline = input.indexOf("\n")
    if (newline < 0) return
    started = true
    try {
      resolve(JSON.parse(input.slice(0, newline)) as Record<string, string>)
    } catch (e) {
      reject(e)
    }
  })
})
process.stdin.on("close", () => {
  if (!started) process.exit(0)
  process.kill(process.pid, "SIGTERM")
})

Object.assign(process.env, await go)
await import("../../src/main.ts")
