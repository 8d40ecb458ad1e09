/**
 * infra/devnet/Anvil.ts's child: a chain that goes away says why (its exit code or signal and its output's tail),
 * so a bench or a test that meets refused connections can print the cause instead of only the RPC error; and the
 * states it spills to disk go with it.
 */
import { execFileSync } from "node:child_process"
import { existsSync, readdirSync } from "node:fs"
import { fileURLToPath } from "node:url"
import { describe, expect, it } from "vitest"
import { startAnvil } from "../../infra/devnet/Anvil.ts"

const rpc = (url: string, method: string, params: ReadonlyArray<unknown>) =>
  fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
  }).then((r) => r.json() as Promise<{ result?: unknown }>)

/** Enough blocks for anvil to move older states out of memory into its cache directory. */
const MANY_BLOCKS = "0x400"

describe("anvil process", () => {
  it("exitReason is undefined while anvil runs and names the signal once it is gone", async () => {
    const anvil = await startAnvil({})
    try {
      expect(anvil.exitReason()).toBeUndefined()
      process.kill(anvil.pid, "SIGKILL")
      const deadline = Date.now() + 10_000
      while (anvil.exitReason() === undefined && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20))
      const reason = anvil.exitReason()
      expect(reason?.split("\n")[0]).toBe("anvil exited (code null, signal SIGKILL)")
      expect(reason).toContain("Listening on 127.0.0.1:")
    } finally {
      await anvil.stop()
    }
  })

  it("keeps older blocks' states in its own directory, readable, and removes it when stopped", async () => {
    const anvil = await startAnvil({})
    try {
      await rpc(anvil.rpcUrl, "anvil_mine", [MANY_BLOCKS])
      expect(readdirSync(anvil.cacheDir).length).toBeGreaterThan(0)
      // The spilled states still answer a historical read.
      const old = await rpc(anvil.rpcUrl, "eth_getBalance", ["0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266", "0x2"])
      expect(old.result).toBe("0x21e19e0c9bab2400000")
    } finally {
      await anvil.stop()
    }
    expect(existsSync(anvil.cacheDir)).toBe(false)
  })

  it("removes the directory when the process that started anvil exits without stopping it", () => {
    const anvil = fileURLToPath(new URL("../../infra/devnet/Anvil.ts", import.meta.url))
    const script = `
      import { startAnvil } from ${JSON.stringify(anvil)}
      const a = await startAnvil({})
      await fetch(a.rpcUrl, { method: "POST", headers: { "content-type": "application/json" },
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "anvil_mine", params: [${JSON.stringify(MANY_BLOCKS)}] }) })
      console.log(a.cacheDir)
      process.exit(0)`
    const out = execFileSync(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], {
      encoding: "utf8",
      timeout: 60_000,
    })
    const cacheDir = out.trim().split("\n").at(-1)!
    expect(cacheDir).toMatch(/anvil-states-/)
    expect(existsSync(cacheDir)).toBe(false)
  })
})
