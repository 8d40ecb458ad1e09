import { createHash, randomBytes } from "node:crypto"
import { Context, Effect, Layer } from "effect"

/**
 * Unpredictable bytes for secrets (session tokens, credentials, nonces, hashlock secrets). Effect's
 * Random is a seeded PRNG, right for simulation and jitter but not for secrets; this service is
 * the one place secrets come from, and tests may replace it.
 */
export class SecureRandom extends Context.Tag("SecureRandom")<
  SecureRandom,
  { readonly bytes: (n: number) => Effect.Effect<Uint8Array> }
>() {
  static readonly Live = Layer.succeed(SecureRandom, { bytes: (n) => Effect.sync(() => randomBytes(n)) })
}

export const randomHex = (n: number) =>
  Effect.flatMap(SecureRandom, (r) => Effect.map(r.bytes(n), (b) => Buffer.from(b).toString("hex")))

export const randomBase64Url = (n: number) =>
  Effect.flatMap(SecureRandom, (r) => Effect.map(r.bytes(n), (b) => Buffer.from(b).toString("base64url")))

/** A v4 UUID from secure bytes. */
export const randomUuid = Effect.flatMap(SecureRandom, (r) =>
  Effect.map(r.bytes(16), (b) => {
    const x = Buffer.from(b)
    x[6] = (x[6]! & 0x0f) | 0x40
    x[8] = (x[8]! & 0x3f) | 0x80
    const h = x.toString("hex")
    return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`
  }),
)

/** Tokens are stored only as this digest, so a database leak yields no usable bearer. */
export const sha256 = (text: string): Buffer => createHash("sha256").update(text).digest()
