/**
 * Examples of the takes routes for the OpenAPI document (issue 18 item 3): one settlement v2 take of 25 USDC from
 * Hyperliquid to Aster in one fill, built with the same typed-data builders the service signs with, so the
 * `to_sign` items are exactly what a client receives (values are illustrative: devnet accounts and escrows).
 */
import type { Address, Hex } from "viem"
import { fillV2TypedData, payTakeTypedData } from "../Domain/EscrowTypedDataV2.ts"
import { permitTypedData } from "../Domain/Permit.ts"
import { toWireTypedData } from "../Domain/WireTypedData.ts"

const PAYER: Address = "0x90f79bf6eb2c4f870365e785982e1f101e93b906"
const MAKER_OWNER: Address = "0x15d34aaf54267db7d7c367839aaf71a00a2c6a65"
const PAY_KEY: Address = "0x42b189e8eb1bf4223d3f0733e66849f77743bab2"
const TOKEN: Address = "0x5fbdb2315678afecb367f032d93f642f64180aa3"
const HL_ESCROW_V2: Address = "0x5fc8d32690cc91d4c39d9d3abcbd16989f875707"
const ASTER_ESCROW_V2: Address = "0x0165878a594ca255338adfa4d48449f69242eb8f"
const ORDER_ID: Hex = "0x52348de7ab5fb2fa0f8e8d444ca6e814401bb9bd4932a1af1f8ac602716ae009"
const FILL_ID = "0eb4db7d-5a1c-4c8e-9f2b-7d3e1a6c4b20"
const FILL_KEY: Hex = "0x000000000000000000000000000000000eb4db7d5a1c4c8e9f2b7d3e1a6c4b20"
const HASHLOCK: Hex = "0x9c22ff5f21f0b81b113e63f7db6da94fedef11b2119b4088b89664fb9a3cb658"
const FILL_DIGEST: Hex = "0x4711156c1a686dcd774e74acc351f75a26f0757b31259bd71d9f2d54df86e7a8"
const PAY_BY = 1_795_843_252n
const MAKER_EXPIRY = 1_795_846_852n
const TAKER_EXPIRY = 1_795_844_752n

export const EXAMPLE_TAKE_ID = "2e3c2edd-9b62-44d3-a727-edf6f9850017"

/** The quote the fill takes (supply 999,000 per 1,000,000 received: 0.1 % spread). */
export const EXAMPLE_QUOTE = {
  venue: "hyperliquid",
  chain_id: 999,
  token: TOKEN,
  recipient: MAKER_OWNER,
  supply: "999000",
  receive: "1000000",
  min_fill: "100000",
}

export const EXAMPLE_PREVIEW_REQUEST = { from: "hyperliquid", to: "aster", amount_in: "25000000", max_parts: 2 }

export const EXAMPLE_PREVIEW = {
  from: "hyperliquid",
  to: "aster",
  amount_in: "25000000",
  fills: [
    {
      order_id: ORDER_ID,
      quote: EXAMPLE_QUOTE,
      quote_index: 0,
      sequence: 17,
      amount_in: "25000000",
      amount_out: "24975000",
    },
  ],
  total_in: "25000000",
  total_out: "24975000",
}

export const EXAMPLE_CREATE_TAKE_REQUEST = {
  client_take_id: "take-2026-11-28-0001",
  from: "hyperliquid",
  to: "aster",
  amount_in: "25000000",
  min_out: "24725250",
  payer: PAYER,
  recipient: PAYER,
  max_parts: 8,
  pay_key: PAY_KEY,
}

export const EXAMPLE_TAKE = {
  id: EXAMPLE_TAKE_ID,
  client_take_id: "take-2026-11-28-0001",
  from: "hyperliquid",
  to: "aster",
  amount_in: "25000000",
  min_out: "24725250",
  payer: PAYER,
  recipient: PAYER,
  max_parts: 8,
  total_in: "25000000",
  total_out: "24975000",
  state: "reserved",
  final: false,
  pay_deadline: "2026-11-28T12:04:00.000Z",
  signed_at: null,
  error: "",
  created_at: "2026-11-28T12:00:00.000Z",
  updated_at: "2026-11-28T12:00:00.000Z",
  fills: [
    {
      fill_id: FILL_ID,
      order_id: ORDER_ID,
      sequence: 17,
      quote_index: 0,
      amount_in: "25000000",
      amount_out: "24975000",
      payee: MAKER_OWNER,
      hashlock: HASHLOCK,
      maker_expiry: Number(MAKER_EXPIRY),
      taker_expiry: Number(TAKER_EXPIRY),
      state: "reserved",
      final: false,
      error: "",
      transactions: [],
      fill_digest: FILL_DIGEST,
      hashlock_index: 0,
    },
  ],
  escrow_version: 2,
  pay_key: PAY_KEY,
  pay_by: Number(PAY_BY),
  pay_authorized_at: null,
}

const fill = fillV2TypedData({
  fillId: FILL_KEY,
  owner: MAKER_OWNER,
  orderId: ORDER_ID,
  sequence: 17n,
  makerChainId: 42161n,
  makerEscrow: ASTER_ESCROW_V2,
  takerChainId: 999n,
  takerEscrow: HL_ESCROW_V2,
  payer: PAYER,
  payee: MAKER_OWNER,
  amountIn: 25_000_000n,
  recipient: PAYER,
  amountOut: 24_975_000n,
  dex: 0,
  toMargin: true,
  hashlock: HASHLOCK,
  hashlockIndex: 0,
  payKey: PAY_KEY,
  payBy: PAY_BY,
  makerExpiry: MAKER_EXPIRY,
  takerExpiry: TAKER_EXPIRY,
})

const permit = permitTypedData(
  { name: "USD Coin", version: "2", chainId: 999, verifyingContract: TOKEN },
  { owner: PAYER, spender: HL_ESCROW_V2, value: 25_000_000n, nonce: 0n, deadline: PAY_BY },
)

/** What POST /v1/takes answers: the take and the payer's items (the permit, a margin_move per fill). */
export const EXAMPLE_TAKE_WITH_SIGN_ITEMS = {
  take: EXAMPLE_TAKE,
  to_sign: [
    { kind: "permit", signer: PAYER, typed_data: toWireTypedData(permit) },
    { kind: "margin_move", signer: PAYER, typed_data: toWireTypedData(fill), fill_id: FILL_ID, digest: FILL_DIGEST },
  ],
}

/** Once every lock is final: the pay key's PayTake, offered as a second item. */
export const EXAMPLE_PAY_AUTHORIZATION_ITEM = {
  kind: "pay_authorization",
  signer: PAY_KEY,
  typed_data: toWireTypedData(payTakeTypedData(999, HL_ESCROW_V2, [FILL_DIGEST])),
}

const SIGNATURE = `0x${"5d".repeat(32)}${"1c".repeat(32)}1b`

export const EXAMPLE_SIGNATURES_REQUEST = {
  permit: SIGNATURE,
  fills: [{ fill_id: FILL_ID, signature: SIGNATURE }],
}
