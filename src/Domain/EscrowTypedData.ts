/**
 * EIP-712 typed data of the SettlementEscrow (DESIGN §6), byte-identical to the Solidity definitions in
 * infra/contracts/src/lib/EscrowHashing.sol (test/unit/typed-data.test.ts compares digests with the contract).
 *
 * Builders return `{ domain, types, primaryType, message }` objects that viem's `hashTypedData`,
 * `signTypedData` and `verifyTypedData` take as they are. Numbers follow viem's mapping: uint32 → number,
 * uint64/uint256 → bigint. Wire (JSON) conversion of the bigints is done elsewhere.
 */
import { type Address, getAddress, type Hex, keccak256, type TypedDataDefinition } from "viem"

export const ESCROW_DOMAIN_NAME = "SettlementEscrow"
export const ESCROW_DOMAIN_VERSION = "1"

/** Hyperliquid destination dexes (other venues: 0 only). */
export const PERPS_DEX = 0
export const SPOT_DEX = 4294967295

/** The domain of a SettlementEscrow deployment of version `V` ("1" here, "2" in EscrowTypedDataV2.ts). */
export interface EscrowDomainOf<V extends string> {
  readonly name: typeof ESCROW_DOMAIN_NAME
  readonly version: V
  readonly chainId: number
  readonly verifyingContract: Address
}

export type EscrowDomain = EscrowDomainOf<typeof ESCROW_DOMAIN_VERSION>

/** The domain of escrow version `version` at `escrow` on `chainId` (checksummed; throws on a malformed address). */
export const versionedEscrowDomain = <V extends string>(
  version: V,
  chainId: number | bigint,
  escrow: Address,
): EscrowDomainOf<V> => {
  const id = Number(chainId)
  if (!Number.isSafeInteger(id) || id <= 0) throw new RangeError(`unsupported chain id ${chainId}`)
  return { name: ESCROW_DOMAIN_NAME, version, chainId: id, verifyingContract: getAddress(escrow) }
}

/** The domain of the (v1) escrow `escrow` on chain `chainId`. */
export const escrowDomain = (chainId: number | bigint, escrow: Address): EscrowDomain =>
  versionedEscrowDomain(ESCROW_DOMAIN_VERSION, chainId, escrow)

// ------------------------------------------------------------------ types (field order is part of the hash)

export const fundOrderTypes = {
  FundOrder: [
    { name: "orderId", type: "bytes32" },
    { name: "owner", type: "address" },
    { name: "operator", type: "address" },
    { name: "quoteSigner", type: "address" },
    { name: "amount", type: "uint256" },
    { name: "deadline", type: "uint256" },
  ],
} as const

export const closeOfferTypes = {
  CloseOffer: [
    { name: "orderId", type: "bytes32" },
    { name: "owner", type: "address" },
    { name: "dex", type: "uint32" },
    { name: "toMargin", type: "bool" },
    { name: "nonce", type: "uint256" },
    { name: "deadline", type: "uint256" },
  ],
} as const

export const quoteSetTypes = {
  QuoteSet: [
    { name: "orderId", type: "bytes32" },
    { name: "sequence", type: "uint64" },
    { name: "generation", type: "uint64" },
    { name: "quoteSize", type: "uint256" },
    { name: "validUntil", type: "uint64" },
    { name: "quotes", type: "Quote[]" },
  ],
  Quote: [
    { name: "chainId", type: "uint256" },
    { name: "token", type: "address" },
    { name: "recipient", type: "address" },
    { name: "supply", type: "uint256" },
    { name: "receive", type: "uint256" },
    { name: "minFill", type: "uint256" },
  ],
} as const

export const fillTypes = {
  Fill: [
    { name: "fillId", type: "bytes32" },
    { name: "orderId", type: "bytes32" },
    { name: "sequence", type: "uint64" },
    { name: "makerChainId", type: "uint256" },
    { name: "makerEscrow", type: "address" },
    { name: "takerChainId", type: "uint256" },
    { name: "takerEscrow", type: "address" },
    { name: "payer", type: "address" },
    { name: "payee", type: "address" },
    { name: "amountIn", type: "uint256" },
    { name: "recipient", type: "address" },
    { name: "amountOut", type: "uint256" },
    { name: "dex", type: "uint32" },
    { name: "toMargin", type: "bool" },
    { name: "hashlock", type: "bytes32" },
    { name: "makerExpiry", type: "uint64" },
    { name: "takerExpiry", type: "uint64" },
  ],
} as const

// ------------------------------------------------------------------ messages

