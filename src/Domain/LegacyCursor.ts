/**
 * The `next_cursor` of `GET /v1/escrow/legacy`: an opaque, tamper-evident scan position.
 *
 * A position names the retired deployment being scanned by (chain id, contract address), not by its index in
 * the configuration, and the next block to read from it. It is bound to the master it was issued to by an
 * HMAC-SHA256 (truncated to 128 bits) under a key derived (HKDF) from the operator key: a cursor edited by hand,
 * made up, or taken from another account is refused (400) rather than interpreted. At most 256 characters.
 */
import { createHmac, hkdfSync, timingSafeEqual } from "node:crypto"
import { Either } from "effect"

import { LEGACY_CURSOR_MAX } from "./CursorLimits.ts"

export interface LegacyPosition {
  readonly chainId: number
  /** Lowercase contract address. */
  readonly escrow: string
  /** The next block to scan. */
  readonly nextBlock: bigint
}

const MAC_BYTES = 16
const BODY = /^v1\.([1-9][0-9]{0,15})\.(0x[0-9a-f]{40})\.(0|[1-9][0-9]{0,19})$/

/** A 32-byte key for the cursors, derived from the operator key (or any service secret). */
export const legacyCursorKey = (secret: Uint8Array): Buffer =>
  Buffer.from(hkdfSync("sha256", secret, "cross-venue-settlement", "escrow/legacy-cursor/v1", 32))

const mac = (key: Buffer, master: string, body: string) =>
  createHmac("sha256", key).update(`escrow/legacy\n${master.toLowerCase()}\n${body}`).digest().subarray(0, MAC_BYTES)

export const encodeLegacyCursor = (key: Buffer, master: string, p: LegacyPosition): string => {
  const body = `v1.${p.chainId}.${p.escrow.toLowerCase()}.${p.nextBlock.toString()}`
  return `${Buffer.from(body).toString("base64url")}.${mac(key, master, body).toString("base64url")}`
}

const NOT_OURS = "cursor is not a next_cursor this route issued to this account"

export const decodeLegacyCursor = (
  key: Buffer,
  master: string,
  cursor: string,
): Either.Either<LegacyPosition, string> => {
  if (cursor.length === 0 || cursor.length > LEGACY_CURSOR_MAX) return Either.left(NOT_OURS)
  const parts = cursor.split(".")
  if (parts.length !== 2 || !/^[A-Za-z0-9_-]+$/.test(parts[0]!) || !/^[A-Za-z0-9_-]+$/.test(parts[1]!)) {
    return Either.left(NOT_OURS)
  }
  const body = Buffer.from(parts[0]!, "base64url").toString("utf8")
  const given = Buffer.from(parts[1]!, "base64url")
  const expected = mac(key, master, body)
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return Either.left(NOT_OURS)
  const m = BODY.exec(body)
  if (m === null) return Either.left(NOT_OURS)
  return Either.right({ chainId: Number(m[1]), escrow: m[2]!, nextBlock: BigInt(m[3]!) })
}
