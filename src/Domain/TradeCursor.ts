/**
 * The `next_cursor` of `GET /v1/trades/history`: an opaque keyset position bound to the filters it was issued for.
 *
 * A cursor names the last trade of a page by its immutable sort key (`settled_at` in microseconds, fill id): a
 * fill is settled once and never changes its key, so later pages neither repeat nor skip a trade that was settled
 * before the walk began. The body is base64url JSON `{t, id}`; an HMAC-SHA256 (truncated to 128 bits) over the
 * route, the filters (scope, the session's master for `mine`, the unordered pair) and the body binds it: a cursor
 * used with other filters, by another account, or edited by hand is refused (400) rather than interpreted.
 */
import { createHmac, hkdfSync, timingSafeEqual } from "node:crypto"
import { Either } from "effect"

import { TRADE_CURSOR_MAX } from "./CursorLimits.ts"

export interface TradePosition {
  /** `settled_at` in microseconds since the Unix epoch (PostgreSQL precision). */
  readonly settledMicros: bigint
  readonly id: string
}

/** What a page is filtered by; a cursor is valid only for the same filters. */
export interface TradeFilters {
  readonly scope: "all" | "mine"
  /** The session's master for `mine` (lowercase), null for `all`. */
  readonly master: string | null
  /** The pair, unordered (a→b and b→a are the same pair), or null for every pair. */
  readonly pair: readonly [string, string] | null
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/
const MICROS = /^(0|[1-9][0-9]{0,17})$/
const B64URL = /^[A-Za-z0-9_-]+$/
const MAC_BYTES = 16

/** A 32-byte key for the cursors, derived (HKDF-SHA256) from the service secret. */
export const tradeCursorKey = (secret: Uint8Array): Buffer =>
  Buffer.from(hkdfSync("sha256", secret, "cross-venue-settlement", "trades/history-cursor/v1", 32))

/** The filters in one canonical line (the pair sorted, so `a=x&b=y` and `a=y&b=x` share cursors). */
export const filtersKey = (f: TradeFilters): string => {
  const pair = f.pair === null ? "*" : [...f.pair].sort().join("|")
  return `${f.scope}\n${f.master === null ? "-" : f.master.toLowerCase()}\n${pair}`
}

const mac = (key: Buffer, filters: TradeFilters, body: string) =>
  createHmac("sha256", key)
    .update(`trades/history\n${filtersKey(filters)}\n${body}`)
    .digest()
    .subarray(0, MAC_BYTES)

export const encodeTradeCursor = (key: Buffer, filters: TradeFilters, p: TradePosition): string => {
  const body = JSON.stringify({ t: p.settledMicros.toString(), id: p.id })
  return `${Buffer.from(body).toString("base64url")}.${mac(key, filters, body).toString("base64url")}`
}

const NOT_A_CURSOR = "after is not a cursor of this route"

export const decodeTradeCursor = (
  key: Buffer,
  filters: TradeFilters,
  cursor: string,
): Either.Either<TradePosition, string> => {
  if (cursor.length === 0 || cursor.length > TRADE_CURSOR_MAX) return Either.left(NOT_A_CURSOR)
  const parts = cursor.split(".")
  if (parts.length !== 2 || !B64URL.test(parts[0]!) || !B64URL.test(parts[1]!)) return Either.left(NOT_A_CURSOR)
  const bodyBytes = Buffer.from(parts[0]!, "base64url")
  const given = Buffer.from(parts[1]!, "base64url")
  // Only the canonical spelling: an edit in a final character's unused bits must not pass as the same cursor.
  if (bodyBytes.toString("base64url") !== parts[0] || given.toString("base64url") !== parts[1]) {
    return Either.left(NOT_A_CURSOR)
  }
  const body = bodyBytes.toString("utf8")
  const expected = mac(key, filters, body)
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) {
    return Either.left("after was issued for other filters (scope, account, a, b) or was altered")
  }
  let parsed: unknown
  try {
    parsed = JSON.parse(body)
  } catch {
    return Either.left(NOT_A_CURSOR)
  }
  const { t, id } = (parsed ?? {}) as { t?: unknown; id?: unknown }
  if (typeof t !== "string" || typeof id !== "string" || !MICROS.test(t) || !UUID.test(id)) {
    return Either.left(NOT_A_CURSOR)
  }
  return Either.right({ settledMicros: BigInt(t), id })
}
