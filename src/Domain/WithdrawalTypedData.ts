/**
 * Identifying a prepared withdrawal by what the user signed. A submit names its typed data; the service never
 * relays that object: it hashes it (EIP-712, so integers given as numbers or decimal strings hash alike) and looks
 * the digest up among its own preparations, then relays its own stored copy. Typed data that hashes to nothing
 * we built is refused.
 */
import { Effect, Either } from "effect"
import { type Address, type Hex, recoverAddress } from "viem"
import { readEnvelope, type TypedDataObject, typedDataDigest } from "./TypedData.ts"

/** The EIP-712 digest of client-supplied typed data, or why it has none. */
export const digestOfUntrusted = (input: unknown): Either.Either<Hex, string> =>
  Either.flatMap(readEnvelope(input), (env) =>
    Either.try({
      try: () =>
        typedDataDigest({
          types: env.types as TypedDataObject["types"],
          primaryType: env.primaryType,
          domain: env.domain,
          message: env.message as TypedDataObject["message"],
        }).toLowerCase() as Hex,
      catch: () => "typed_data does not hash as EIP-712 typed data",
    }),
  )

/** The address that signed `digest` (signature already shape-checked), lowercase; undefined if unrecoverable. */
export const recoverDigestSigner = (digest: Hex, signature: Hex): Effect.Effect<Address | undefined> =>
  Effect.tryPromise(() => recoverAddress({ hash: digest, signature })).pipe(
    Effect.map((a) => a.toLowerCase() as Address),
    Effect.orElseSucceed(() => undefined),
  )
