/**
 * Aster's signed payloads (research/venues.md §1, §1.5, §4.1; asterdex/api-docs futures v3,
 * aster-api-website futures-v3/deposit&withdrawal).
 *
 * Three different typed data objects; do not confuse them:
 *
 * 1. Agent approval (`POST /fapi/v3/registerAndApproveAgent`), signed by the user's wallet:
 *    primaryType `Message {msg}`, domain `AsterSignTransaction` / `1` / chainId = the request's
 *    `signatureChainId` / zero contract. `msg` is the request body in a fixed field order (not sorted), raw
 *    (not URL-encoded), `ipWhitelist=` present even when empty, booleans as lowercase `true`/`false` exactly as
 *    they are sent in the form.
 * 2. V3 request signature, signed by the agent ("API wallet"): the same `Message {msg}` type in
 *    `AsterSignTransaction` / `1` / the API chain id (1666 mainnet, 714 testnet), where `msg` is the query string
 *    of every parameter sent, `nonce`, `user` and `signer` included, `signature` excluded.
 * 3. EVM withdrawal, signed by the user's wallet: primaryType `Action` in domain `Aster` / `1` / chainId of the
 *    withdrawal chain / zero contract. Two field names contain a space; that is part of the signed type.
 */
import type { Address } from "viem"
import { EIP712_DOMAIN_FIELDS, type TypedDataField, type TypedDataObject, zeroContractDomain } from "./TypedData.ts"

export const ASTER_SIGN_TRANSACTION = "AsterSignTransaction"
export const ASTER_WITHDRAW_DOMAIN = "Aster"

export const MESSAGE_FIELDS: ReadonlyArray<TypedDataField> = [{ name: "msg", type: "string" }]

export const ACTION_FIELDS: ReadonlyArray<TypedDataField> = [
  { name: "type", type: "string" },
  { name: "destination", type: "address" },
  { name: "destination Chain", type: "string" },
  { name: "token", type: "string" },
  { name: "amount", type: "string" },
  { name: "fee", type: "string" },
  { name: "nonce", type: "uint256" },
  { name: "aster chain", type: "string" },
]

/** `destination Chain` names by chain id (aster-api-website "chainName definition"). */
export const ASTER_CHAIN_NAMES: Readonly<Record<number, string>> = { 1: "ETH", 56: "BSC", 42161: "Arbitrum" }

/** `Message {msg}` in `AsterSignTransaction` v1 for `chainId`. */
export const messageTypedData = (chainId: number, msg: string): TypedDataObject<"Message"> => ({
  types: { EIP712Domain: EIP712_DOMAIN_FIELDS, Message: MESSAGE_FIELDS },
  primaryType: "Message",
  domain: zeroContractDomain(ASTER_SIGN_TRANSACTION, "1", chainId),
  message: { msg },
})

/** The fields of an agent approval, in the order they are signed and sent. */
export interface AgentApprovalFields {
  readonly user: Address
  /** Microseconds; must be within 10 s of the venue's clock when it arrives. */
  readonly nonce: number
  readonly agentName: string
  readonly agentAddress: Address
  /** Agent expiry in milliseconds. */
  readonly expired: number
  readonly signatureChainId: number
  readonly canSpotTrade: boolean
  readonly canPerpTrade: boolean
  readonly canWithdraw: boolean
  /** Space-separated IPs/CIDRs; required (non-empty) only when canWithdraw. */
  readonly ipWhitelist: string
}

/** The field order of the approval message. It is fixed by the venue and is not alphabetical. */
export const AGENT_APPROVAL_KEYS = [
  "user",
  "nonce",
  "agentName",
  "agentAddress",
  "expired",
  "signatureChainId",
  "canSpotTrade",
  "canPerpTrade",
  "canWithdraw",
  "ipWhitelist",
] as const satisfies ReadonlyArray<keyof AgentApprovalFields>

/** Ordered `[key, value]` pairs, values rendered exactly as the form sends them. */
export const agentApprovalPairs = (f: AgentApprovalFields): ReadonlyArray<readonly [string, string]> =>
  AGENT_APPROVAL_KEYS.map((k) => {
    const v = f[k]
    return [k, typeof v === "string" ? v : String(v)] as const
  })

/** `user=…&nonce=…&…&ipWhitelist=…`: raw values, the signed message body. */
export const agentApprovalMessage = (f: AgentApprovalFields): string =>
  agentApprovalPairs(f)
    .map(([k, v]) => `${k}=${v}`)
    .join("&")

export const agentApprovalTypedData = (f: AgentApprovalFields): TypedDataObject<"Message"> =>
  messageTypedData(f.signatureChainId, agentApprovalMessage(f))

export interface WithdrawActionParams {
  /** The withdrawal chain; also the domain chain id. */
  readonly chainId: number
  /** The receiving address; Aster wants the user's own registered address. */
  readonly destination: Address
  /** `destination Chain`, e.g. "Arbitrum" for 42161. */
  readonly destinationChain: string
  /** The venue's asset name, e.g. "USDT". */
  readonly token: string
  /** Whole tokens, canonical ("12.5"). */
  readonly amount: string
  /** Whole tokens, canonical, as the venue quotes it. */
  readonly fee: string
  /** Microseconds (milliseconds × 1000). */
  readonly nonce: number
  /** Fixed "Mainnet". */
  readonly asterChain: string
}

export const withdrawActionTypedData = (p: WithdrawActionParams): TypedDataObject<"Action"> => ({
  types: { EIP712Domain: EIP712_DOMAIN_FIELDS, Action: ACTION_FIELDS },
  primaryType: "Action",
  domain: zeroContractDomain(ASTER_WITHDRAW_DOMAIN, "1", p.chainId),
  message: {
    type: "Withdraw",
    destination: p.destination.toLowerCase(),
    "destination Chain": p.destinationChain,
    token: p.token,
    amount: p.amount,
    fee: p.fee,
    nonce: p.nonce,
    "aster chain": p.asterChain,
  },
})
