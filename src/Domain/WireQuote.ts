import { getAddress } from "viem"
import type { Quote } from "./EscrowTypedData.ts"

/**
 * A quote as PUT /v1/orders/{id}/quotes takes it and `quote_sets.quotes` stores it: base units as decimal strings,
 * the chain id as a JSON number (or a decimal string).
 */
export interface WireQuote {
  readonly chain_id: number | string
  readonly token: string
  readonly recipient: string
  readonly supply: string
  readonly receive: string
  readonly min_fill: string
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
