/**
 * The v2 index tables' rows as PostgreSQL returns them (amounts, blocks and indexes as text), as a page's
 * touched-rows read loads them into IndexStateV2 (ChainIndexV2.ts).
 */

export interface RawOrder {
  order_key: string
  owner: string
  order_id: string
  operator: string
  quote_signer: string
  available: string
  locked: string
  close_requested: boolean
  close_dex: string | null
  close_to_margin: boolean | null
  created_block: string
  block_number: string
  block_hash: string
}

export interface RawLock {
  fill_digest: string
  state: string
  order_key: string
  owner: string
  order_id: string
  sequence: string
  payer: string
  recipient: string
  amount_in: string
  amount_out: string
  dex: string
  to_margin: boolean
  hashlock: string
  hashlock_index: string
  expiry: string
  taker_expiry: string
  pay_key: string
  pay_by: string
  quote_set_digest: string | null
  quote_index: string | null
  refused: boolean | null
  to_owner: boolean | null
  secret: string | null
  fill: Record<string, unknown> | null
  created_block: string
  tx_hash: string
  block_number: string
  block_hash: string
}

export interface RawPayment {
  fill_digest: string
  state: string
  payer: string
  payee: string
  amount_in: string
  hashlock: string
  expiry: string
  pay_key: string
  pay_by: string
  pay_take_digest: string | null
  secret: string | null
  fill: Record<string, unknown> | null
  created_block: string
  tx_hash: string
  block_number: string
  block_hash: string
}
