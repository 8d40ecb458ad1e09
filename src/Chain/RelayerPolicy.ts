import {
  type Abi,
  type Address,
  BaseError,
  decodeErrorResult,
  type Hex,
  RawContractError,
  toFunctionSelector,
  toFunctionSignature,
} from "viem"
import type { VenueConfig } from "../Config.ts"
import { legacyEscrowAbi, mockUSDCAbi, settlementEscrowAbi, settlementEscrowV2Abi } from "./artifacts/index.ts"

/**
 * The relayer's decisions as pure functions (unit-tested): what may be relayed, what fees an
 * attempt and a replacement pay, how an in-flight transaction is classified from queries (receipt,
 * nonce counts, mempool), and how a revert is decoded.
 */

/** target (lowercase) → selector → function signature */
export type Allowlist = ReadonlyMap<string, ReadonlyMap<Hex, string>>

const mutating = (abi: Abi) =>
  abi.filter(
    (x): x is Extract<Abi[number], { type: "function" }> =>
      x.type === "function" && x.stateMutability !== "view" && x.stateMutability !== "pure",
  )

/** The escrows' state-changing functions (v1, and v2 when configured), plus the config's `relayer.allow` entries. */
export const compileAllowlist = (venue: VenueConfig): Allowlist => {
  const out = new Map<string, Map<Hex, string>>()
  const add = (contract: string, signature: string) => {
    const key = contract.toLowerCase()
    const m = out.get(key) ?? new Map<Hex, string>()
    m.set(toFunctionSelector(signature), signature)
    out.set(key, m)
  }
  for (const f of mutating(settlementEscrowAbi as Abi)) add(venue.escrow, toFunctionSignature(f))
  if (venue.escrow_v2 !== undefined) {
    for (const f of mutating(settlementEscrowV2Abi as Abi)) add(venue.escrow_v2.address, toFunctionSignature(f))
  }
  for (const entry of venue.relayer.allow) for (const f of entry.functions) add(entry.contract, f)
  return out
}

/** The allowed function's signature, or undefined when (target, selector) is not allowlisted. */
export const allowedFunction = (allow: Allowlist, to: Address, data: Hex): string | undefined =>
  data.length < 10 ? undefined : allow.get(to.toLowerCase())?.get(data.slice(0, 10).toLowerCase() as Hex)

export interface Fees {
  readonly maxFeePerGas: bigint
  readonly maxPriorityFeePerGas: bigint
}

/** First attempt: room for the base fee to double, plus the tip; at most `cap`. */
export const initialFees = (baseFee: bigint, priority: bigint, cap: bigint | undefined): Fees => {
  const maxFee = baseFee * 2n + priority
  const capped = cap !== undefined && maxFee > cap ? cap : maxFee
  return { maxFeePerGas: capped, maxPriorityFeePerGas: priority > capped ? capped : priority }
}

const bumped = (x: bigint, permille: bigint) => (x * (1000n + permille) + 999n) / 1000n + 1n

/**
 * A replacement's fees: both caps raised by at least `bumpPercent` (and one wei), or to the market
 * when that is higher. Undefined when the cap forbids a sufficient bump (then the relayer keeps
 * rebroadcasting the last attempt).
 */
export const replacementFees = (
  previous: Fees,
  market: Fees,
  bumpPercent: number,
  cap: bigint | undefined,
): Fees | undefined => {
  const permille = BigInt(Math.ceil(bumpPercent * 10))
  const minFee = bumped(previous.maxFeePerGas, permille)
  const minTip = bumped(previous.maxPriorityFeePerGas, permille)
  // Wei are bigints: Math.max/min take numbers only, hence the comparisons (biome's useMathMinMax is off here).
  // biome-ignore lint/complexity/useMathMinMax: bigint
  const maxFee = market.maxFeePerGas > minFee ? market.maxFeePerGas : minFee
  // biome-ignore lint/complexity/useMathMinMax: bigint
  const tip = market.maxPriorityFeePerGas > minTip ? market.maxPriorityFeePerGas : minTip
  if (cap !== undefined && minFee > cap) return undefined
  const fee = cap !== undefined && maxFee > cap ? cap : maxFee
  // biome-ignore lint/complexity/useMathMinMax: bigint
  return { maxFeePerGas: fee, maxPriorityFeePerGas: tip > fee ? fee : tip }
}

