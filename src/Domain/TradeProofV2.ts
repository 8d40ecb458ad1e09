/**
 * The proof of a settlement-v2 trade (DESIGN §10.4, §6 "Fills"): everything a third party needs to check the trade
 * OFFLINE with viem alone, without trusting this service. Beside v1's two agreements it carries what v2 adds:
 *
 * - `quote_set`: the maker's signed v2 QuoteSet (owner, issuedAt, hashlockRoot, hashlockCount, each quote's taker
 *   escrow) in the MAKER v2 escrow's domain, plus the fill's `hashlock_index` and its Merkle `hashlock_proof`;
 * - `fill`: the payer's signed v2 Fill in the TAKER v2 escrow's domain and its EIP-712 `digest` (the key of the lock
 *   and of the payment on chain);
 * - `pay_authorization`: the pay key's PayTake over the take's Fill digests (taker v2 escrow's domain): the payment
 *   was authorised by the key the Fill names, after the client saw every lock final;
 * - `secret`: as the maker revealed it on chain (its claimPayment); keccak256(secret) = the Fill's hashlock;
 * - `transactions`: lock, pay (payTake), claim_payment and claim as the v2 escrow index saw them final.
 *
 * Every domain is recomputed from the signed Fill (makerChainId/makerEscrow, takerChainId/takerEscrow), as the
 * contracts do: a proof naming another domain fails with a reason, it is never trusted.
 */
import { type Hex, keccak256, recoverTypedDataAddress } from "viem"
import {
  type escrowDomainV2,
  type FillV2,
  fillDigest,
  fillV2TypedData,
  payTakeTypedData,
  type QuoteSetV2,
  type QuoteV2,
  quoteSetV2TypedData,
} from "./EscrowTypedDataV2.ts"
import { verifyHashlockProof } from "./Hashlocks.ts"
import { parseWireFillV2 } from "./WireFillV2.ts"
import { quoteV2FromWire, type WireQuoteV2 } from "./WireQuote.ts"
import { toWireTypedData } from "./WireTypedData.ts"
import { wireAddress, wireBytes32, wireUint } from "./WireValues.ts"

export interface SettlementTransactionV2 {
  readonly kind: "lock" | "pay" | "claim" | "claim_payment"
  readonly chain_id: number
  readonly hash: string
  readonly block_number: number
}

/** A v2 quote set as `quote_sets` stores it (+ the order's owner and quote signer). */
export interface QuoteSetV2Record {
  readonly owner: string
  readonly orderId: string
  readonly sequence: string
  readonly generation: string
  readonly quoteSize: string
  /** Unix seconds. */
  readonly issuedAt: string
  /** Unix seconds. */
  readonly validUntil: string
  readonly hashlockRoot: string
  readonly hashlockCount: number
  readonly quotes: ReadonlyArray<WireQuoteV2>
  readonly signature: string
  /** The order's quote signer (FundOrder.quoteSigner). */
  readonly signer: string
}

export interface TradeProofV2Input {
  /** Null only if the set's row is missing (never for fills the service routed). */
  readonly quoteSet: QuoteSetV2Record | null
  /** `fills.hashlock_index`; null (never for routed fills) falls back to the Fill's own `hashlockIndex`. */
  readonly hashlockIndex: number | null
  readonly hashlockProof: ReadonlyArray<string>
  /** The v2 Fill message as stored (`fills.fill`, wire form). */
  readonly fill: unknown
  readonly fillSignature: string | null
  readonly payer: string
  readonly quoteIndex: number
  /** The take's PayTake: the pay key's signature and the Fill digests it covers, in order. */
  readonly payAuthorization: { readonly signature: string; readonly fills: ReadonlyArray<string> } | null
  readonly secret: string | null
  readonly transactions: ReadonlyArray<SettlementTransactionV2>
}

