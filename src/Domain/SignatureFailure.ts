import { Effect, Either } from "effect"
import type { Hex } from "viem"
import { ChainUnavailable, SignatureInvalid, SignatureMalformed, type SignatureMalleable } from "./Errors.ts"
import { canonicalSignature } from "./Signature.ts"
import { checkSignatureShape } from "./SiweSignature.ts"
import type { SiweChainUnavailable, SiweError } from "./SiweVerdicts.ts"

/**
 * The boundary for sign-in checks: each verdict is already an error of the catalogue and passes as
 * it is; the auth chain failing (an infrastructure error) becomes CHAIN_UNAVAILABLE, retryable.
 */
export const signatureFailure = (
  e: SiweError | SiweChainUnavailable,
): Effect.Effect<never, SiweError | ChainUnavailable> =>
  e._tag === "SiweChainUnavailable"
    ? Effect.fail(new ChainUnavailable({ message: "the auth chain node failed; retry" }))
    : Effect.fail(e)

/**
 * For plain personal_sign signatures (link messages): only the signature's own verdicts apply; a
 * message-level verdict cannot arise there, so anything else is reported as an invalid signature.
 */
export const signatureOnlyFailure = (
  e: SiweError | SiweChainUnavailable,
): Effect.Effect<never, SignatureMalformed | SignatureMalleable | SignatureInvalid | ChainUnavailable> => {
  switch (e._tag) {
    case "SiweChainUnavailable":
      return Effect.fail(new ChainUnavailable({ message: "the chain node failed; retry" }))
    case "SignatureMalformed":
    case "SignatureMalleable":
    case "SignatureInvalid":
      return Effect.fail(e)
    default:
      return Effect.fail(new SignatureInvalid({ message: "the signature does not verify" }))
  }
}

/** For a shape check alone (no chain involved): malformed or malleable. */
export const shapeFailure = (e: SiweError): Effect.Effect<never, SignatureMalformed | SignatureMalleable> =>
  e._tag === "SignatureMalleable" || e._tag === "SignatureMalformed"
    ? Effect.fail(e)
    : Effect.fail(new SignatureMalformed({ message: e.message }))

/**
 * A signature only an account's key can give (a venue's typed data, the escrow's payer signatures): 65 bytes, low s,
 * as its canonical form (v 27/28, lowercase). Malformed or malleable as the shape check says; a contract's longer
 * signature (ERC-1271), which these verifiers never accept, is SIGNATURE_INVALID with `why`.
 */
export const eoaSignature = (signature: string, why: string) =>
  Effect.gen(function* () {
    const shape = yield* checkSignatureShape(signature).pipe(Effect.catchAll(shapeFailure))
    const canonical = canonicalSignature(signature as Hex)
    if (shape !== "eoa" || Either.isLeft(canonical)) return yield* new SignatureInvalid({ message: why })
    return canonical.right
  })