export interface PendingFacts {
  readonly nonce: bigint
  /** `eth_getTransactionCount(signer, latest)` */
  readonly latestCount: bigint
  /** `eth_getTransactionCount(signer, finalized)` */
  readonly finalizedCount: bigint
  /** A receipt was found for one of the request's attempts. */
  readonly receiptFound: boolean
  /** The node knows the last attempt (mempool or chain). */
  readonly lastAttemptKnown: boolean
  /** Broadcasts of the last attempt so far. */
  readonly broadcasts: number
  readonly head: bigint
  /** Head when the last attempt was signed. */
  readonly sentBlock: bigint
  /**
   * Head of the first pass that saw this nonce as the next one the chain needs (`head` when first seen).
   * Blocks mined while a lower nonce was still open say nothing about this one's fees.
   */
  readonly headOfLineSince: bigint
  readonly bumpAfterBlocks: number
}

/** Only the lowest open nonce is re-priced: the ones above it wait on it, not on their fees. */
const headOfLine = (f: PendingFacts) => f.nonce === f.latestCount

export type PendingDecision =
  | "included" // a receipt of one of our attempts: record it
  | "replaced" // our nonce is consumed at the finalized head by none of our attempts
  | "wait" // consumed but no receipt seen yet (node lag, or not final): look again next pass
  | "rebroadcast" // nonce open and the node has lost (or never got) our last attempt
  | "bump" // lowest open nonce for bumpAfterBlocks blocks since signed: replace with higher fees
  | "idle" // nonce open, attempt known, not yet time to bump

/** Classifies a pending request by query results, never by an error text. */
export const decidePending = (f: PendingFacts): PendingDecision => {
  if (f.receiptFound) return "included"
  if (f.latestCount > f.nonce) return f.finalizedCount > f.nonce ? "replaced" : "wait"
  // biome-ignore lint/complexity/useMathMinMax: bigint
  const waitingSince = f.sentBlock > f.headOfLineSince ? f.sentBlock : f.headOfLineSince
  if (headOfLine(f) && f.head - waitingSince >= BigInt(f.bumpAfterBlocks)) return "bump"
  if (!f.lastAttemptKnown || f.broadcasts === 0) return "rebroadcast"
  return "idle"
}

const revertAbis: ReadonlyArray<Abi> = [settlementEscrowAbi as Abi, mockUSDCAbi as Abi, legacyEscrowAbi as Abi]

const argText = (v: unknown): string =>
  typeof v === "bigint" ? v.toString() : Array.isArray(v) ? `[${v.map(argText).join(",")}]` : String(v)

/** `ErrorName(arg, …)` from revert data, with our contracts' errors, Error(string) and Panic(uint). */
export const decodeRevertData = (data: Hex | undefined): string => {
  if (data === undefined || data === "0x") return "reverted without reason"
  for (const abi of revertAbis) {
    try {
      const r = decodeErrorResult({ abi, data })
      if (r.errorName === "Error") return String(r.args?.[0] ?? "")
      return `${r.errorName}(${(r.args ?? []).map(argText).join(", ")})`
    } catch {
      // try the next ABI
    }
  }
  return `reverted with data ${data.slice(0, 74)}`
}

/** The revert data carried by a viem call/estimate error, if it is a revert at all. */
export const revertDataOf = (error: unknown): { readonly reverted: boolean; readonly data: Hex | undefined } => {
  if (!(error instanceof BaseError)) return { reverted: false, data: undefined }
  const raw = error.walk((e) => e instanceof RawContractError)
  if (raw instanceof RawContractError)
    return { reverted: true, data: typeof raw.data === "string" ? raw.data : undefined }
  // JSON-RPC code 3 = execution reverted (data may be absent).
  const withCode = error.walk(
    (e) => typeof (e as { code?: unknown }).code === "number" && (e as { code: number }).code === 3,
  )
  if (withCode !== null) {
    const data = (withCode as { data?: unknown }).data
    return { reverted: true, data: typeof data === "string" ? (data as Hex) : undefined }
  }
  return { reverted: false, data: undefined }
}
