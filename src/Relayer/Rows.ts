import type { Hex } from "viem"

/** The relayer's rows (migration 0005) as the service reads them: requests and their signed attempts. */

export type TxStatus = "queued" | "pending" | "included" | "final" | "reverted" | "replaced"
export const TERMINAL_STATUSES: ReadonlyArray<TxStatus> = ["final", "reverted", "replaced"]

export interface RequestRow {
  readonly id: bigint
  readonly idempotencyKey: string
  readonly venue: string
  readonly chainId: number
  readonly signer: string
  readonly target: string
  readonly functionName: string
  readonly calldata: Hex
  readonly value: bigint
  readonly master: string | null
  readonly status: TxStatus
  readonly simulated: boolean
  readonly nonce: bigint | null
  readonly gasLimit: bigint | null
  readonly txHash: Hex | null
  readonly blockNumber: bigint | null
  readonly blockHash: Hex | null
  readonly gasUsed: bigint | null
  readonly revertReason: string | null
  readonly error: string
  /** The submitter's W3C traceparent when traces are exported (migration 0024), else null. */
  readonly traceParent: string | null
}

export interface AttemptRow {
  readonly txHash: Hex
  readonly requestId: bigint
  readonly attempt: number
  readonly nonce: bigint
  readonly rawTx: Hex
  readonly maxFeePerGas: bigint
  readonly maxPriorityFeePerGas: bigint
  readonly gasLimit: bigint
  readonly sentBlock: bigint | null
  readonly broadcasts: number
}

export interface RawRequest {
  id: string
  idempotency_key: string
  venue: string
  chain_id: string
  signer: string
  target: string
  function_name: string
  calldata: string
  value: string
  master: string | null
  status: TxStatus
  simulated: boolean
  nonce: string | null
  gas_limit: string | null
  tx_hash: string | null
  block_number: string | null
  block_hash: string | null
  gas_used: string | null
  revert_reason: string | null
  error: string
  trace_parent: string | null
}

export interface RawAttempt {
  tx_hash: string
  request_id: string
  attempt: number
  nonce: string
  raw_tx: string
  max_fee_per_gas: string
  max_priority_fee_per_gas: string
  gas_limit: string
  sent_block: string | null
  broadcasts: number
}

export const REQUEST_COLS = `id::text, idempotency_key, venue, chain_id::text, signer, target, function_name, calldata,
  value::text, master, status, simulated, nonce::text, gas_limit::text, tx_hash, block_number::text, block_hash,
  gas_used::text, revert_reason, error, trace_parent`
export const ATTEMPT_COLS = `tx_hash, request_id::text, attempt, nonce::text, raw_tx, max_fee_per_gas::text,
  max_priority_fee_per_gas::text, gas_limit::text, sent_block::text, broadcasts`

export const big = (s: string | null) => (s === null ? null : BigInt(s))

export const toRequest = (r: RawRequest): RequestRow => ({
  id: BigInt(r.id),
  idempotencyKey: r.idempotency_key,
  venue: r.venue,
  chainId: Number(r.chain_id),
  signer: r.signer,
  target: r.target,
  functionName: r.function_name,
  calldata: r.calldata as Hex,
  value: BigInt(r.value),
  master: r.master,
  status: r.status,
  simulated: r.simulated,
  nonce: big(r.nonce),
  gasLimit: big(r.gas_limit),
  txHash: r.tx_hash as Hex | null,
  blockNumber: big(r.block_number),
  blockHash: r.block_hash as Hex | null,
  gasUsed: big(r.gas_used),
  revertReason: r.revert_reason,
  error: r.error,
  traceParent: r.trace_parent ?? null,
})

export const toAttempt = (r: RawAttempt): AttemptRow => ({
  txHash: r.tx_hash as Hex,
  requestId: BigInt(r.request_id),
  attempt: r.attempt,
  nonce: BigInt(r.nonce),
  rawTx: r.raw_tx as Hex,
  maxFeePerGas: BigInt(r.max_fee_per_gas),
  maxPriorityFeePerGas: BigInt(r.max_priority_fee_per_gas),
  gasLimit: BigInt(r.gas_limit),
  sentBlock: big(r.sent_block),
  broadcasts: r.broadcasts,
})
