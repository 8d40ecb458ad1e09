import type { Effect } from "effect"
import type { SiweChainUnavailable, SiweError, SiweErrorCode } from "../Domain/Siwe.ts"
import {
  apiError,
  ChainUnavailable,
  ChallengeExpired,
  ChallengeNotYetValid,
  type Envelope,
  SignatureInvalid,
  SignatureMalformed,
  SignatureMalleable,
  SiweAddressMismatch,
  SiweChainMismatch,
  SiweDomainMismatch,
  SiweMalformed,
  SiweNonceMismatch,
  SiweUriMismatch,
} from "./Errors.ts"

/** Each sign-in verdict keeps its own code on the wire; a failing chain node is 503 and retryable. */
export const signatureFailure = (
  e: SiweError | SiweChainUnavailable,
): Effect.Effect<never, Envelope<SiweErrorCode | "CHAIN_UNAVAILABLE">> => {
  if (e._tag === "SiweChainUnavailable") return apiError(ChainUnavailable, "the auth chain node failed; retry", true)
  switch (e.code) {
    case "SIWE_MALFORMED":
      return apiError(SiweMalformed, e.message)
    case "SIWE_DOMAIN_MISMATCH":
      return apiError(SiweDomainMismatch, e.message)
    case "SIWE_URI_MISMATCH":
      return apiError(SiweUriMismatch, e.message)
    case "SIWE_CHAIN_MISMATCH":
      return apiError(SiweChainMismatch, e.message)
    case "SIWE_ADDRESS_MISMATCH":
      return apiError(SiweAddressMismatch, e.message)
    case "SIWE_NONCE_MISMATCH":
      return apiError(SiweNonceMismatch, e.message)
    case "CHALLENGE_EXPIRED":
      return apiError(ChallengeExpired, e.message)
    case "CHALLENGE_NOT_YET_VALID":
      return apiError(ChallengeNotYetValid, e.message)
    case "SIGNATURE_MALFORMED":
      return apiError(SignatureMalformed, e.message)
    case "SIGNATURE_MALLEABLE":
      return apiError(SignatureMalleable, e.message)
    case "SIGNATURE_INVALID":
      return apiError(SignatureInvalid, e.message)
  }
}

/**
 * For plain personal_sign signatures (link messages): only the signature's own verdicts apply; a
 * message-level code cannot arise there, so anything else is reported as an invalid signature.
 */
export const signatureOnlyFailure = (
  e: SiweError | SiweChainUnavailable,
): Effect.Effect<
  never,
  Envelope<"SIGNATURE_MALFORMED" | "SIGNATURE_MALLEABLE" | "SIGNATURE_INVALID" | "CHAIN_UNAVAILABLE">
> => {
  if (e._tag === "SiweChainUnavailable") return apiError(ChainUnavailable, "the chain node failed; retry", true)
  if (e.code === "SIGNATURE_MALFORMED") return apiError(SignatureMalformed, e.message)
  if (e.code === "SIGNATURE_MALLEABLE") return apiError(SignatureMalleable, e.message)
  return apiError(SignatureInvalid, e.code === "SIGNATURE_INVALID" ? e.message : "the signature does not verify")
}

/** For a shape check alone (no chain involved): malformed or malleable. */
export const shapeFailure = (
  e: SiweError,
): Effect.Effect<never, Envelope<"SIGNATURE_MALFORMED" | "SIGNATURE_MALLEABLE">> =>
  e.code === "SIGNATURE_MALLEABLE" ? apiError(SignatureMalleable, e.message) : apiError(SignatureMalformed, e.message)
