import type { Address, Hex } from "viem"
import type { IndexState } from "../Chain/EscrowIndex.ts"

/**
 * The v1 index tables' rows as PostgreSQL returns them (amounts and blocks as text) and how they fill the fold's
 * IndexState (EscrowIndex.ts): what a page's touched-rows read and the integrity check's whole-state read load
 * (ChainIndex.ts). The column lists are those reads' select lists.
 */

export interface RawOrder {
  order_id: string
  owner: string
  operator: string
  quote_signer: string
  available: string
  locked: string
  created_block: string
  block_number: string
  block_hash: string
}
export interface RawBalance {
  owner: string
  balance: string
  block_number: string
  block_hash: string
}
export interface RawLock {
  fill_id: string
  order_id: string
  payer: string
  recipient: string
  amount_out: string
  hashlock: string
  expiry: string
  state: string
  refused: boolean | null
  secret: string | null
  created_block: string
  block_number: string
  block_hash: string
}
export interface RawPayment {
  fill_id: string
  payer: string
  payee: string
  amount_in: string
  hashlock: string
  expiry: string
  state: string
  secret: string | null
  created_block: string
  block_number: string
  block_hash: string
}
export interface RawLegacy {
  contract: string
  offer_id: string
  owner: string
  amount: string
  refund_at: string
  reclaimed: boolean
  created_block: string
  block_number: string
  block_hash: string
}

export const fillState = (
  state: IndexState,
  orders: ReadonlyArray<RawOrder>,
  balances: ReadonlyArray<RawBalance>,
  locks: ReadonlyArray<RawLock>,
  payments: ReadonlyArray<RawPayment>,
  legacy: ReadonlyArray<RawLegacy>,
) => {
  for (const r of orders) {
    state.orders.set(r.order_id, {
      orderId: r.order_id as Hex,
      owner: r.owner as Address,
      operator: r.operator as Address,
      quoteSigner: r.quote_signer as Address,
      available: BigInt(r.available),
      locked: BigInt(r.locked),
      createdBlock: BigInt(r.created_block),
      blockNumber: BigInt(r.block_number),
      blockHash: r.block_hash as Hex,
    })
  }
  for (const r of balances) {
    state.balances.set(r.owner, {
      owner: r.owner as Address,
      balance: BigInt(r.balance),
      blockNumber: BigInt(r.block_number),
      blockHash: r.block_hash as Hex,
    })
  }
  for (const r of locks) {
    state.locks.set(r.fill_id, {
      fillId: r.fill_id as Hex,
      orderId: r.order_id as Hex,
      payer: r.payer as Address,
      recipient: r.recipient as Address,
      amountOut: BigInt(r.amount_out),
      hashlock: r.hashlock as Hex,
      expiry: BigInt(r.expiry),
      state: r.state as "locked",
      refused: r.refused,
      secret: r.secret as Hex | null,
      createdBlock: BigInt(r.created_block),
      blockNumber: BigInt(r.block_number),
      blockHash: r.block_hash as Hex,
    })
  }
  for (const r of payments) {
    state.payments.set(r.fill_id, {
      fillId: r.fill_id as Hex,
      payer: r.payer as Address,
      payee: r.payee as Address,
      amountIn: BigInt(r.amount_in),
      hashlock: r.hashlock as Hex,
      expiry: BigInt(r.expiry),
      state: r.state as "held",
      secret: r.secret as Hex | null,
      createdBlock: BigInt(r.created_block),
      blockNumber: BigInt(r.block_number),
      blockHash: r.block_hash as Hex,
    })
  }
  for (const r of legacy) {
    state.legacy.set(`${r.contract}:${r.offer_id}`, {
      contract: r.contract as Address,
      offerId: BigInt(r.offer_id),
      owner: r.owner as Address,
      amount: BigInt(r.amount),
      refundAt: BigInt(r.refund_at),
      reclaimed: r.reclaimed,
      createdBlock: BigInt(r.created_block),
      blockNumber: BigInt(r.block_number),
      blockHash: r.block_hash as Hex,
    })
  }
  return state
}

export const ORDER_COLS = `order_id, owner, operator, quote_signer, available::text, locked::text, created_block::text,
  block_number::text, block_hash`
export const BALANCE_COLS = `owner, balance::text, block_number::text, block_hash`
export const LOCK_COLS = `fill_id, order_id, payer, recipient, amount_out::text, hashlock, expiry::text, state, refused,
  secret, created_block::text, block_number::text, block_hash`
export const PAYMENT_COLS = `fill_id, payer, payee, amount_in::text, hashlock, expiry::text, state, secret,
  created_block::text, block_number::text, block_hash`
export const LEGACY_COLS = `contract, offer_id::text, owner, amount::text, refund_at::text, reclaimed, created_block::text,
  block_number::text, block_hash`
