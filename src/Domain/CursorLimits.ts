/**
 * The spec's cursor and page limits, apart from the cursors' HMAC code (node:crypto) so that the contract and the
 * typed client built from it load in a browser.
 */

/** Spec: the escrow history's `after` and `next_cursor` are at most 256 characters. */
export const LEGACY_CURSOR_MAX = 256
/** Spec: `after` and `next_cursor` are at most 512 characters. */
export const TRADE_CURSOR_MAX = 512
/** Spec Limits: GET /v1/trades answers the last 50 trades of a pair. */
export const RECENT_TRADES = 50
export const TRADE_HISTORY_LIMIT_MAX = 500
export const TRADE_HISTORY_LIMIT_DEFAULT = 100