export interface FundOrder {
  readonly orderId: Hex
  readonly owner: Address
  readonly operator: Address
  readonly quoteSigner: Address
  readonly amount: bigint
  readonly deadline: bigint
}

export interface CloseOffer {
  readonly orderId: Hex
  readonly owner: Address
  readonly dex: number
  readonly toMargin: boolean
  readonly nonce: bigint
  readonly deadline: bigint
}

export interface Quote {
  readonly chainId: bigint
  readonly token: Address
  readonly recipient: Address
  readonly supply: bigint
  readonly receive: bigint
  readonly minFill: bigint
}

export interface QuoteSet {
  readonly orderId: Hex
  readonly sequence: bigint
  readonly generation: bigint
  readonly quoteSize: bigint
  readonly validUntil: bigint
  readonly quotes: ReadonlyArray<Quote>
}

export interface Fill {
  readonly fillId: Hex
  readonly orderId: Hex
  readonly sequence: bigint
  readonly makerChainId: bigint
  readonly makerEscrow: Address
  readonly takerChainId: bigint
  readonly takerEscrow: Address
  readonly payer: Address
  readonly payee: Address
  readonly amountIn: bigint
  readonly recipient: Address
  readonly amountOut: bigint
  readonly dex: number
  readonly toMargin: boolean
  readonly hashlock: Hex
  readonly makerExpiry: bigint
  readonly takerExpiry: bigint
}

// ------------------------------------------------------------------ builders

/** A builder's result: viem's typed-data definition with the escrow domain of version `V` (default v1). */
export type EscrowTypedDefinition<
  T extends Record<string, unknown>,
  P extends keyof T & string,
  V extends string = typeof ESCROW_DOMAIN_VERSION,
> = TypedDataDefinition<T, P> & {
  readonly domain: EscrowDomainOf<V>
  readonly primaryType: P
}

type Definition<T extends Record<string, unknown>, P extends keyof T & string> = EscrowTypedDefinition<T, P>

/** The owner's FundOrder, in the funded escrow's domain. */
export const fundOrderTypedData = (
  chainId: number | bigint,
  escrow: Address,
  message: FundOrder,
): Definition<typeof fundOrderTypes, "FundOrder"> => ({
  domain: escrowDomain(chainId, escrow),
  types: fundOrderTypes,
  primaryType: "FundOrder",
  message,
})

/** The owner's CloseOffer, in the escrow's domain. */
export const closeOfferTypedData = (
  chainId: number | bigint,
  escrow: Address,
  message: CloseOffer,
): Definition<typeof closeOfferTypes, "CloseOffer"> => ({
  domain: escrowDomain(chainId, escrow),
  types: closeOfferTypes,
  primaryType: "CloseOffer",
  message,
})

/** The maker's QuoteSet, in the maker chain escrow's domain (the order's escrow). */
export const quoteSetTypedData = (
  makerChainId: number | bigint,
  makerEscrow: Address,
  message: QuoteSet,
): Definition<typeof quoteSetTypes, "QuoteSet"> => ({
  domain: escrowDomain(makerChainId, makerEscrow),
  types: quoteSetTypes,
  primaryType: "QuoteSet",
  message,
})

/**
 * The taker's Fill agreement (sign item `margin_move`), in the TAKER chain escrow's domain, so that the payer's
 * wallet signs on its own chain; the maker chain's escrow recomputes this domain from the struct.
 */
export const fillTypedData = (message: Fill): Definition<typeof fillTypes, "Fill"> => ({
  domain: escrowDomain(message.takerChainId, message.takerEscrow),
  types: fillTypes,
  primaryType: "Fill",
  message,
})

// ------------------------------------------------------------------ contract-call shapes

/** `hashlock = keccak256(secret)` for a 32-byte secret, as `claim`/`claimPayment` check it. */
export const hashlockOf = (secret: Hex): Hex => {
  if (!/^0x[0-9a-fA-F]{64}$/.test(secret)) throw new RangeError("a secret is 32 bytes")
  return keccak256(secret)
}

/**
 * The QuoteSet as the contract ABI takes it: Solidity reserves `receive`, so the struct field is `receive_`
 * (the EIP-712 type still says `receive`).
 */
export const quoteSetAbiArg = (q: QuoteSet) => ({
  orderId: q.orderId,
  sequence: q.sequence,
  generation: q.generation,
  quoteSize: q.quoteSize,
  validUntil: q.validUntil,
  quotes: q.quotes.map((x) => ({
    chainId: x.chainId,
    token: x.token,
    recipient: x.recipient,
    supply: x.supply,
    receive_: x.receive,
    minFill: x.minFill,
  })),
})
