/**
 * A close's nonce is spent per escrow contract: the same escrow address on two chains is two contracts (the devnet
 * deploys both chains' escrows at one address). An owner's close on one chain with nonce n no longer refuses its
 * close on the other chain with n (migration 0043); on the same chain and escrow the nonce is still used once.
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { enqueueClose, type NewClose } from "../../src/Escrow/Closes.ts"
import { TestDatabaseLive } from "../support/Database.ts"

const ESCROW = "0xcf7ed3acca5a467e9e704c703e8d87f634fb0fc9"
const hex = (bytes: number) => `0x${Buffer.from(crypto.getRandomValues(new Uint8Array(bytes))).toString("hex")}`

const close = (owner: string, venue: string, chainId: number, nonce: bigint): NewClose => ({
  id: crypto.randomUUID(),
  kind: "signed",
  master: owner,
  venue,
  chainId,
  escrow: ESCROW,
  escrowVersion: 2,
  orderId: hex(32),
  owner,
  amount: 5_000_000n,
  dex: 0,
  toMargin: true,
  nonce,
  deadline: 4_102_444_800n,
  digest: hex(32),
  signature: hex(65),
  relayKey: `close:${crypto.randomUUID()}`,
  nowMs: Date.now(),
})

layer(TestDatabaseLive, { timeout: "60 seconds", excludeTestServices: true })("close nonces", (it) => {
  it.effect("one nonce per (chain, escrow, owner): the same nonce on another chain's escrow at the same address", () =>
    Effect.gen(function* () {
      const owner = hex(20)
      const enqueue = (c: NewClose) => Effect.map(enqueueClose(c, Effect.void), (o) => o._tag)
      expect(yield* enqueue(close(owner, "hyperliquid", 999, 7n))).toBe("Created")
      expect(yield* enqueue(close(owner, "aster", 42161, 7n))).toBe("Created")
      // The same chain and escrow: the nonce is spent (another order, other terms).
      expect(yield* enqueue(close(owner, "hyperliquid", 999, 7n))).toBe("NonceUsed")
      expect(yield* enqueue(close(owner, "aster", 42161, 7n))).toBe("NonceUsed")
    }),
  )
})
