/**
 * Parsers of typed-data values in wire form (src/Domain/WireTypedData.ts: bigints as decimal strings, addresses in
 * any case). Each throws a TypeError naming what it expected; nothing is coerced silently.
 */
import { type Address, getAddress, type Hex } from "viem"

/** An unsigned integer: a bigint, a safe JSON number or a decimal string (at most 78 digits). */
export const wireBig = (v: unknown): bigint => {
  if (typeof v === "bigint" && v >= 0n) return v
  if (typeof v === "number" && Number.isSafeInteger(v) && v >= 0) return BigInt(v)
  if (typeof v === "string" && /^[0-9]{1,78}$/.test(v)) return BigInt(v)
  throw new TypeError(`not an unsigned integer: ${String(v)}`)
}

/** An unsigned integer of at most `bits` bits (uint32 → 32, uint64 → 64, uint256 → 256). */
export const wireUint = (v: unknown, bits: number): bigint => {
  const n = wireBig(v)
  if (n >> BigInt(bits) !== 0n) throw new TypeError(`not a uint${bits}: ${String(v)}`)
  return n
}

/** Hex of any length, lowercased. */
export const wireHex = (v: unknown): Hex => {
  if (typeof v === "string" && /^0x[0-9a-fA-F]*$/.test(v)) return v.toLowerCase() as Hex
  throw new TypeError(`not hex: ${String(v)}`)
}

export const wireBytes32 = (v: unknown): Hex => {
  const h = wireHex(v)
  if (h.length !== 66) throw new TypeError(`not a bytes32: ${String(v)}`)
  return h
}

/** A 20-byte address, returned checksummed. */
export const wireAddress = (v: unknown): Address => {
  const h = typeof v === "string" && /^0x[0-9a-fA-F]{40}$/.test(v) ? v : undefined
  if (h === undefined) throw new TypeError(`not an address: ${String(v)}`)
  return getAddress(h)
}

export const wireBool = (v: unknown): boolean => {
  if (typeof v !== "boolean") throw new TypeError(`not a boolean: ${String(v)}`)
  return v
}
