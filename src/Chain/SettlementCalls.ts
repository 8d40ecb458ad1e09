/**
 * Calldata of the SettlementEscrow's fill functions (DESIGN §6 "Fills"), built from the service's own records.
 * Pure: the same records always give the same bytes, so a sweep that rebuilds a call after a crash resubmits
 * exactly the request already stored under the fill's idempotency key (the Relayer compares calldata).
 */
import { encodeFunctionData, getAddress, type Hex, hexToNumber, slice } from "viem"
import { type Fill, type QuoteSet, quoteSetAbiArg } from "../Domain/EscrowTypedData.ts"
import { quoteFromWire, type WireQuote } from "../Domain/WireQuote.ts"
import { settlementEscrowAbi } from "./artifacts/index.ts"

/** The Fill as stored in `fills.fill` / `to_sign` (wire form: decimal strings, lowercase addresses). */
export type WireFill = Readonly<Record<keyof Fill, string | number | boolean>>

/** A wire Fill back to the typed message (uint64/uint256 → bigint, uint32 → number). */
export const fillFromWire = (w: WireFill): Fill => ({
  fillId: String(w.fillId) as Hex,
  orderId: String(w.orderId) as Hex,
  sequence: BigInt(w.sequence as string),
  makerChainId: BigInt(w.makerChainId as string),
  makerEscrow: getAddress(String(w.makerEscrow)),
  takerChainId: BigInt(w.takerChainId as string),
  takerEscrow: getAddress(String(w.takerEscrow)),
  payer: getAddress(String(w.payer)),
  payee: getAddress(String(w.payee)),
  amountIn: BigInt(w.amountIn as string),
  recipient: getAddress(String(w.recipient)),
  amountOut: BigInt(w.amountOut as string),
  dex: Number(w.dex),
  toMargin: w.toMargin === true || w.toMargin === "true",
  hashlock: String(w.hashlock) as Hex,
  makerExpiry: BigInt(w.makerExpiry as string),
  takerExpiry: BigInt(w.takerExpiry as string),
})

/** A stored quote (wire form of PUT /v1/orders/{id}/quotes). */
export type StoredQuote = WireQuote

/** The QuoteSet the maker's quote signer signed, rebuilt from its `quote_sets` row. */
export const quoteSetFromRow = (row: {
  readonly order_id: string
  readonly sequence: string
  readonly identity_generation: string
  readonly quote_size: string
  readonly valid_until: Date
  readonly quotes: ReadonlyArray<StoredQuote>
}): QuoteSet => ({
  orderId: row.order_id as Hex,
  sequence: BigInt(row.sequence),
  generation: BigInt(row.identity_generation),
  quoteSize: BigInt(row.quote_size),
  // valid_until was stored from whole Unix seconds.
  validUntil: BigInt(Math.floor(row.valid_until.getTime() / 1000)),
  quotes: row.quotes.map(quoteFromWire),
})

/** The escrow's `Permit` argument from an EIP-2612 signature (65 bytes r‖s‖v; v 0/1 normalised to 27/28). */
export const permitArg = (value: bigint, deadline: bigint, signature: Hex) => {
  const v = hexToNumber(slice(signature, 64, 65))
  return {
    value,
    deadline,
    v: v < 27 ? v + 27 : v,
    r: slice(signature, 0, 32),
    s: slice(signature, 32, 64),
  }
}

export const lockCall = (fill: Fill, fillSig: Hex, quoteSet: QuoteSet, quoteIndex: number, quoteSig: Hex): Hex =>
  encodeFunctionData({
    abi: settlementEscrowAbi,
    functionName: "lock",
    args: [fill, fillSig, quoteSetAbiArg(quoteSet), BigInt(quoteIndex), quoteSig],
  })

export const payCall = (fill: Fill, fillSig: Hex, permit: ReturnType<typeof permitArg>): Hex =>
  encodeFunctionData({ abi: settlementEscrowAbi, functionName: "pay", args: [fill, fillSig, permit] })

export const claimCall = (fillId: Hex, secret: Hex): Hex =>
  encodeFunctionData({ abi: settlementEscrowAbi, functionName: "claim", args: [fillId, secret] })

export const claimPaymentCall = (fillId: Hex, secret: Hex): Hex =>
  encodeFunctionData({ abi: settlementEscrowAbi, functionName: "claimPayment", args: [fillId, secret] })

export const cancelLockCall = (fillId: Hex): Hex =>
  encodeFunctionData({ abi: settlementEscrowAbi, functionName: "cancelLock", args: [fillId] })

export const refundCall = (fillId: Hex): Hex =>
  encodeFunctionData({ abi: settlementEscrowAbi, functionName: "refund", args: [fillId] })

export const refundPaymentCall = (fillId: Hex): Hex =>
  encodeFunctionData({ abi: settlementEscrowAbi, functionName: "refundPayment", args: [fillId] })
