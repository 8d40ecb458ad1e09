/**
 * Calldata of SettlementEscrowV2's fill functions (DESIGN §6 "Fills", settlement v2), from the service's own records.
 * Pure, as v1's (src/Chain/SettlementCalls.ts): the same rows always give the same bytes, so a sweep that rebuilds a
 * call after a crash resubmits exactly the request stored under its idempotency key (the Relayer compares calldata),
 * and every fill of a take builds the same payTake.
 */
import { encodeFunctionData, getAddress, type Hex } from "viem"
import { type FillV2, type QuoteSetV2, type QuoteV2, quoteSetV2AbiArg } from "../Domain/EscrowTypedDataV2.ts"
import { parseWireFillV2 } from "../Domain/WireFillV2.ts"
import { quoteFromWire, type WireQuote } from "../Domain/WireQuote.ts"
import { settlementEscrowV2Abi } from "./artifacts/index.ts"
import type { permitArg } from "./SettlementCalls.ts"

export { permitArg } from "./SettlementCalls.ts"

/** A stored v2 quote: the v1 wire quote plus the taker chain's v2 `escrow`. */
export type StoredQuoteV2 = WireQuote & { readonly escrow: string }

export const quoteV2FromStored = (q: StoredQuoteV2): QuoteV2 => ({ ...quoteFromWire(q), escrow: getAddress(q.escrow) })

/** The stored wire Fill (fills.fill, as answered in to_sign) back to the typed message; throws if it is not one. */
export const fillV2FromWire = (w: unknown): FillV2 => parseWireFillV2(w)

/** The v2 QuoteSet the order's quote signer signed, rebuilt from its `quote_sets` row (and the Fill's owner). */
export const quoteSetV2FromRow = (row: {
  readonly owner: string
  readonly order_id: string
  readonly sequence: string
  readonly identity_generation: string
  readonly quote_size: string
  readonly issued_at: string
  readonly valid_until: Date
  readonly hashlock_root: string
  readonly hashlock_count: number
  readonly quotes: ReadonlyArray<StoredQuoteV2>
}): QuoteSetV2 => ({
  owner: getAddress(row.owner),
  orderId: row.order_id as Hex,
  sequence: BigInt(row.sequence),
  generation: BigInt(row.identity_generation),
  quoteSize: BigInt(row.quote_size),
  issuedAt: BigInt(row.issued_at),
  // valid_until was stored from whole Unix seconds.
  validUntil: BigInt(Math.floor(row.valid_until.getTime() / 1000)),
  hashlockRoot: row.hashlock_root as Hex,
  hashlockCount: row.hashlock_count,
  quotes: row.quotes.map(quoteV2FromStored),
})

/** lock(fill, fillSig, quoteSet, quoteIndex, quoteSig, proof): maker chain, the order's operator only. */
export const lockV2Call = (
  fill: FillV2,
  fillSig: Hex,
  quoteSet: QuoteSetV2,
  quoteIndex: number,
  quoteSig: Hex,
  proof: ReadonlyArray<Hex>,
): Hex =>
  encodeFunctionData({
    abi: settlementEscrowV2Abi,
    functionName: "lock",
    args: [fill, fillSig, quoteSetV2AbiArg(quoteSet), BigInt(quoteIndex), quoteSig, [...proof]],
  })

/** payTake(fills, fillSigs, payKeySig, permit): taker chain, the whole take at once, fills in the PayTake's order. */
export const payTakeCall = (
  fills: ReadonlyArray<FillV2>,
  fillSigs: ReadonlyArray<Hex>,
  payKeySig: Hex,
  permit: ReturnType<typeof permitArg>,
): Hex =>
  encodeFunctionData({
    abi: settlementEscrowV2Abi,
    functionName: "payTake",
    args: [[...fills], [...fillSigs], payKeySig, permit],
  })

export const claimV2Call = (digest: Hex, secret: Hex): Hex =>
  encodeFunctionData({ abi: settlementEscrowV2Abi, functionName: "claim", args: [digest, secret] })

export const claimPaymentV2Call = (digest: Hex, secret: Hex): Hex =>
  encodeFunctionData({ abi: settlementEscrowV2Abi, functionName: "claimPayment", args: [digest, secret] })

/** cancelLock(digest, payKeySig): the pay key's CancelFill (maker escrow's domain); nobody else can release a lock. */
export const cancelLockV2Call = (digest: Hex, payKeySig: Hex): Hex =>
  encodeFunctionData({ abi: settlementEscrowV2Abi, functionName: "cancelLock", args: [digest, payKeySig] })

export const refundV2Call = (digest: Hex): Hex =>
  encodeFunctionData({ abi: settlementEscrowV2Abi, functionName: "refund", args: [digest] })

export const refundPaymentV2Call = (digest: Hex): Hex =>
  encodeFunctionData({ abi: settlementEscrowV2Abi, functionName: "refundPayment", args: [digest] })
