/**
 * The withdrawal history cursor (opaque, bound to its master, tamper-evident, bounded) and the sealed per-account
 * agent keys (AES-256-GCM under a key derived from the configured secret, bound to venue, account and agent).
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Either, Layer, Redacted } from "effect"
import fc from "fast-check"
import { privateKeyToAddress } from "viem/accounts"
import { agentKeyring, generateAgentKey, openAgentKey } from "../../src/Accounts/VenueAgents.ts"
import { canMove, WITHDRAWAL_STATES } from "../../src/Domain/Withdrawal.ts"
import { decodeHistoryCursor, encodeHistoryCursor, historyCursorKey } from "../../src/Domain/WithdrawalCursor.ts"
import { SecureRandom } from "../../src/SecureRandom.ts"
import { testDeployment } from "../support/TestConfig.ts"

const key = historyCursorKey(Buffer.alloc(32, 7))
const M = "0x1111111111111111111111111111111111111111"
const uuid = fc.uuid().map((u) => u.toLowerCase())

describe("history cursor", () => {
  it("round-trips any position, stays under 512 characters, and is refused for another master or key", () =>
    fc.assert(
      fc.property(fc.bigInt({ min: 0n, max: 10n ** 17n }), uuid, (createdMicros, id) => {
        const cursor = encodeHistoryCursor(key, M, { createdMicros, id })
        expect(cursor.length).toBeLessThanOrEqual(512)
        expect(decodeHistoryCursor(key, M, cursor)).toEqual(Either.right({ createdMicros, id }))
        expect(Either.isLeft(decodeHistoryCursor(key, "0x2222222222222222222222222222222222222222", cursor))).toBe(true)
        expect(Either.isLeft(decodeHistoryCursor(historyCursorKey(Buffer.alloc(32, 8)), M, cursor))).toBe(true)
      }),
    ))

  it("refuses every single-character edit and garbage", () =>
    fc.assert(
      fc.property(uuid, fc.nat(), fc.string({ minLength: 1, maxLength: 1 }), (id, at, ch) => {
        const cursor = encodeHistoryCursor(key, M, { createdMicros: 1_700_000_000_000_000n, id })
        const i = at % cursor.length
        fc.pre(cursor[i] !== ch)
        const edited = `${cursor.slice(0, i)}${ch}${cursor.slice(i + 1)}`
        expect(Either.isLeft(decodeHistoryCursor(key, M, edited))).toBe(true)
      }),
    ))
})

describe("sealed agent keys", () => {
  const random = Layer.succeed(SecureRandom, {
    bytes: (n) => Effect.sync(() => Uint8Array.from({ length: n }, (_, i) => (i * 37 + 11) % 256)),
  })
  const config = testDeployment()
  const other = testDeployment({ agent_key_secret: `0x${"ab".repeat(32)}` })

  it.effect("opens only with the same secret, venue, account and agent; the key matches the agent", () =>
    Effect.gen(function* () {
      const ring = agentKeyring(config)
      const sealed = yield* generateAgentKey(ring, "aster", M)
      expect(sealed.ciphertext.length).toBe(61)
      const key = openAgentKey(ring, "aster", M, sealed.agent, sealed.ciphertext)
      expect(key).toBeDefined()
      expect(privateKeyToAddress(Redacted.value(key!)).toLowerCase()).toBe(sealed.agent)
      expect(String(key)).not.toContain(Redacted.value(key!).slice(2))
      expect(openAgentKey(agentKeyring(other), "aster", M, sealed.agent, sealed.ciphertext)).toBeUndefined()
      expect(openAgentKey(ring, "hyperliquid", M, sealed.agent, sealed.ciphertext)).toBeUndefined()
      expect(openAgentKey(ring, "aster", `0x${"22".repeat(20)}`, sealed.agent, sealed.ciphertext)).toBeUndefined()
      const flipped = Buffer.from(sealed.ciphertext)
      flipped[20] = flipped[20]! ^ 1
      expect(openAgentKey(ring, "aster", M, sealed.agent, flipped)).toBeUndefined()
    }).pipe(Effect.provide(random)),
  )
})

describe("withdrawal states", () => {
  it("relayed and failed are final; nothing returns to queued", () => {
    for (const s of WITHDRAWAL_STATES) {
      expect(canMove(s, "queued")).toBe(false)
      if (s === "relayed" || s === "failed") for (const t of WITHDRAWAL_STATES) expect(canMove(s, t)).toBe(false)
    }
    expect(canMove("unknown", "relayed") && canMove("unknown", "failed") && canMove("submitting", "unknown")).toBe(true)
  })
})
