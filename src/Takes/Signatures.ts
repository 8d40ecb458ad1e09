import { Effect, Either } from "effect"
import { type Address, type Hex, verifyTypedData } from "viem"
import { SignatureMalformed } from "../Domain/Errors.ts"
import { canonicalSignature } from "../Domain/Signature.ts"
import { shapeFailure } from "../Domain/SignatureFailure.ts"
import { checkSignatureShape } from "../Domain/SiweSignature.ts"
import type { TakeSignItem } from "./View.ts"

/** A 65-byte low-s signature in canonical form (v 27/28), or the shape error as the API answers it. */
export const canonical = (signature: string) =>
  Effect.gen(function* () {
    const kind = yield* checkSignatureShape(signature).pipe(Effect.catchAll(shapeFailure))
    if (kind !== "eoa") return yield* new SignatureMalformed({ message: "a 65-byte r||s||v signature is required" })
    const c = canonicalSignature(signature as Hex)
    return Either.isRight(c) ? c.right : yield* new SignatureMalformed({ message: c.left.message })
  })

/** Whether `signature` over the item's typed data recovers to `signer` (plain ECDSA). */
export const signedBy = (item: Pick<TakeSignItem, "typed_data">, signer: string, signature: Hex) =>
  Effect.promise(() =>
    verifyTypedData({ ...item.typed_data, address: signer as Address, signature }).catch(() => false),
  )
