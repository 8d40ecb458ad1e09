import type { Effect } from "effect"
import {
  ChainUnavailable,
  ChallengeExpired,
  ChallengeNotYetValid,
  SignatureInvalid,
  SignatureMalformed,
  SignatureMalleable,
  SiweAddressMismatch,
  SiweChainMismatch,
  SiweDomainMismatch,
  SiweMalformed,
  SiweNonceMismatch,
  SiweUriMismatch,
} from "../Domain/Errors.ts"
import type { SiweChainUnavailable, SiweError } from "../Domain/Siwe.ts"

/** Each sign-in verdict keeps its own code on the wire; a failing chain node is 503 and retryable. */
export const signatureFailure = (
  e: SiweError | SiweChainUnavailable,
): Effect.Effect<
  never,
  | SiweMalformed
  | SiweDomainMismatch
  | SiweUriMismatch
  | SiweChainMismatch
  | SiweAddressMismatch
  | SiweNonceMismatch
  | ChallengeExpired
  | ChallengeNotYetValid
  | SignatureMalformed
  | SignatureMalleable
  | SignatureInvalid
  | ChainUnavailable
> => {
  if (e._tag === "SiweChainUnavailable")
    return new ChainUnavailable({ message: "the auth chain node failed; retry", retryable: true })
  switch (e.code) {
    case "SIWE_MALFORMED":
      return new SiweMalformed({ message: e.message })
    case "SIWE_DOMAIN_MISMATCH":
      return new SiweDomainMismatch({ message: e.message })
    case "SIWE_URI_MISMATCH":
      return new SiweUriMismatch({ message: e.message })
    case "SIWE_CHAIN_MISMATCH":
      return new SiweChainMismatch({ message: e.message })
    case "SIWE_ADDRESS_MISMATCH":
      return new SiweAddressMismatch({ message: e.message })
    case "SIWE_NONCE_MISMATCH":
      return new SiweNonceMismatch({ message: e.message })
    case "CHALLENGE_EXPIRED":
      return new ChallengeExpired({ message: e.message })
    case "CHALLENGE_NOT_YET_VALID":
      return new ChallengeNotYetValid({ message: e.message })
    case "SIGNATURE_MALFORMED":
      return new SignatureMalformed({ message: e.message })
    case "SIGNATURE_MALLEABLE":
      return new SignatureMalleable({ message: e.message })
    case "SIGNATURE_INVALID":
      return new SignatureInvalid({ message: e.message })
  }
}

/**
 * For plain personal_sign signatures (link messages): only the signature's own verdicts apply; a
 * message-level code cannot arise there, so anything else is reported as an invalid signature.
 */
export const signatureOnlyFailure = (
  e: SiweError | SiweChainUnavailable,
): Effect.Effect<never, SignatureMalformed | SignatureMalleable | SignatureInvalid | ChainUnavailable> => {
  if (e._tag === "SiweChainUnavailable")
    return new ChainUnavailable({ message: "the chain node failed; retry", retryable: true })
  if (e.code === "SIGNATURE_MALFORMED") return new SignatureMalformed({ message: e.message })
  if (e.code === "SIGNATURE_MALLEABLE") return new SignatureMalleable({ message: e.message })
  return new SignatureInvalid({ message: e.code === "SIGNATURE_INVALID" ? e.message : "the signature does not verify" })
}

/** For a shape check alone (no chain involved): malformed or malleable. */
export const shapeFailure = (e: SiweError): Effect.Effect<never, SignatureMalformed | SignatureMalleable> =>
  e.code === "SIGNATURE_MALLEABLE"
    ? new SignatureMalleable({ message: e.message })
    : new SignatureMalformed({ message: e.message })
