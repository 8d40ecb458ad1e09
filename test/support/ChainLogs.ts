import {
  type AbiEvent,
  type Address,
  encodeAbiParameters,
  encodeEventTopics,
  type Hex,
  type Log,
  numberToHex,
  pad,
} from "viem"
import { indexedEventsAbi } from "../../src/Chain/EscrowLogs.ts"

/** Synthetic escrow logs, encoded exactly as a node returns them (for the index fold and its SQL). */

export const ESCROW = "0x00000000000000000000000000000000000e5c40" as Address
export const LEGACY = "0x000000000000000000000000000000000001e6ac" as Address
export const OTHER = "0x0000000000000000000000000000000000000bad" as Address

let logIndex = 0
export const resetLogIndex = () => {
  logIndex = 0
}

/** A raw log for `eventName(args)` emitted by `address` in `block` (hash derived from the number). */
export const logOf = (
  eventName: string,
  args: Record<string, unknown>,
  block: bigint,
  address: Address = ESCROW,
): Log => {
  const item = indexedEventsAbi.find((e) => e.name === eventName) as AbiEvent
  const indexed = Object.fromEntries(item.inputs.filter((i) => i.indexed).map((i) => [i.name!, args[i.name!]]))
  const rest = item.inputs.filter((i) => !i.indexed)
  return {
    address,
    topics: encodeEventTopics({ abi: [item], eventName, args: indexed } as never) as [Hex, ...Array<Hex>],
    data: encodeAbiParameters(
      rest,
      rest.map((i) => args[i.name!]),
    ),
    blockNumber: block,
    blockHash: pad(numberToHex(block), { size: 32 }),
    logIndex: logIndex++,
    transactionHash: pad(numberToHex(1000n + BigInt(logIndex)), { size: 32 }),
    transactionIndex: 0,
    removed: false,
  }
}

export const id = (n: number): Hex => pad(numberToHex(n), { size: 32 })
export const addr = (n: number): Address => pad(numberToHex(n), { size: 20 })

/** A Fill struct as the Locked and Paid events carry it. */
export const fill = (fillId: Hex, orderId: Hex, amountOut: bigint, amountIn: bigint, recipient: Address) => ({
  fillId,
  orderId,
  sequence: 1n,
  makerChainId: 999n,
  makerEscrow: ESCROW,
  takerChainId: 42161n,
  takerEscrow: ESCROW,
  payer: addr(0xa1),
  payee: addr(0xa2),
  amountIn,
  recipient,
  amountOut,
  dex: 0,
  toMargin: true,
  hashlock: id(0x5ec),
  makerExpiry: 1_000n,
  takerExpiry: 2_000n,
})
