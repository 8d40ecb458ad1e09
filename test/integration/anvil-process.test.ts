/**
 * infra/devnet/Anvil.ts's child: a chain that goes away says why (its exit code or signal and its output's tail),
 * so a bench or a test that meets refused connections can print the cause instead of only the RPC error.
 */
import { describe, expect, it } from "vitest"
import { startAnvil } from "../../infra/devnet/Anvil.ts"

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
})
