// `npm start` (package.json: `exec node infra/devnet/Start.mjs`; `exec` so that signals sent to npm's child reach
// this process rather than a shell).
//
//   SETTLEMENT_CONFIG set:   the service alone, in this process, with the user's config and environment.
//   SETTLEMENT_CONFIG unset: the devnet (DevnetMain.ts) in a child process.
//
// The devnet runs in a process group of its own (detached), with this process forwarding SIGINT/SIGTERM/SIGHUP to
// it. A terminal's Ctrl-C signals its whole foreground group at once: were anvil and postgres in it, they would
// die while the service and the simulators still use them (error logs on every Ctrl-C, and a postgres `stop()`
// waiting for an exit that already happened). Out of that group, the devnet stops them in order: service,
// simulators, chains, database. If this process dies without forwarding anything (SIGKILL), the devnet sees its
// stdin close and stops as well.
//
// Plain JavaScript with no imports beyond node's: it starts in milliseconds and loads nothing the devnet needs.
import { spawn } from "node:child_process"
import { fileURLToPath } from "node:url"

if (process.env.SETTLEMENT_CONFIG) {
  // Preload.mjs loads the service's libraries natively and registers tsx (what `--import tsx` does).
  await import("./Preload.mjs")
  await import("../../src/main.ts")
} else {
  const child = spawn(
    process.execPath,
    ["--import", new URL("./Preload.mjs", import.meta.url).href, fileURLToPath(new URL("./DevnetMain.ts", import.meta.url))],
    { detached: true, stdio: ["pipe", "inherit", "inherit"], env: { ...process.env, DEVNET_LIFELINE: "stdin" } },
  )
  // Never written to, never closed by us: it closes when this process is gone, however it went.
  child.stdin.on("error", () => undefined)

  let lastForward = 0
  const forward = (signal) => {
    // A terminal's Ctrl-C reaches this process twice (directly and forwarded by npm): pass it on once.
    const now = Date.now()
    if (now - lastForward < 1_500) return
    lastForward = now
    try {
      child.kill(signal === "SIGHUP" ? "SIGTERM" : signal)
    } catch {
      // already gone
    }
  }
  for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"]) process.on(signal, forward)

  child.once("error", (e) => {
    console.error(`[devnet] could not start: ${e.message}`)
    process.exit(1)
  })
  child.once("exit", (code, signal) => process.exit(code ?? (signal === null ? 0 : 1)))
}
