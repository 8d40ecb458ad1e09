/**
 * The OpenAPI examples of Orders, Escrow, Withdrawals and Trades (src/<Concept>/Examples.ts, issue 18 item 3)
 * stay what the routes would answer: every signature in them verifies against the typed data beside it, the typed
 * data is what the service's builders make of the terms, and the trade's proof passes the offline verifier.
 * (That each example decodes with its schema is held by test/integration/openapi-docs.test.ts: the generator drops
 * an example its schema refuses.)
 */
import { type Address, getAddress, type Hex, recoverTypedDataAddress, verifyTypedData } from "viem"
import { describe, expect, it } from "vitest"
import { closeOfferOn } from "../../src/Chain/OrderEscrow.ts"
import { closeOffer } from "../../src/Domain/Close.ts"
import { quoteSetV2TypedData } from "../../src/Domain/EscrowTypedDataV2.ts"
import { hashlockTree } from "../../src/Domain/Hashlocks.ts"
import { verifyTradeProofV2 } from "../../src/Domain/TradeProof.ts"
import { quoteV2FromWire } from "../../src/Domain/WireQuote.ts"
import { toWireTypedData } from "../../src/Domain/WireTypedData.ts"
import { CLOSE_PREPARATION, CLOSE_REQUEST } from "../../src/Escrow/Examples.ts"
import {
  ORDER_FUNDED,
  ORDER_PREPARATION_MARGIN,
  ORDER_PREPARATION_WALLET,
  ORDER_SIGNATURES_REQUEST,
  QUOTE_SET_REQUEST,
} from "../../src/Orders/Examples.ts"
import { TRADE_HISTORY } from "../../src/Trades/Examples.ts"
import { SUBMIT_WITHDRAWAL_REQUEST, WITHDRAWAL_PREPARATION, WITHDRAWAL_QUEUED } from "../../src/Withdrawals/Examples.ts"

// biome-ignore lint/suspicious/noExplicitAny: wire typed data is JSON
const typed = (value: unknown) => value as any
const signedBy = (data: unknown, address: string, signature: string) =>
  verifyTypedData({ ...typed(data), address: address as Address, signature: signature as Hex })

describe("OpenAPI examples", () => {
  it("the order's fund_order and permit are signed by its owner; both preparations name the same order", async () => {
    const [fund, permit] = ORDER_PREPARATION_WALLET.to_sign
    const owner = ORDER_PREPARATION_WALLET.order.owner_address
    expect(fund.signer).toBe(owner)
    expect(await signedBy(fund.typed_data, owner, ORDER_SIGNATURES_REQUEST.fund_order)).toBe(true)
    expect(await signedBy(permit.typed_data, owner, ORDER_SIGNATURES_REQUEST.permit)).toBe(true)
    expect(ORDER_PREPARATION_MARGIN.to_sign.map((i) => i.kind)).toEqual(["venue_transfer", "fund_order", "permit"])
    expect(ORDER_PREPARATION_MARGIN.to_sign.slice(1)).toEqual(ORDER_PREPARATION_WALLET.to_sign)
    expect(fund.typed_data.message.quoteSigner.toLowerCase()).toBe(ORDER_FUNDED.quote_signer)
  })

  it("the quote set is signed by the order's quote signer over its v2 QuoteSet and hashlocks", async () => {
    const q = QUOTE_SET_REQUEST
    const escrow = ORDER_PREPARATION_WALLET.to_sign[0].typed_data.domain.verifyingContract
    const tree = hashlockTree([...q.hashlocks] as Array<Hex>)
    expect(tree.root).toBe(q.hashlock_root)
    expect(tree.count).toBe(q.hashlock_count)
    const definition = quoteSetV2TypedData(999, getAddress(escrow), {
      owner: getAddress(ORDER_FUNDED.owner_address),
      orderId: ORDER_FUNDED.id,
      sequence: BigInt(q.sequence),
      generation: BigInt(q.identity_generation),
      quoteSize: BigInt(q.quote_size),
      issuedAt: BigInt(q.issued_at),
      validUntil: BigInt(q.valid_until),
      hashlockRoot: q.hashlock_root,
      hashlockCount: q.hashlock_count,
      quotes: q.quotes.map(quoteV2FromWire),
    })
    expect(await signedBy(definition, ORDER_FUNDED.quote_signer, q.signature)).toBe(true)
    expect(ORDER_FUNDED.quote_set.signature).toBe(q.signature)
  })

  it("the close_offer is the CloseOffer of the prepared terms and the close request's signature is its owner's", async () => {
    const item = CLOSE_PREPARATION.to_sign[0]
    const domain = item.typed_data.domain
    const rebuilt = closeOfferOn(
      {
        version: 2,
        venue: CLOSE_PREPARATION.venue,
        chainId: domain.chainId,
        address: getAddress(domain.verifyingContract),
      },
      closeOffer(domain.chainId, domain.verifyingContract, {
        orderId: CLOSE_REQUEST.order_id,
        owner: item.signer,
        dex: CLOSE_REQUEST.dex,
        toMargin: CLOSE_REQUEST.to_margin,
        nonce: BigInt(CLOSE_REQUEST.nonce),
        deadline: BigInt(CLOSE_REQUEST.deadline),
      }).message,
    )
    expect(toWireTypedData(rebuilt.typedData)).toEqual(item.typed_data)
    expect(await signedBy(item.typed_data, item.signer, CLOSE_REQUEST.signature)).toBe(true)
  })

  it("the submitted withdrawal is the prepared typed data, signed by the linked address", async () => {
    expect(SUBMIT_WITHDRAWAL_REQUEST.typed_data).toEqual(WITHDRAWAL_PREPARATION.typed_data)
    const signer = await recoverTypedDataAddress({
      ...typed(SUBMIT_WITHDRAWAL_REQUEST.typed_data),
      signature: SUBMIT_WITHDRAWAL_REQUEST.signature as Hex,
    })
    expect(signer.toLowerCase()).toBe(WITHDRAWAL_QUEUED.address)
  })

  it("the trade's proof verifies offline", async () => {
    const [trade] = TRADE_HISTORY.data
    expect(await verifyTradeProofV2(trade, typed(trade.proof))).toEqual([])
  })
})
