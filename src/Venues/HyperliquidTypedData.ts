/**
 * Hyperliquid user-signed actions as EIP-712 typed data (research/venues.md §3.1; hyperliquid-python-sdk
 * `signing.py`, nktkas `src/signing/_userSigned.ts`).
 *
 * - Domain: `HyperliquidSignTransaction` / `1` / chainId = the action's `signatureChainId` / zero contract. The
 *   chain id only picks the domain; Hyperliquid accepts any. We use the configured one (42161, "0xa4b1").
 * - `hyperliquidChain` ("Mainnet" | "Testnet") picks the Hyperliquid environment, not an EVM chain.
 * - `destination` is typed `string`, so its case is part of the hash: always lowercase.
 * - `amount` is a whole-USDC decimal string, hashed as sent (see DecimalAmount.ts for the canonical form).
 * - `time` (usdSend, withdraw3) / `nonce` (sendAsset, approveAgent) is in milliseconds and equals the outer nonce.
 *
 * Field lists and their order are the signed type: never reorder them.
 */
import type { Address } from "viem"
import {
  EIP712_DOMAIN_FIELDS,
  type TypedDataDomain,
  type TypedDataField,
  type TypedDataObject,
  zeroContractDomain,
} from "../Domain/TypedData.ts"

export type HyperliquidChain = "Mainnet" | "Testnet"

export const HYPERLIQUID_DOMAIN_NAME = "HyperliquidSignTransaction"
export const HYPERLIQUID_DOMAIN_VERSION = "1"

export const USD_SEND = "HyperliquidTransaction:UsdSend"
export const WITHDRAW = "HyperliquidTransaction:Withdraw"
export const SEND_ASSET = "HyperliquidTransaction:SendAsset"
export const APPROVE_AGENT = "HyperliquidTransaction:ApproveAgent"

export type HyperliquidPrimaryType = typeof USD_SEND | typeof WITHDRAW | typeof SEND_ASSET | typeof APPROVE_AGENT

/** usdSend and withdraw3 share one field list. */
export const TRANSFER_FIELDS: ReadonlyArray<TypedDataField> = [
  { name: "hyperliquidChain", type: "string" },
  { name: "destination", type: "string" },
  { name: "amount", type: "string" },
  { name: "time", type: "uint64" },
]

export const SEND_ASSET_FIELDS: ReadonlyArray<TypedDataField> = [
  { name: "hyperliquidChain", type: "string" },
  { name: "destination", type: "string" },
  { name: "sourceDex", type: "string" },
  { name: "destinationDex", type: "string" },
  { name: "token", type: "string" },
  { name: "amount", type: "string" },
  { name: "fromSubAccount", type: "string" },
  { name: "nonce", type: "uint64" },
]

export const APPROVE_AGENT_FIELDS: ReadonlyArray<TypedDataField> = [
  { name: "hyperliquidChain", type: "string" },
  { name: "agentAddress", type: "address" },
  { name: "agentName", type: "string" },
  { name: "nonce", type: "uint64" },
]

export const FIELDS_BY_PRIMARY_TYPE: Readonly<Record<HyperliquidPrimaryType, ReadonlyArray<TypedDataField>>> = {
  [USD_SEND]: TRANSFER_FIELDS,
  [WITHDRAW]: TRANSFER_FIELDS,
  [SEND_ASSET]: SEND_ASSET_FIELDS,
  [APPROVE_AGENT]: APPROVE_AGENT_FIELDS,
}

/** The `action.type` on `/exchange` for each signed type. */
export const ACTION_TYPE_BY_PRIMARY_TYPE = {
  [USD_SEND]: "usdSend",
  [WITHDRAW]: "withdraw3",
  [SEND_ASSET]: "sendAsset",
  [APPROVE_AGENT]: "approveAgent",
} as const satisfies Record<HyperliquidPrimaryType, string>

/** Sentinel dex names of `sendAsset`: "" is the default USDC perp dex, "spot" is spot (§5.4). */
export const PERP_DEX = ""
export const SPOT_DEX = "spot"