/** The stored v2 set as the QuoteSetV2 message (viem form). Throws TypeError on a malformed stored value. */
export const quoteSetV2Of = (q: QuoteSetV2Record): QuoteSetV2 => ({
  owner: wireAddress(q.owner),
  orderId: wireBytes32(q.orderId),
  sequence: wireUint(q.sequence, 64),
  generation: wireUint(q.generation, 64),
  quoteSize: wireUint(q.quoteSize, 256),
  issuedAt: wireUint(q.issuedAt, 64),
  validUntil: wireUint(q.validUntil, 64),
  hashlockRoot: wireBytes32(q.hashlockRoot),
  hashlockCount: Number(wireUint(q.hashlockCount, 32)),
  quotes: q.quotes.map(quoteV2FromWire),
})

const KIND_ORDER = ["lock", "pay", "claim_payment", "claim"] as const

/** v2 transactions in settlement order: lock, pay, the maker's claim_payment (the reveal), then claim. */
export const sortTransactionsV2 = (txs: ReadonlyArray<SettlementTransactionV2>): Array<SettlementTransactionV2> =>
  [...txs].sort((x, y) => KIND_ORDER.indexOf(x.kind) - KIND_ORDER.indexOf(y.kind) || x.block_number - y.block_number)

/** Builds the proof from stored rows. Throws TypeError when the stored Fill or set is malformed. */
export const buildTradeProofV2 = (input: TradeProofV2Input) => {
  const fill = parseWireFillV2(input.fill)
  return {
    escrow_version: 2 as const,
    quote_set:
      input.quoteSet === null
        ? null
        : {
            typed_data: toWireTypedData(
              quoteSetV2TypedData(fill.makerChainId, fill.makerEscrow, quoteSetV2Of(input.quoteSet)),
            ),
            signature: input.quoteSet.signature,
            signer: input.quoteSet.signer.toLowerCase(),
            hashlock_index: input.hashlockIndex ?? fill.hashlockIndex,
            hashlock_proof: input.hashlockProof.map((h) => h.toLowerCase()),
          },
    fill: {
      typed_data: toWireTypedData(fillV2TypedData(fill)),
      signature: input.fillSignature,
      signer: input.payer.toLowerCase(),
      quote_index: input.quoteIndex,
      digest: fillDigest(fill),
    },
    pay_authorization:
      input.payAuthorization === null
        ? null
        : {
            typed_data: toWireTypedData(
              payTakeTypedData(
                fill.takerChainId,
                fill.takerEscrow,
                input.payAuthorization.fills.map((d) => d.toLowerCase() as Hex),
              ),
            ),
            signature: input.payAuthorization.signature,
            signer: fill.payKey.toLowerCase(),
          },
    secret: input.secret,
    transactions: sortTransactionsV2(input.transactions),
  }
}

export type TradeProofV2 = ReturnType<typeof buildTradeProofV2>

// ------------------------------------------------------------------ offline verification

/** Wire typed data as the route answers it (JSON). */
interface WireTyped {
  readonly domain?: unknown
  readonly message?: unknown
}

/** A v2 proof as JSON (what a third party receives); every field is checked, none trusted. */
export interface TradeProofV2Json {
  readonly escrow_version?: unknown
  readonly quote_set: {
    readonly typed_data: WireTyped
    readonly signature: string
    readonly signer: string
    readonly hashlock_index: number
    readonly hashlock_proof: ReadonlyArray<string>
  } | null
  readonly fill: {
    readonly typed_data: WireTyped
    readonly signature: string | null
    readonly signer: string
    readonly quote_index: number
    readonly digest: string
  }
  readonly pay_authorization: {
    readonly typed_data: WireTyped
    readonly signature: string
    readonly signer: string
  } | null
  readonly secret: string | null
}

