/**
 * Shape rules for the 65-byte ECDSA signatures the escrow accepts (DESIGN §6, EIP-2): r ‖ s ‖ v with
 * v ∈ {0, 1, 27, 28}, 0 < r < n and 0 < s ≤ n/2.
 *
 * viem's `verifyTypedData` / `recoverTypedDataAddress` accept the high-s twin of a valid signature; the escrow (OZ
 * ECDSA) rejects it, so checking here first keeps us from relaying a transaction that must revert, and from
 * treating the twin as a second, "different" signature. Never de-duplicate by signature bytes: use the digest or
 * (signer, nonce).
 */
import { Data, Either } from "effect"
import type { Hex } from "viem"

/** secp256k1 group order and its half (EIP-2). */
export const SECP256K1_N = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n
export const SECP256K1_HALF_N = SECP256K1_N >> 1n

export type SignatureShapeReason = "length" | "v" | "r" | "s" | "high-s"

export class SignatureShapeError extends Data.TaggedError("SignatureShapeError")<{
  readonly reason: SignatureShapeReason
  readonly message: string
}> {}

export interface SignatureParts {
  readonly r: bigint
  readonly s: bigint
  /** Normalised to 27 or 28. */
  readonly v: 27 | 28
}

const SIG_RE = /^0x[0-9a-fA-F]{130}$/

const fail = (reason: SignatureShapeReason, message: string) =>
  Either.left(new SignatureShapeError({ reason, message }))

/** Parses r ‖ s ‖ v without judging s (see `parseCanonical` for the full rule). */
const parseLoose = (sig: Hex): Either.Either<SignatureParts, SignatureShapeError> => {
  if (!SIG_RE.test(sig)) return fail("length", "a signature is 65 bytes of hex (r ‖ s ‖ v)")
  const r = BigInt(`0x${sig.slice(2, 66)}`)
  const s = BigInt(`0x${sig.slice(66, 130)}`)
  const rawV = Number.parseInt(sig.slice(130, 132), 16)
  const v = rawV === 0 || rawV === 27 ? 27 : rawV === 1 || rawV === 28 ? 28 : undefined
  if (v === undefined) return fail("v", `v must be 0, 1, 27 or 28 (got ${rawV})`)
  if (r === 0n || r >= SECP256K1_N) return fail("r", "r is out of range")
  if (s === 0n || s >= SECP256K1_N) return fail("s", "s is out of range")
  return Either.right({ r, s, v })
}

/** Parses a signature and enforces every rule, low s included. */
export const parseCanonical = (sig: Hex): Either.Either<SignatureParts, SignatureShapeError> =>
  Either.flatMap(parseLoose(sig), (p) =>
    p.s > SECP256K1_HALF_N ? fail("high-s", "s is in the upper half of the curve order (EIP-2)") : Either.right(p),
  )

/** True when the signature is well formed and its s is in the lower half of the curve order. */
export const isLowS = (sig: Hex): boolean => Either.isRight(parseCanonical(sig))

const hex32 = (x: bigint) => x.toString(16).padStart(64, "0")

/** The same signature with v as 27/28 (wallets that emit yParity 0/1 are accepted). Does not judge s. */
export const normalizeV = (sig: Hex): Either.Either<Hex, SignatureShapeError> =>
  Either.map(parseLoose(sig), ({ r, s, v }) => `0x${hex32(r)}${hex32(s)}${v.toString(16)}` as Hex)

/** The canonical form we store and relay: low s enforced, v normalised to 27/28, lowercase hex. */
export const canonicalSignature = (sig: Hex): Either.Either<Hex, SignatureShapeError> =>
  Either.map(parseCanonical(sig), ({ r, s, v }) => `0x${hex32(r)}${hex32(s)}${v.toString(16)}` as Hex)
