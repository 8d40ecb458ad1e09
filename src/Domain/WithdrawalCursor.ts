/**
 * The `next_cursor` of `GET /v1/withdrawals/history`: an opaque, tamper-evident keyset position.
 *
 * A cursor names the last row of a page by its immutable sort key (creation time in microseconds, id), so rows
 * changing state between pages never move, and none is lost or repeated. It is bound to the master it was issued
 * to by an HMAC-SHA256 (truncated to 128 bits) under a key derived from the service secret: a cursor edited by
 * hand, or taken from another account, is refused rather than interpreted.
 */
import { createHmac, hkdfSync, timingSafeEqual } from "node:crypto"
import { Either } from "effect"
import { HISTORY_CURSOR_MAX } from "./Withdrawal.ts"

export interface HistoryPosition {
  /** `created_at` in microseconds since the Unix epoch (PostgreSQL precision). */
  readonly createdMicros: bigint
  readonly id: string
}

/** Before every withdrawal (history runs newest first, so nothing is older): an empty history's cursor. */
export const HISTORY_START: HistoryPosition = { createdMicros: 0n, id: "00000000-0000-0000-0000-000000000000" }

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/
const MAC_BYTES = 16

/** A 32-byte key for the cursors, derived (HKDF-SHA256) from the service secret. */
export const historyCursorKey = (secret: Uint8Array): Buffer =>
  Buffer.from(hkdfSync("sha256", secret, "cross-venue-settlement", "withdrawals/history-cursor/v1", 32))

const mac = (key: Buffer, master: string, body: string) =>
  createHmac("sha256", key)
    .update(`withdrawals/history\n${master.toLowerCase()}\n${body}`)
    .digest()
    .subarray(0, MAC_BYTES)

export const encodeHistoryCursor = (key: Buffer, master: string, p: HistoryPosition): string => {
  const body = `${p.createdMicros.toString()}.${p.id}`
  return `${Buffer.from(body).toString("base64url")}.${mac(key, master, body).toString("base64url")}`
}

export const decodeHistoryCursor = (
  key: Buffer,
  master: string,
  cursor: string,
): Either.Either<HistoryPosition, string> => {
  if (cursor.length === 0 || cursor.length > HISTORY_CURSOR_MAX)
    return Either.left("after is not a cursor of this route")
  const parts = cursor.split(".")
  if (parts.length !== 2 || !/^[A-Za-z0-9_-]+$/.test(parts[0]!) || !/^[A-Za-z0-9_-]+$/.test(parts[1]!)) {
    return Either.left("after is not a cursor of this route")
  }
  const bodyBytes = Buffer.from(parts[0]!, "base64url")
  const given = Buffer.from(parts[1]!, "base64url")
  // Only the canonical spelling: an edit in a final character's unused bits must not pass as the same cursor.
  if (bodyBytes.toString("base64url") !== parts[0] || given.toString("base64url") !== parts[1]) {
    return Either.left("after is not a cursor of this route")
  }
  const body = bodyBytes.toString("utf8")
  const expected = mac(key, master, body)
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) {
    return Either.left("after is not a cursor issued to this account by this route")
  }
  const m = /^(0|[1-9][0-9]{0,17})\.(.+)$/.exec(body)
  if (m === null || !UUID.test(m[2]!)) return Either.left("after is not a cursor of this route")
  return Either.right({ createdMicros: BigInt(m[1]!), id: m[2]! })
}
