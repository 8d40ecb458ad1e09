/**
 * The proof of a trade (a settled fill) in `GET /v1/trades/history` (DESIGN §10.4): everything a third party needs
 * to check the trade OFFLINE with an EIP-712 library alone, without trusting this service:
 *
 * - `quote_set`: the maker's signed QuoteSet, in the maker chain escrow's domain, with the signer fixed in the
 *   order's FundOrder (`orders.quote_signer`);
 * - `fill`: the taker's signed Fill (`margin_move`), in the taker chain escrow's domain, signed by the payer; its
 *   `orderId`/`sequence` name the quote set and `quote_index` the quote it was priced on, so
 *   `amountIn × supply ≥ amountOut × receive` can be checked against that quote;
 * - `secret`: public once claimed; `keccak256(secret)` equals the Fill's `hashlock`;
 * - `transactions`: lock, pay, claim and claim_payment as the escrow index saw them on chain (hash and block).
 *
 * Typed data travels in wire form (src/Domain/WireTypedData.ts: bigints as decimal strings), exactly what
 * `eth_signTypedData_v4` and viem's `verifyTypedData` take.
 */
import { type Fill, fillTypedData, type Quote, quoteSetTypedData } from "./EscrowTypedData.ts"
import type { WireQuote } from "./WireQuote.ts"
import { toWireTypedData } from "./WireTypedData.ts"
import { wireAddress as address, wireBig as big, wireHex as hex } from "./WireValues.ts"

export type SettlementKind = "lock" | "pay" | "claim" | "claim_payment"

/** Escrow event name → settlement step (the events that move a fill's funds forward). */
export const SETTLEMENT_EVENTS: Readonly<Record<string, SettlementKind>> = {
  Locked: "lock",
  Paid: "pay",
  Claimed: "claim",
  PaymentClaimed: "claim_payment",
}

const KIND_ORDER: ReadonlyArray<SettlementKind> = ["lock", "pay", "claim", "claim_payment"]

export interface SettlementTransaction {
  readonly kind: SettlementKind
  readonly chain_id: number
  readonly hash: string
  readonly block_number: number
}

export type { WireQuote } from "./WireQuote.ts"

export interface QuoteSetRecord {
  readonly orderId: string
  readonly sequence: string
  readonly generation: string
  readonly quoteSize: string
  /** Unix seconds. */
  readonly validUntil: string
  readonly quotes: ReadonlyArray<WireQuote>
  readonly signature: string
  /** The order's quote signer (FundOrder.quoteSigner). */
  readonly signer: string
}

export interface TradeProofInput {
  readonly makerChainId: number
  readonly makerEscrow: string
  /** Null only if the set's row is missing (never for fills the service routed). */
  readonly quoteSet: QuoteSetRecord | null
  /** The Fill message as stored (`fills.fill`). */
  readonly fill: unknown
  readonly fillSignature: string | null
  readonly payer: string
  readonly quoteIndex: number
  readonly secret: string | null
  readonly transactions: ReadonlyArray<SettlementTransaction>
}

/**
 * The Fill message from its stored wire form (decimal strings, lowercase addresses). A stored full typed-data
 * object (`{domain, types, primaryType, message}`) is accepted too: only its message is read, and the domain is
 * always recomputed from the message's taker chain and escrow, as the contract does.
 */
export const parseWireFill = (stored: unknown): Fill => {
  const outer = (stored ?? {}) as Record<string, unknown>
  const m = (typeof outer.message === "object" && outer.message !== null ? outer.message : outer) as Record<
    string,
    unknown
  >
  const dex = Number(big(m.dex))
  if (dex > 0xffffffff) throw new TypeError("dex is a uint32")
  if (typeof m.toMargin !== "boolean") throw new TypeError("toMargin is a boolean")
  return {
    fillId: hex(m.fillId),
    orderId: hex(m.orderId),
    sequence: big(m.sequence),
    makerChainId: big(m.makerChainId),
    makerEscrow: address(m.makerEscrow),
    takerChainId: big(m.takerChainId),
    takerEscrow: address(m.takerEscrow),
    payer: address(m.payer),
    payee: address(m.payee),
    amountIn: big(m.amountIn),
    recipient: address(m.recipient),
    amountOut: big(m.amountOut),
    dex,
    toMargin: m.toMargin,
    hashlock: hex(m.hashlock),
    makerExpiry: big(m.makerExpiry),
    takerExpiry: big(m.takerExpiry),
  }
}

const quoteOf = (q: WireQuote): Quote => ({
  chainId: big(q.chain_id),
  token: address(q.token),
  recipient: address(q.recipient),
  supply: big(q.supply),
  receive: big(q.receive),
  minFill: big(q.min_fill),
})

/** The maker's QuoteSet typed data (viem form) rebuilt from the stored set. */
export const quoteSetDefinition = (makerChainId: number, makerEscrow: string, q: QuoteSetRecord) =>
  quoteSetTypedData(makerChainId, address(makerEscrow), {
    orderId: hex(q.orderId),
    sequence: big(q.sequence),
    generation: big(q.generation),
    quoteSize: big(q.quoteSize),
    validUntil: big(q.validUntil),
    quotes: q.quotes.map(quoteOf),
  })

/** Transactions in settlement order (lock, pay, claim, claim_payment), then by block. */
export const sortTransactions = (txs: ReadonlyArray<SettlementTransaction>): Array<SettlementTransaction> =>
  [...txs].sort((x, y) => KIND_ORDER.indexOf(x.kind) - KIND_ORDER.indexOf(y.kind) || x.block_number - y.block_number)

export const buildTradeProof = (input: TradeProofInput) => ({
  quote_set:
    input.quoteSet === null
      ? null
      : {
          typed_data: toWireTypedData(quoteSetDefinition(input.makerChainId, input.makerEscrow, input.quoteSet)),
          signature: input.quoteSet.signature,
          signer: input.quoteSet.signer.toLowerCase(),
        },
  fill: {
    typed_data: toWireTypedData(fillTypedData(parseWireFill(input.fill))),
    signature: input.fillSignature,
    signer: input.payer.toLowerCase(),
    quote_index: input.quoteIndex,
  },
  secret: input.secret,
  transactions: sortTransactions(input.transactions),
})

export type TradeProof = ReturnType<typeof buildTradeProof>

// Settlement v2's proofs and their offline verifier (src/Domain/TradeProofV2.ts).
export {
  buildTradeProofV2,
  type QuoteSetV2Record,
  type SettlementTransactionV2,
  type TradeProofV2,
  type TradeProofV2Failure,
  type TradeProofV2Input,
  type TradeProofV2Json,
  verifyTradeProofV2,
} from "./TradeProofV2.ts"
