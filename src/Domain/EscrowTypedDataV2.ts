/**
 * EIP-712 typed data of SettlementEscrow v2 (DESIGN §6 "Fills (hashlocked), settlement v2"; the pinned type strings
 * are in notes/v2-types.md). test/unit/typed-data-v2.test.ts compares every digest with the contract's own views.
 *
 * What changed from v1 (src/Domain/EscrowTypedData.ts, whose FundOrder/CloseOffer types and message shapes are
 * reused unchanged): the domain version is "2"; a QuoteSet signs its `owner`, `issuedAt`, the Merkle root and count
 * of its hashlocks and, per quote, the taker chain's escrow; a Fill names its order's `owner`, its `hashlockIndex`,
 * the taker client's pay key and `payBy`; new PayTake (the pay key authorises one payment of a take's Fill digests)
 * and CancelFill (the pay key releases a lock early).
 *
 * Invariants the contract relies on and the clients check:
 * - A Fill's DIGEST (in the TAKER escrow's domain) is the key of its lock (maker chain) and its payment (taker
 *   chain): nothing is keyed by the caller-chosen `fillId` or `orderId` alone.
 * - Orders are stored under `orderKey(owner, orderId)`, so nobody can squat another owner's order id.
 */
import { type Address, encodeAbiParameters, type Hex, hashTypedData, keccak256 } from "viem"
import {
  type CloseOffer,
  closeOfferTypes,
  type EscrowDomainOf,
  type EscrowTypedDefinition,
  type FundOrder,
  fundOrderTypes,
  versionedEscrowDomain,
} from "./EscrowTypedData.ts"

// FundOrder and CloseOffer are unchanged in v2 (only the domain version differs).
export {
  type CloseOffer,
  closeOfferTypes,
  type FundOrder,
  fundOrderTypes,
  hashlockOf,
  PERPS_DEX,
  SPOT_DEX,
} from "./EscrowTypedData.ts"

export const ESCROW_V2_DOMAIN_VERSION = "2"

export type EscrowDomainV2 = EscrowDomainOf<typeof ESCROW_V2_DOMAIN_VERSION>

type DefinitionV2<T extends Record<string, unknown>, P extends keyof T & string> = EscrowTypedDefinition<
  T,
  P,
  typeof ESCROW_V2_DOMAIN_VERSION
>

/** The domain of the v2 escrow `escrow` on chain `chainId`. */
export const escrowDomainV2 = (chainId: number | bigint, escrow: Address): EscrowDomainV2 =>
  versionedEscrowDomain(ESCROW_V2_DOMAIN_VERSION, chainId, escrow)

// ------------------------------------------------------------------ types (field order is part of the hash)

export const quoteSetV2Types = {
  QuoteSet: [
    { name: "owner", type: "address" },
    { name: "orderId", type: "bytes32" },
    { name: "sequence", type: "uint64" },
    { name: "generation", type: "uint64" },
    { name: "quoteSize", type: "uint256" },
    { name: "issuedAt", type: "uint64" },
    { name: "validUntil", type: "uint64" },
    { name: "hashlockRoot", type: "bytes32" },
    { name: "hashlockCount", type: "uint32" },
    { name: "quotes", type: "Quote[]" },
  ],
  Quote: [
    { name: "chainId", type: "uint256" },
    { name: "token", type: "address" },
    { name: "escrow", type: "address" },
    { name: "recipient", type: "address" },
    { name: "supply", type: "uint256" },
    { name: "receive", type: "uint256" },
    { name: "minFill", type: "uint256" },
  ],
} as const

export const fillV2Types = {
  Fill: [
    { name: "fillId", type: "bytes32" },
    { name: "owner", type: "address" },
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
    { name: "hashlockIndex", type: "uint32" },
    { name: "payKey", type: "address" },
    { name: "payBy", type: "uint64" },
    { name: "makerExpiry", type: "uint64" },
    { name: "takerExpiry", type: "uint64" },
  ],
} as const

export const payTakeTypes = {
  PayTake: [{ name: "fills", type: "bytes32[]" }],
} as const

export const cancelFillTypes = {
  CancelFill: [{ name: "fill", type: "bytes32" }],
} as const

// ------------------------------------------------------------------ messages

/** A quote of a v2 set: the maker supplies `supply` for `receive` of `token`, paid to `recipient` in `escrow`. */
export interface QuoteV2 {
  /** The TAKER chain (where the maker is paid). */
  readonly chainId: bigint
  readonly token: Address
  /** The taker chain's v2 escrow: `lock` requires `Fill.takerEscrow` to be it (no fake escrow). */
  readonly escrow: Address
  /** The maker's payee on the taker chain (`Fill.payee`). */
  readonly recipient: Address
  readonly supply: bigint
  readonly receive: bigint
  readonly minFill: bigint
}

