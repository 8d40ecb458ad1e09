/**
 * Aster nonce rules (research/venues.md §1.3; asterdex/api-docs futures v3 "V3 Nonce Mechanism",
 * aster-api-website deposit&withdrawal):
 *
 * - V3 requests and agent approvals carry `nonce` = current time in **microseconds**, accepted only within
 *   10 s of the server clock, never twice; the server keeps the 100 most recent per user and rejects a nonce
 *   below their minimum once the list is full.
 * - The EVM withdrawal signs its own `nonce` (sent as `userNonce`) = milliseconds × 1000, which "may differ by
 *   up to 1 hour" from the request nonce.
 * - `expired` of an agent is in **milliseconds**.
 *
 * The 10 s window is what makes the agent approval "fresh": it must be signed and submitted within seconds.
 */
import { Clock, Effect, Ref } from "effect"

export const ASTER_NONCE_WINDOW_MICROS = 10_000_000
export const ASTER_USER_NONCE_SLACK_MS = 3_600_000
export const DAY_MS = 86_400_000

export const microsFromMillis = (ms: number): number => ms * 1000

/** Agent expiry (ms) `days` after the approval's nonce (µs). */
export const agentExpiryMs = (nowMicros: number, days: number): number => Math.floor(nowMicros / 1000) + days * DAY_MS

/** The venue's freshness test for a request nonce. */
export const isFreshNonce = (nonceMicros: number, serverMicros: number, windowMicros = ASTER_NONCE_WINDOW_MICROS) =>
  Math.abs(nonceMicros - serverMicros) <= windowMicros

/**
 * The last instant (ms) a signed withdrawal can be accepted: its `userNonce` must be within an hour of a request
 * nonce, and that one within 10 s of the server clock.
 */
export const withdrawalReplayableUntilMs = (userNonceMicros: number): number =>
  Math.floor(userNonceMicros / 1000) + ASTER_USER_NONCE_SLACK_MS + ASTER_NONCE_WINDOW_MICROS / 1000

/**
 * A source of request nonces: the Clock in microseconds, forced strictly increasing so that two requests in the
 * same microsecond never collide (a duplicate is refused by the venue).
 */
export const makeMicrosNonceSource: Effect.Effect<Effect.Effect<number>> = Effect.map(Ref.make(0), (last) =>
  Effect.flatMap(Clock.currentTimeNanos, (nanos) =>
    Ref.modify(last, (previous) => {
      const next = Math.max(Number(nanos / 1000n), previous + 1)
      return [next, next] as const
    }),
  ),
)