/**
 * The Core system address of a spot token: first byte 0x20, token index big-endian in the rest. A `sendAsset` to
 * it bridges Core → HyperEVM, crediting the *sender's* own EVM address (docs: hypercore ↔ hyperevm transfers).
 */
export const systemAddress = (tokenIndex: number): Address =>
  `0x20${tokenIndex.toString(16).padStart(38, "0")}` as Address

/** USDC is Core token 0. */
export const USDC_SYSTEM_ADDRESS = systemAddress(0)

export const hyperliquidDomain = (signatureChainId: number): TypedDataDomain =>
  zeroContractDomain(HYPERLIQUID_DOMAIN_NAME, HYPERLIQUID_DOMAIN_VERSION, signatureChainId)

/** `signatureChainId` as the action carries it: lowercase hex ("0xa4b1" for 42161). */
export const signatureChainIdHex = (chainId: number): `0x${string}` => `0x${chainId.toString(16)}`

const typedData = <P extends HyperliquidPrimaryType>(
  primaryType: P,
  signatureChainId: number,
  message: TypedDataObject["message"],
): TypedDataObject<P> => ({
  types: { EIP712Domain: EIP712_DOMAIN_FIELDS, [primaryType]: FIELDS_BY_PRIMARY_TYPE[primaryType] },
  primaryType,
  domain: hyperliquidDomain(signatureChainId),
  message,
})

export interface TransferParams {
  readonly signatureChainId: number
  readonly hyperliquidChain: HyperliquidChain
  readonly destination: Address
  /** Whole USDC, canonical ("12.5"). */
  readonly amount: string
  /** Milliseconds; also the outer nonce. */
  readonly time: number
}

const transferMessage = (p: TransferParams) => ({
  hyperliquidChain: p.hyperliquidChain,
  destination: p.destination.toLowerCase(),
  amount: p.amount,
  time: p.time,
})

/** `usdSend`: perp USDC to another Hyperliquid account. */
export const usdSendTypedData = (p: TransferParams) => typedData(USD_SEND, p.signatureChainId, transferMessage(p))

/** `withdraw3`: perp USDC out through the venue's bridge (Arbitrum on mainnet) to `destination`. */
export const withdraw3TypedData = (p: TransferParams) => typedData(WITHDRAW, p.signatureChainId, transferMessage(p))

export interface SendAssetParams {
  readonly signatureChainId: number
  readonly hyperliquidChain: HyperliquidChain
  readonly destination: Address
  readonly sourceDex: string
  readonly destinationDex: string
  /** "NAME:0x<token id>", e.g. "USDC:0x6d1e7cde53ba9467b783cb7c530ce054" on mainnet. */
  readonly token: string
  readonly amount: string
  /** "" for the main account. */
  readonly fromSubAccount: string
  readonly nonce: number
}

export const sendAssetTypedData = (p: SendAssetParams) =>
  typedData(SEND_ASSET, p.signatureChainId, {
    hyperliquidChain: p.hyperliquidChain,
    destination: p.destination.toLowerCase(),
    sourceDex: p.sourceDex,
    destinationDex: p.destinationDex,
    token: p.token,
    amount: p.amount,
    fromSubAccount: p.fromSubAccount.toLowerCase(),
    nonce: p.nonce,
  })

export interface ApproveAgentParams {
  readonly signatureChainId: number
  readonly hyperliquidChain: HyperliquidChain
  readonly agentAddress: Address
  /** Expiry, if any, is appended to the name: "name valid_until <ms>" (at most 180 days ahead). */
  readonly agentName: string
  readonly nonce: number
}

export const approveAgentTypedData = (p: ApproveAgentParams) =>
  typedData(APPROVE_AGENT, p.signatureChainId, {
    hyperliquidChain: p.hyperliquidChain,
    agentAddress: p.agentAddress.toLowerCase(),
    agentName: p.agentName,
    nonce: p.nonce,
  })
