/**
 * HyperEVM → HyperCore actions through the CoreWriter precompile (research/venues.md §2.2; Hyperliquid docs
 * "interacting with HyperCore"; hyper-evm-lib `CoreWriterLib.sol`).
 *
 * `CoreWriter(0x3333…3333).sendRawAction(bytes)` takes: byte 0 = encoding version (1), bytes 1–3 = the action id as
 * a big-endian uint24, then the plain `abi.encode` of the action's fields (no selector).
 *
 * Units differ per action and are easy to mix up (§5.2): Core spot `wei` for USDC has 8 decimals, perp `ntl`
 * has 6, and the EVM token (and CoreDepositWallet `amount`) has 6.
 */
import { type Address, concatHex, encodeAbiParameters, encodeFunctionData, type Hex, numberToHex } from "viem"

export const CORE_WRITER_ADDRESS: Address = "0x3333333333333333333333333333333333333333"
export const CORE_WRITER_VERSION = 1

/** `destinationDex` / `source_dex` ids on the EVM side: 0 is the default perp dex, uint32 max is spot. */
export const PERP_DEX_ID = 0
export const SPOT_DEX_ID = 4294967295

export const SPOT_SEND_ACTION = 6
export const USD_CLASS_TRANSFER_ACTION = 7
export const SEND_ASSET_ACTION = 13

export const USDC_TOKEN_INDEX = 0n

/** USDC perp/EVM units (1e6) → Core spot wei (1e8). */
export const usdcPerpToSpotWei = (perp: bigint): bigint => perp * 100n

/** Core spot wei (1e8) → perp/EVM units (1e6); refuses a value that would lose precision. */
export const usdcSpotWeiToPerp = (wei: bigint): bigint | undefined => (wei % 100n === 0n ? wei / 100n : undefined)

const action = (id: number, body: Hex): Hex =>
  concatHex([numberToHex(CORE_WRITER_VERSION, { size: 1 }), numberToHex(id, { size: 3 }), body])

/** Action 6: Core spot → `destination` (a system address bridges to the EVM). */
export const encodeSpotSend = (p: { destination: Address; token: bigint; wei: bigint }): Hex =>
  action(
    SPOT_SEND_ACTION,
    encodeAbiParameters([{ type: "address" }, { type: "uint64" }, { type: "uint64" }], [p.destination, p.token, p.wei]),
  )

/** Action 7: move `ntl` (1e6) between spot and perp of the sender. */
export const encodeUsdClassTransfer = (p: { ntl: bigint; toPerp: boolean }): Hex =>
  action(USD_CLASS_TRANSFER_ACTION, encodeAbiParameters([{ type: "uint64" }, { type: "bool" }], [p.ntl, p.toPerp]))

/** Action 13: `wei` of `token` from `sourceDex` to `destination` on `destinationDex` (uint32 max = spot). */
export const encodeSendAsset = (p: {
  destination: Address
  subAccount: Address
  sourceDex: number
  destinationDex: number
  token: bigint
  wei: bigint
}): Hex =>
  action(
    SEND_ASSET_ACTION,
    encodeAbiParameters(
      [
        { type: "address" },
        { type: "address" },
        { type: "uint32" },
        { type: "uint32" },
        { type: "uint64" },
        { type: "uint64" },
      ],
      [p.destination, p.subAccount, p.sourceDex, p.destinationDex, p.token, p.wei],
    ),
  )

export const coreWriterAbi = [
  {
    type: "function",
    name: "sendRawAction",
    stateMutability: "nonpayable",
    inputs: [{ name: "data", type: "bytes" }],
    outputs: [],
  },
] as const

/** Circle's CoreDepositWallet: `amount` in EVM units (1e6), `destinationDex` 0 perps / uint32 max spot. */
export const coreDepositWalletAbi = [
  {
    type: "function",
    name: "deposit",
    stateMutability: "nonpayable",
    inputs: [
      { name: "amount", type: "uint256" },
      { name: "destinationDex", type: "uint32" },
    ],
    outputs: [],
  },
  {
    type: "function",
    name: "depositFor",
    stateMutability: "nonpayable",
    inputs: [
      { name: "recipient", type: "address" },
      { name: "amount", type: "uint256" },
      { name: "destinationDex", type: "uint32" },
    ],
    outputs: [],
  },
] as const

export const sendRawActionCalldata = (data: Hex): Hex =>
  encodeFunctionData({ abi: coreWriterAbi, functionName: "sendRawAction", args: [data] })
