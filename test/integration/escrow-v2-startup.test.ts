import { Effect, Layer } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { ChainClients } from "../../src/Chain/ChainClients.ts"
import { checkEscrowV2Deployment } from "../../src/Chain/EscrowV2Check.ts"
import { startTestChain, type TestChain, venueEntry } from "../support/ChainDevnet.ts"
import { testAppConfig } from "../support/TestConfig.ts"

/** The start-up check of a configured SettlementEscrowV2 against `settlement` (devnet deploy, DEVNET_TIMING_V2). */
describe("v2 escrow start-up check", () => {
  let c: TestChain
  beforeAll(async () => {
    c = await startTestChain({ chainId: 999 })
  }, 120_000)
  afterAll(async () => {
    await c?.anvil.stop()
  })

  const run = (
    overrides: Record<string, unknown>,
    entry: Record<string, unknown> = venueEntry(c, "hyperliquid", { escrowV2: true }),
  ) =>
    Effect.runPromise(
      checkEscrowV2Deployment.pipe(
        Effect.provide(
          ChainClients.layerWith().pipe(Layer.provideMerge(testAppConfig({ venues: [entry], ...overrides }))),
        ),
        Effect.either,
      ),
    )

  it("passes when the escrow's immutables equal the settlement values (the defaults are the devnet's)", async () => {
    expect(c.escrowV2, "the devnet deploys SettlementEscrowV2").toBeDefined()
    expect((await run({}))._tag).toBe("Right")
  })

  it("a mismatch is one line naming the venue, the immutable, both values and the fix", async () => {
    const r = await run({ settlement: { claim_window_seconds: 300 } })
    expect(r._tag).toBe("Left")
    const message = r._tag === "Left" ? r.left.message : ""
    expect(message).toBe(
      `venues.0.escrow_v2 (hyperliquid, ${c.escrowV2!.toLowerCase()} on chain 999): its CLAIM_WINDOW is 600 s, settlement.claim_window_seconds says 300; set settlement to the escrow's values or point escrow_v2 at an escrow deployed with yours`,
    )
    expect(message).not.toContain("\n")
  })

  it("inconsistent values and an address without the contract are refused in one line", async () => {
    const bad = await run({ settlement: { max_lock_seconds: 1000 } })
    expect(bad._tag === "Left" ? bad.left.message : "").toMatch(
      /^settlement: the v2 time bounds are inconsistent \(.*> max_lock 1000/,
    )
    for (const address of [c.token, "0x000000000000000000000000000000000000dEaD"]) {
      const entry = { ...venueEntry(c, "hyperliquid"), escrow_v2: { address, deployment_block: 1 } }
      const none = await run({}, entry)
      expect(none._tag === "Left" ? none.left.message : "", address).toMatch(
        /no SettlementEscrowV2 there .*; fix the address$/,
      )
    }
  })
})
