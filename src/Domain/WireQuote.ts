import { getAddress } from "viem"
import type { Quote } from "./EscrowTypedData.ts"
import type { QuoteV2 } from "./EscrowTypedDataV2.ts"

/**
 * A quote as PUT /v1/orders/{id}/quotes takes it and `quote_sets.quotes` stores it: base units as decimal strings,
 * the chain id as a JSON number (or a decimal string). `escrow`: only in a v2 set (the taker chain's v2 escrow).
 */
export interface WireQuote {
  readonly chain_id: number | string
  readonly token: string
  readonly recipient: string
  readonly supply: string
  readonly receive: string
  readonly min_fill: string
  readonly escrow?: string | undefined
}

/** The QuoteSet's `Quote` (viem form, checksummed addresses) of a wire quote; throws on a malformed amount. */
export const quoteFromWire = (q: WireQuote): Quote => ({
  chainId: BigInt(q.chain_id),
  token: getAddress(q.token),
  recipient: getAddress(q.recipient),
  supply: BigInt(q.supply),
  receive: BigInt(q.receive),
  minFill: BigInt(q.min_fill),
})

/** A wire quote of a v2 set: it must name `escrow`. */
export interface WireQuoteV2 extends WireQuote {
  readonly escrow: string
}

/** The v2 QuoteSet's `Quote` of a wire quote; throws on a malformed amount or address. */
export const quoteV2FromWire = (q: WireQuoteV2): QuoteV2 => ({
  chainId: BigInt(q.chain_id),
  token: getAddress(q.token),
  escrow: getAddress(q.escrow),
  recipient: getAddress(q.recipient),
  supply: BigInt(q.supply),
  receive: BigInt(q.receive),
  minFill: BigInt(q.min_fill),
})