export interface QuoteSetV2 {
  readonly owner: Address
  readonly orderId: Hex
  readonly sequence: bigint
  readonly generation: bigint
  readonly quoteSize: bigint
  /** `validUntil - issuedAt` is capped on chain (MAX_QUOTE_LIFE). */
  readonly issuedAt: bigint
  readonly validUntil: bigint
  /** Merkle root over (index, hashlock) leaves (src/Domain/Hashlocks.ts). */
  readonly hashlockRoot: Hex
  readonly hashlockCount: number
  readonly quotes: ReadonlyArray<QuoteV2>
}

export interface FillV2 {
  /** A uniqueness salt chosen by the service; NOT a key (the digest is). */
  readonly fillId: Hex
  readonly owner: Address
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
  readonly hashlockIndex: number
  /** The taker client's ephemeral key: only it authorises the payment (PayTake) and an early cancel (CancelFill). */
  readonly payKey: Address
  /** Last second (inclusive) the payment may be made. */
  readonly payBy: bigint
  readonly makerExpiry: bigint
  readonly takerExpiry: bigint
}

// ------------------------------------------------------------------ builders

/** The owner's FundOrder in the v2 escrow's domain (same type as v1). */
export const fundOrderV2TypedData = (
  chainId: number | bigint,
  escrow: Address,
  message: FundOrder,
): DefinitionV2<typeof fundOrderTypes, "FundOrder"> => ({
  domain: escrowDomainV2(chainId, escrow),
  types: fundOrderTypes,
  primaryType: "FundOrder",
  message,
})

/** The owner's CloseOffer in the v2 escrow's domain (same type as v1). */
export const closeOfferV2TypedData = (
  chainId: number | bigint,
  escrow: Address,
  message: CloseOffer,
): DefinitionV2<typeof closeOfferTypes, "CloseOffer"> => ({
  domain: escrowDomainV2(chainId, escrow),
  types: closeOfferTypes,
  primaryType: "CloseOffer",
  message,
})

/** The maker's QuoteSet, signed by the order's quote signer in the MAKER chain escrow's domain. */
export const quoteSetV2TypedData = (
  makerChainId: number | bigint,
  makerEscrow: Address,
  message: QuoteSetV2,
): DefinitionV2<typeof quoteSetV2Types, "QuoteSet"> => ({
  domain: escrowDomainV2(makerChainId, makerEscrow),
  types: quoteSetV2Types,
  primaryType: "QuoteSet",
  message,
})

/** The taker's Fill (sign item `margin_move`), signed by `payer` in the TAKER chain escrow's domain. */
export const fillV2TypedData = (message: FillV2): DefinitionV2<typeof fillV2Types, "Fill"> => ({
  domain: escrowDomainV2(message.takerChainId, message.takerEscrow),
  types: fillV2Types,
  primaryType: "Fill",
  message,
})

/** The pay key's authorisation of one payment for a take's Fill digests (in order), in the TAKER escrow's domain. */
export const payTakeTypedData = (
  takerChainId: number | bigint,
  takerEscrow: Address,
  fills: ReadonlyArray<Hex>,
): DefinitionV2<typeof payTakeTypes, "PayTake"> => ({
  domain: escrowDomainV2(takerChainId, takerEscrow),
  types: payTakeTypes,
  primaryType: "PayTake",
  message: { fills },
})

/** The pay key's early release of the lock of Fill digest `fill`, in the MAKER escrow's domain. */
export const cancelFillTypedData = (
  makerChainId: number | bigint,
  makerEscrow: Address,
  fill: Hex,
): DefinitionV2<typeof cancelFillTypes, "CancelFill"> => ({
  domain: escrowDomainV2(makerChainId, makerEscrow),
  types: cancelFillTypes,
  primaryType: "CancelFill",
  message: { fill },
})

// ------------------------------------------------------------------ digests and keys

/** The Fill digest: the key of its lock and its payment (taker escrow's domain, recomputed by the maker escrow). */
export const fillDigest = (fill: FillV2): Hex => hashTypedData(fillV2TypedData(fill))

export const quoteSetDigest = (makerChainId: number | bigint, makerEscrow: Address, set: QuoteSetV2): Hex =>
  hashTypedData(quoteSetV2TypedData(makerChainId, makerEscrow, set))

export const payTakeDigest = (takerChainId: number | bigint, takerEscrow: Address, fills: ReadonlyArray<Hex>): Hex =>
  hashTypedData(payTakeTypedData(takerChainId, takerEscrow, fills))

export const cancelFillDigest = (makerChainId: number | bigint, makerEscrow: Address, fill: Hex): Hex =>
  hashTypedData(cancelFillTypedData(makerChainId, makerEscrow, fill))

/** `keccak256(abi.encode(owner, orderId))`: where the escrow stores an order, its counters and its close request. */
export const orderKey = (owner: Address, orderId: Hex): Hex =>
  keccak256(encodeAbiParameters([{ type: "address" }, { type: "bytes32" }], [owner, orderId]))

// ------------------------------------------------------------------ contract-call shapes

/** The QuoteSet as the ABI takes it: Solidity reserves `receive`, so the struct field is `receive_` (as v1). */
export const quoteSetV2AbiArg = (q: QuoteSetV2) => ({
  ...q,
  quotes: q.quotes.map(({ receive, ...rest }) => ({ ...rest, receive_: receive })),
})