/**
 * Why a v2 proof fails, one name per check (`verifyTradeProofV2` answers the failed ones):
 * fill: the Fill message is not a v2 Fill (nothing else can be checked); fill_domain: the typed data names
 * another domain than the taker v2 escrow's; fill_signature: it does not recover to the Fill's payer; payer: the
 * proof's signer is not the Fill's payer; fill_digest: the digest is not the Fill's; amounts: the trade's amounts
 * are not the Fill's; quote_set: missing or malformed; quote_set_domain: not the maker v2 escrow's domain;
 * quote_set_signature: it does not recover to the named quote signer; quote_set_order: the set is not the Fill's
 * (owner, orderId, sequence); quote_index: no such quote; quote_chain / quote_escrow / quote_recipient: the quote
 * does not pay on the Fill's taker chain, into its taker escrow, to its payee; price: amountIn × supply <
 * amountOut × receive; min_fill: amountOut < minFill; hashlock_index: the set's index is not the Fill's or not
 * below hashlockCount; hashlock_proof: (index, hashlock) is not under the signed root; secret: missing or
 * keccak256(secret) ≠ hashlock; pay_authorization: missing or malformed; pay_authorization_domain: not the taker
 * v2 escrow's domain; pay_authorization_signature: it does not recover to the Fill's payKey;
 * pay_authorization_fills: the signed list does not contain the Fill's digest.
 */
export type TradeProofV2Failure =
  | "fill"
  | "fill_domain"
  | "fill_signature"
  | "payer"
  | "fill_digest"
  | "amounts"
  | "quote_set"
  | "quote_set_domain"
  | "quote_set_signature"
  | "quote_set_order"
  | "quote_index"
  | "quote_chain"
  | "quote_escrow"
  | "quote_recipient"
  | "price"
  | "min_fill"
  | "hashlock_index"
  | "hashlock_proof"
  | "secret"
  | "pay_authorization"
  | "pay_authorization_domain"
  | "pay_authorization_signature"
  | "pay_authorization_fills"

const same = (a: unknown, b: string) => typeof a === "string" && a.toLowerCase() === b.toLowerCase()

/** The wire domain equals the expected one (chain id as number or decimal string; addresses in any case). */
const sameDomain = (given: unknown, expected: ReturnType<typeof escrowDomainV2>) => {
  if (typeof given !== "object" || given === null) return false
  const d = given as Record<string, unknown>
  return (
    d.name === expected.name &&
    d.version === expected.version &&
    String(d.chainId) === String(expected.chainId) &&
    same(d.verifyingContract, expected.verifyingContract)
  )
}

const recovers = async (
  expected: string,
  // biome-ignore lint/suspicious/noExplicitAny: any v2 definition (viem's generic typed-data parameter)
  definition: any,
  signature: unknown,
): Promise<boolean> => {
  if (typeof signature !== "string" || !/^0x[0-9a-fA-F]+$/.test(signature)) return false
  try {
    return same(await recoverTypedDataAddress({ ...definition, signature: signature as Hex }), expected)
  } catch {
    return false
  }
}

const attempt = <T>(f: () => T): T | undefined => {
  try {
    return f()
  } catch {
    return undefined
  }
}

/** The signed set's message from its wire typed data (strict: a malformed field is undefined). */
const parseWireQuoteSetV2 = (message: unknown): QuoteSetV2 | undefined =>
  attempt(() => {
    const m = message as Record<string, unknown>
    if (!Array.isArray(m.quotes)) throw new TypeError("quotes")
    return quoteSetV2Of({
      owner: m.owner as string,
      orderId: m.orderId as string,
      sequence: m.sequence as string,
      generation: m.generation as string,
      quoteSize: m.quoteSize as string,
      issuedAt: m.issuedAt as string,
      validUntil: m.validUntil as string,
      hashlockRoot: m.hashlockRoot as string,
      hashlockCount: m.hashlockCount as number,
      quotes: (m.quotes as Array<Record<string, unknown>>).map((q) => ({
        chain_id: q.chainId as string,
        token: q.token as string,
        escrow: q.escrow as string,
        recipient: q.recipient as string,
        supply: q.supply as string,
        receive: q.receive as string,
        min_fill: q.minFill as string,
      })),
      signature: "",
      signer: "",
    })
  })

