import { Effect } from "effect"
import { type Address, encodeFunctionData } from "viem"
import { mockUSDCAbi } from "../../src/Chain/artifacts/index.ts"
import { type TestChain, venueEntry } from "./ChainDevnet.ts"

/** The relayer tests' venue on `c`: a pass every 50 ms, a replacement after 2 blocks, only the token's mint allowed. */
export const relayerVenue = (c: TestChain, id: string) =>
  venueEntry(c, id, {
    relayer: {
      poll_ms: 50,
      bump_after_blocks: 2,
      allow: [{ contract: c.token, functions: ["mint(address,uint256)"] }],
    },
  })

/** The i-th recipient of a test's mints, from a base of its own (each test file mints to addresses apart). */
export const recipientFrom =
  (base: number) =>
  (i: number): Address =>
    `0x${(base + i).toString(16).padStart(40, "0")}` as Address

export const mintData = (to: Address, amount: bigint) =>
  encodeFunctionData({ abi: mockUSDCAbi, functionName: "mint", args: [to, amount] })

/** A raw JSON-RPC call to the test chain's anvil (anvil_* and evm_* methods). */
export const rpc = (c: TestChain, method: string, params: Array<unknown>) =>
  Effect.promise(() => c.test.request({ method, params } as never))
