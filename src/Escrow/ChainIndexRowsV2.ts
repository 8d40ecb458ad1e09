import { SqlClient, type SqlError } from "@effect/sql"
import { Effect } from "effect"
import type { Address, Hex } from "viem"
import { emptyStateV2, type IndexStateV2, type touchedKeysV2 } from "../Chain/EscrowIndexV2.ts"

/**
 * The v2 index tables' rows as PostgreSQL returns them (amounts, blocks and indexes as text), and the reads that
 * load a page's touched rows into IndexStateV2 (ChainIndexV2.ts folds them).
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

type Keys = ReturnType<typeof touchedKeysV2>

/**
 * Loads exactly the rows a page touches, each table's in a read of its own and the reads side by side (outside a
 * transaction they need not share a connection). They are current while the cursor has not moved: see ingestV2Page.
 */
export const loadTouchedV2 = (venue: string, keys: Keys) =>
  Effect.gen(function* () {
    const state = emptyStateV2()
    const reads: Array<Effect.Effect<unknown, SqlError.SqlError, SqlClient.SqlClient>> = []
    if (keys.orders.size > 0) reads.push(loadOrders(venue, [...keys.orders], state))
    if (keys.balances.size > 0) reads.push(loadBalancesV2(venue, [...keys.balances], state))
    if (keys.locks.size > 0) reads.push(loadLocks(venue, [...keys.locks], state))
    if (keys.payments.size > 0) reads.push(loadPayments(venue, [...keys.payments], state))
    yield* Effect.all(reads, { concurrency: "unbounded", discard: true })
    return state
  })

const loadOrders = (venue: string, keys: ReadonlyArray<string>, state: IndexStateV2) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<RawOrder>`
      select order_key, owner, order_id, operator, quote_signer, available::text, locked::text, close_requested,
      close_dex::text, close_to_margin, created_block::text, block_number::text, block_hash
      from escrow_v2_orders where venue = ${venue} and order_key = any(${keys}::text[])`.pipe(
      Effect.tap((rows) => {
        for (const r of rows) {
          state.orders.set(r.order_key, {
            orderKey: r.order_key as Hex,
            owner: r.owner as Address,
            orderId: r.order_id as Hex,
            operator: r.operator as Address,
            quoteSigner: r.quote_signer as Address,
            available: BigInt(r.available),
            locked: BigInt(r.locked),
            closeRequested: r.close_requested,
            closeDex: r.close_dex === null ? null : Number(r.close_dex),
            closeToMargin: r.close_to_margin,
            createdBlock: BigInt(r.created_block),
            blockNumber: BigInt(r.block_number),
            blockHash: r.block_hash as Hex,
          })
        }
      }),
    ),
  )

/** The balances of `owners` into `state`. */
export const loadBalancesV2 = (venue: string, owners: ReadonlyArray<string>, state: IndexStateV2) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<{ owner: string; balance: string; block_number: string; block_hash: string }>`
      select owner, balance::text, block_number::text, block_hash from escrow_v2_balances
      where venue = ${venue} and owner = any(${owners}::text[])`.pipe(
      Effect.tap((rows) => {
        for (const r of rows) {
          state.balances.set(r.owner, {
            owner: r.owner as Address,
            balance: BigInt(r.balance),
            blockNumber: BigInt(r.block_number),
            blockHash: r.block_hash as Hex,
          })
        }
      }),
    ),
  )

const loadLocks = (venue: string, keys: ReadonlyArray<string>, state: IndexStateV2) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<RawLock>`
      select fill_digest, state, order_key, owner, order_id, sequence::text, payer, recipient, amount_in::text,
      amount_out::text, dex::text, to_margin, hashlock, hashlock_index::text, expiry::text, taker_expiry::text,
      pay_key, pay_by::text, quote_set_digest, quote_index::text, refused, to_owner, secret, fill,
      created_block::text, tx_hash, block_number::text, block_hash
      from escrow_v2_locks where venue = ${venue} and fill_digest = any(${keys}::text[])`.pipe(
      Effect.tap((rows) => {
        for (const r of rows) {
          state.locks.set(r.fill_digest, {
            fillDigest: r.fill_digest as Hex,
            state: r.state as "locked",
            orderKey: r.order_key as Hex,
            owner: r.owner as Address,
            orderId: r.order_id as Hex,
            sequence: BigInt(r.sequence),
            payer: r.payer as Address,
            recipient: r.recipient as Address,
            amountIn: BigInt(r.amount_in),
            amountOut: BigInt(r.amount_out),
            dex: Number(r.dex),
            toMargin: r.to_margin,
            hashlock: r.hashlock as Hex,
            hashlockIndex: Number(r.hashlock_index),
            expiry: BigInt(r.expiry),
            takerExpiry: BigInt(r.taker_expiry),
            payKey: r.pay_key as Address,
            payBy: BigInt(r.pay_by),
            quoteSetDigest: r.quote_set_digest as Hex | null,
            quoteIndex: r.quote_index === null ? null : BigInt(r.quote_index),
            refused: r.refused,
            toOwner: r.to_owner,
            secret: r.secret as Hex | null,
            fill: r.fill as Record<string, unknown> | null,
            createdBlock: BigInt(r.created_block),
            txHash: r.tx_hash as Hex,
            blockNumber: BigInt(r.block_number),
            blockHash: r.block_hash as Hex,
          })
        }
      }),
    ),
  )

const loadPayments = (venue: string, keys: ReadonlyArray<string>, state: IndexStateV2) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<RawPayment>`
      select fill_digest, state, payer, payee, amount_in::text, hashlock, expiry::text, pay_key, pay_by::text,
      pay_take_digest, secret, fill, created_block::text, tx_hash, block_number::text, block_hash
      from escrow_v2_payments where venue = ${venue} and fill_digest = any(${keys}::text[])`.pipe(
      Effect.tap((rows) => {
        for (const r of rows) {
          state.payments.set(r.fill_digest, {
            fillDigest: r.fill_digest as Hex,
            state: r.state as "held",
            payer: r.payer as Address,
            payee: r.payee as Address,
            amountIn: BigInt(r.amount_in),
            hashlock: r.hashlock as Hex,
            expiry: BigInt(r.expiry),
            payKey: r.pay_key as Address,
            payBy: BigInt(r.pay_by),
            payTakeDigest: r.pay_take_digest as Hex | null,
            secret: r.secret as Hex | null,
            fill: r.fill as Record<string, unknown> | null,
            createdBlock: BigInt(r.created_block),
            txHash: r.tx_hash as Hex,
            blockNumber: BigInt(r.block_number),
            blockHash: r.block_hash as Hex,
          })
        }
      }),
    ),
  )