const checkQuote = (fill: FillV2, quote: QuoteV2 | undefined, failed: Array<TradeProofV2Failure>) => {
  if (quote === undefined) return failed.push("quote_index")
  if (quote.chainId !== fill.takerChainId) failed.push("quote_chain")
  if (!same(quote.escrow, fill.takerEscrow)) failed.push("quote_escrow")
  if (!same(quote.recipient, fill.payee)) failed.push("quote_recipient")
  if (fill.amountIn * quote.supply < fill.amountOut * quote.receive) failed.push("price")
  if (fill.amountOut < quote.minFill) failed.push("min_fill")
}

/**
 * Checks a v2 proof with viem alone (what a third party does) against the trade's amounts. Answers the failed
 * checks (empty = valid); see TradeProofV2Failure for each name.
 */
export const verifyTradeProofV2 = async (
  item: { readonly amount_in: string; readonly amount_out: string },
  proof: TradeProofV2Json,
): Promise<Array<TradeProofV2Failure>> => {
  const failed: Array<TradeProofV2Failure> = []
  const fill = attempt(() => parseWireFillV2(proof.fill.typed_data.message))
  if (fill === undefined) return ["fill"]
  const fillDefinition = fillV2TypedData(fill)
  const digest = fillDigest(fill)
  if (!sameDomain(proof.fill.typed_data.domain, fillDefinition.domain)) failed.push("fill_domain")
  if (!(await recovers(fill.payer, fillDefinition, proof.fill.signature))) failed.push("fill_signature")
  if (!same(proof.fill.signer, fill.payer)) failed.push("payer")
  if (!same(proof.fill.digest, digest)) failed.push("fill_digest")
  if (item.amount_in !== fill.amountIn.toString() || item.amount_out !== fill.amountOut.toString()) {
    failed.push("amounts")
  }

  const qs = proof.quote_set
  const set = qs === null ? undefined : parseWireQuoteSetV2(qs.typed_data.message)
  if (qs === null || set === undefined) failed.push("quote_set")
  else {
    const setDefinition = quoteSetV2TypedData(fill.makerChainId, fill.makerEscrow, set)
    if (!sameDomain(qs.typed_data.domain, setDefinition.domain)) failed.push("quote_set_domain")
    if (!(await recovers(qs.signer, setDefinition, qs.signature))) failed.push("quote_set_signature")
    if (!same(set.owner, fill.owner) || !same(set.orderId, fill.orderId) || set.sequence !== fill.sequence) {
      failed.push("quote_set_order")
    }
    checkQuote(
      fill,
      Number.isSafeInteger(proof.fill.quote_index) ? set.quotes[proof.fill.quote_index] : undefined,
      failed,
    )
    if (qs.hashlock_index !== fill.hashlockIndex || fill.hashlockIndex >= set.hashlockCount) {
      failed.push("hashlock_index")
    }
    const path = attempt(() => qs.hashlock_proof.map(wireBytes32))
    const under =
      path !== undefined &&
      verifyHashlockProof({
        root: set.hashlockRoot,
        count: set.hashlockCount,
        index: fill.hashlockIndex,
        hashlock: fill.hashlock,
        proof: path,
      })
    if (!under) failed.push("hashlock_proof")
  }

  const secret = attempt(() => wireBytes32(proof.secret))
  if (secret === undefined || keccak256(secret) !== fill.hashlock.toLowerCase()) failed.push("secret")

  const pay = proof.pay_authorization
  const digests = attempt(() => {
    const fills = (pay?.typed_data.message as { fills?: unknown } | undefined)?.fills
    if (!Array.isArray(fills)) throw new TypeError("fills")
    return fills.map(wireBytes32)
  })
  if (pay === null || digests === undefined) failed.push("pay_authorization")
  else {
    const payDefinition = payTakeTypedData(fill.takerChainId, fill.takerEscrow, digests)
    if (!sameDomain(pay.typed_data.domain, payDefinition.domain)) failed.push("pay_authorization_domain")
    if (!(await recovers(fill.payKey, payDefinition, pay.signature)) || !same(pay.signer, fill.payKey)) {
      failed.push("pay_authorization_signature")
    }
    if (!digests.includes(digest)) failed.push("pay_authorization_fills")
  }
  return failed
}
