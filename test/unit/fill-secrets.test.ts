/**
 * Fill secrets at rest (AES-256-GCM under a key derived from the configured secret, bound to the fill key and
 * hashlock) and the fill id ↔ bytes32 mapping.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Redacted } from "effect"
import fc from "fast-check"
import { keccak256 } from "viem"
import { agentKeyring } from "../../src/Accounts/VenueAgents.ts"
import { fillIdOf, fillKeyOf } from "../../src/Domain/FillId.ts"
import { SecureRandom } from "../../src/SecureRandom.ts"
import {
  fillSecretKeyring,
  generateFillSecret,
  openFillSecret,
  openStoredFillSecret,
  sealFillSecret,
} from "../../src/Settlement/FillSecrets.ts"
import { testAppConfig, testDeployment } from "../support/TestConfig.ts"

const uuid = fc.uuid().map((u) => u.toLowerCase())

describe("fill id", () => {
  it("maps a UUID to bytes32 (16 zero bytes, then the UUID's bytes) and back", () =>
    fc.assert(
      fc.property(uuid, (id) => {
        const key = fillKeyOf(id)
        expect(key).toMatch(/^0x0{32}[0-9a-f]{32}$/)
        expect(key.slice(34)).toBe(id.replace(/-/g, ""))
        expect(fillIdOf(key)).toBe(id)
        expect(fillIdOf(key.toUpperCase().replace("0X", "0x"))).toBe(id)
        expect(fillKeyOf(id.toUpperCase())).toBe(key)
      }),
    ))

  it("refuses what is not a UUID, and a bytes32 whose upper half is not zero", () => {
    expect(() => fillKeyOf("not-a-uuid")).toThrow(RangeError)
    expect(() => fillKeyOf("7d4f2a3e1b2c4d5e8f90123456789abc")).toThrow(RangeError)
    expect(fillIdOf(`0x${"11".repeat(32)}`)).toBeUndefined()
    expect(fillIdOf(`0x${"00".repeat(31)}`)).toBeUndefined()
  })
})

describe("fill secrets", () => {
  const config = testDeployment()
  const other = testDeployment({ agent_key_secret: `0x${"ab".repeat(32)}` })
  const key = fillKeyOf("7d4f2a3e-1b2c-4d5e-8f90-123456789abc")
  const otherKey = fillKeyOf("7d4f2a3e-1b2c-4d5e-8f90-123456789abd")

  it.effect("a generated secret opens only under its keyring, fill key and hashlock, and hashes to the hashlock", () =>
    Effect.gen(function* () {
      const ring = fillSecretKeyring(config)
      const sealed = yield* generateFillSecret(ring, key)
      expect(sealed.ciphertext.length).toBe(1 + 12 + 32 + 16)
      const secret = openFillSecret(ring, key, sealed.hashlock, sealed.ciphertext)
      expect(secret).toBeDefined()
      expect(keccak256(Redacted.value(secret!))).toBe(sealed.hashlock)
      // Never the plaintext in the blob, never printable through Redacted.
      expect(sealed.ciphertext.toString("hex")).not.toContain(Redacted.value(secret!).slice(2))
      expect(String(secret)).not.toContain(Redacted.value(secret!).slice(2))
      expect(openFillSecret(fillSecretKeyring(other), key, sealed.hashlock, sealed.ciphertext)).toBeUndefined()
      expect(openFillSecret(ring, otherKey, sealed.hashlock, sealed.ciphertext)).toBeUndefined()
      expect(openFillSecret(ring, key, keccak256("0x01"), sealed.ciphertext)).toBeUndefined()
      const tampered = Buffer.from(sealed.ciphertext)
      tampered[20] = tampered[20]! ^ 1
      expect(openFillSecret(ring, key, sealed.hashlock, tampered)).toBeUndefined()
      expect(openFillSecret(ring, key, sealed.hashlock, sealed.ciphertext.subarray(1))).toBeUndefined()
      // Two fills never share a secret.
      const second = yield* generateFillSecret(ring, otherKey)
      expect(second.hashlock).not.toBe(sealed.hashlock)
    }).pipe(Effect.provide(SecureRandom.Live)),
  )

  it("its key differs from the venue-agent key derived from the same secret", () => {
    expect(fillSecretKeyring(config).key.equals(agentKeyring(config).key)).toBe(false)
  })

  it("refuses a ciphertext whose secret does not hash to the hashlock (sealed under a wrong hashlock)", () => {
    const ring = fillSecretKeyring(config)
    const secret = Buffer.alloc(32, 5)
    const wrongLock = keccak256(Buffer.alloc(32, 6))
    const blob = sealFillSecret(ring, Buffer.alloc(12, 1), key, wrongLock, secret)
    expect(openFillSecret(ring, key, wrongLock, blob)).toBeUndefined()
    const right = keccak256(secret)
    const good = sealFillSecret(ring, Buffer.alloc(12, 1), key, right, secret)
    expect(Redacted.value(openFillSecret(ring, key, right, good)!)).toBe(`0x${"05".repeat(32)}`)
  })

  it.effect("openStoredFillSecret opens a stored row with the deployment's keyring", () =>
    Effect.gen(function* () {
      const ring = fillSecretKeyring(config)
      const secret = Buffer.alloc(32, 9)
      const hashlock = keccak256(secret)
      const row = {
        fill_key: key,
        hashlock,
        secret_ciphertext: sealFillSecret(ring, Buffer.alloc(12, 2), key, hashlock, secret),
      }
      expect(yield* openStoredFillSecret(row)).toBe(`0x${"09".repeat(32)}`)
      const failure = yield* Effect.flip(openStoredFillSecret({ ...row, fill_key: otherKey }))
      expect(failure._tag).toBe("FillSecretUnavailable")
      expect(JSON.stringify(failure)).not.toContain("09".repeat(32))
    }).pipe(Effect.provide(testAppConfig())),
  )
})
