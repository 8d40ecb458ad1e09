/**
 * The hashlock secrets of fills (DESIGN §10), at rest.
 *
 * One 32-byte secret per fill, drawn from SecureRandom when the take is created; `hashlock = keccak256(secret)`
 * goes into the taker's Fill agreement. The secret itself is stored only as `fills.secret_ciphertext`:
 * AES-256-GCM under a key derived (HKDF-SHA256, its own info string, so it never equals the venue-agent key) from
 * `agent_key_secret`, or from the operator key when that is not configured. The associated data binds a ciphertext
 * to its fill key and hashlock, so a row's ciphertext cannot be moved to another fill. The plaintext leaves this
 * module only as a Redacted value from `openFillSecret` (for the Settlement actor's `claim`); it is never logged,
 * returned by the API or journaled, and is revealed on chain by `claim` only.
 *
 * Blob layout: version (1 byte) ‖ iv (12) ‖ ciphertext (32) ‖ tag (16).
 */
import { createCipheriv, createDecipheriv, hkdfSync } from "node:crypto"
import { Data, Effect, Redacted } from "effect"
import { type Hex, keccak256 } from "viem"
import { AppConfig, type DeploymentConfig } from "../Config.ts"
import { SecureRandom } from "../SecureRandom.ts"

const VERSION = 1
const IV_BYTES = 12
const SECRET_BYTES = 32
const TAG_BYTES = 16
const BLOB_BYTES = 1 + IV_BYTES + SECRET_BYTES + TAG_BYTES

export interface FillSecretKeyring {
  readonly key: Buffer
}

export const fillSecretKeyring = (deployment: DeploymentConfig): FillSecretKeyring => {
  const secret = Redacted.value(deployment.agent_key_secret ?? deployment.operator_key)
  const ikm = Buffer.from(secret.slice(2), "hex")
  return { key: Buffer.from(hkdfSync("sha256", ikm, "cross-venue-settlement", "fill-secrets/v1", 32)) }
}

const aad = (fillKey: string, hashlock: string) =>
  Buffer.from(`fill-secret\n${fillKey.toLowerCase()}\n${hashlock.toLowerCase()}`)

/** Seals a 32-byte secret for (fillKey, hashlock) with the given 12-byte IV. */
export const sealFillSecret = (
  ring: FillSecretKeyring,
  iv: Uint8Array,
  fillKey: string,
  hashlock: string,
  secret: Uint8Array,
): Buffer => {
  if (iv.length !== IV_BYTES) throw new RangeError("the IV is 12 bytes")
  if (secret.length !== SECRET_BYTES) throw new RangeError("a fill secret is 32 bytes")
  const cipher = createCipheriv("aes-256-gcm", ring.key, iv)
  cipher.setAAD(aad(fillKey, hashlock))
  const body = Buffer.concat([cipher.update(secret), cipher.final()])
  return Buffer.concat([Buffer.from([VERSION]), Buffer.from(iv), body, cipher.getAuthTag()])
}

/**
 * The fill's secret, or undefined when the blob does not open under this keyring for this fill key and hashlock,
 * or when the secret it holds does not hash to the hashlock.
 */
export const openFillSecret = (
  ring: FillSecretKeyring,
  fillKey: string,
  hashlock: string,
  blob: Uint8Array,
): Redacted.Redacted<Hex> | undefined => {
  const data = Buffer.from(blob)
  if (data.length !== BLOB_BYTES || data[0] !== VERSION) return undefined
  let plain: Buffer
  try {
    const decipher = createDecipheriv("aes-256-gcm", ring.key, data.subarray(1, 1 + IV_BYTES))
    decipher.setAAD(aad(fillKey, hashlock))
    decipher.setAuthTag(data.subarray(data.length - TAG_BYTES))
    plain = Buffer.concat([decipher.update(data.subarray(1 + IV_BYTES, data.length - TAG_BYTES)), decipher.final()])
  } catch {
    return undefined
  }
  const secret = `0x${plain.toString("hex")}` as Hex
  plain.fill(0)
  if (keccak256(secret) !== hashlock.toLowerCase()) return undefined
  return Redacted.make(secret)
}

export interface NewFillSecret {
  readonly hashlock: Hex
  readonly ciphertext: Buffer
}

/** A fresh secret for the fill `fillKey`, sealed at once: only its hashlock and ciphertext leave. */
export const generateFillSecret = (ring: FillSecretKeyring, fillKey: string) =>
  Effect.gen(function* () {
    const random = yield* SecureRandom
    const secret = Buffer.from(yield* random.bytes(SECRET_BYTES))
    const iv = yield* random.bytes(IV_BYTES)
    const hashlock = keccak256(secret)
    const ciphertext = sealFillSecret(ring, iv, fillKey, hashlock, secret)
    secret.fill(0)
    return { hashlock, ciphertext } satisfies NewFillSecret
  })

/** A fill's ciphertext does not open under this deployment's keyring (wrong key, or a tampered row). */
export class FillSecretUnavailable extends Data.TaggedError("FillSecretUnavailable")<{ readonly fillKey: string }> {}

/**
 * The secret of a stored fill, for building its `claim` (the Settlement actor's OpenSecret). The plaintext is
 * returned as hex for the calldata only: never log it, journal it or put it in an error.
 */
export const openStoredFillSecret = (fill: {
  readonly fill_key: string
  readonly hashlock: string
  readonly secret_ciphertext: Uint8Array
}) =>
  Effect.flatMap(AppConfig, ({ deployment }) => {
    const secret = openFillSecret(fillSecretKeyring(deployment), fill.fill_key, fill.hashlock, fill.secret_ciphertext)
    return secret === undefined
      ? Effect.fail(new FillSecretUnavailable({ fillKey: fill.fill_key }))
      : Effect.succeed(Redacted.value(secret))
  })
