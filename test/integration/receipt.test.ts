/**
 * receiptOf (infra/devnet/Receipt.ts): the devnet's deploy and the venue simulators wait for their transactions by
 * asking for the receipt itself, on an automining anvil where no later block may come.
 */

import { createPublicClient, createWalletClient, type Hash, http, keccak256, toHex } from "viem"
import { privateKeyToAccount } from "viem/accounts"
import { describe, expect, it } from "vitest"
import { ANVIL_PRIVATE_KEYS, startAnvil } from "../../infra/devnet/Anvil.ts"
import { receiptOf } from "../../infra/devnet/Receipt.ts"

describe("receiptOf", () => {
  it("finds the receipt of a burst's last transaction with no later block; gives up on one never sent", async () => {
    const anvil = await startAnvil({ chainId: 31337 })
    try {
      const pub = createPublicClient({ transport: http(anvil.rpcUrl) })
      const account = privateKeyToAccount(ANVIL_PRIVATE_KEYS[0] as `0x${string}`)
      const wallet = createWalletClient({ account, transport: http(anvil.rpcUrl) })
      const hashes: Array<Hash> = []
      for (let i = 0; i < 5; i++) {
        hashes.push(await wallet.sendTransaction({ to: account.address, value: 1n, nonce: i, chain: null }))
      }
      const receipts = await Promise.all(hashes.map((h) => receiptOf(pub, h)))
      expect(receipts.map((r) => r.status)).toEqual(Array(5).fill("success"))
      // Nothing is mined after the last one: its receipt is found all the same, again.
      expect((await receiptOf(pub, hashes[4]!)).blockNumber).toBe(await pub.getBlockNumber())
      const never = keccak256(toHex("never sent"))
      await expect(receiptOf(pub, never, { timeoutMs: 300 })).rejects.toThrow(`transaction ${never} was not mined`)
    } finally {
      await anvil.stop()
    }
  })
})
