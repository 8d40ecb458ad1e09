/**
 * The signature of a sign-in message (EIP-191 personal_sign) and of the link messages: its shape (65-byte ECDSA with
 * a low s, or a contract signature) and who made it, recovered locally for an EOA and asked of the auth chain for an
 * ERC-1271 / ERC-6492 smart wallet. viem's recovery accepts high-s twins, and its `verifyMessage` answers `false`
 * when the RPC itself fails; both are handled here (Siwe.ts says why).
 */
import { Duration, Effect, Either } from "effect"
import {
  type Client,
  createClient,
  custom,
  type Hex,
  hashMessage,
  isAddress,
  isAddressEqual,
  type PublicClient,
  recoverAddress,
} from "viem"
import { verifyMessage } from "viem/actions"
import { SignatureInvalid, SignatureMalformed, SignatureMalleable, SiweAddressMismatch } from "./Errors.ts"
import { parseCanonical } from "./Signature.ts"
import { SiweChainUnavailable, type SiweError } from "./SiweVerdicts.ts"

/** Longest contract (ERC-1271 / ERC-6492) signature we forward to the chain, in bytes. */
export const SIWE_MAX_CONTRACT_SIGNATURE_BYTES = 8192
/** Upper bound on one on-chain verification, on top of the transport's own timeout and retries. */
export const SIWE_CHAIN_TIMEOUT = Duration.seconds(10)

const fail = (error: SiweError) => Either.left(error)

const HEX = /^0x(?:[0-9a-fA-F]{2})+$/

/** The 65-byte ECDSA signature split into its parts, v normalised to a y-parity. */
export interface EcdsaParts {
  readonly r: bigint
  readonly s: bigint
  readonly yParity: 0 | 1
}

/**
 * Splits a 65-byte r||s||v signature by Signature.ts's rules: a v outside {0,1,27,28} or an r or s outside [1, n) is
 * SIGNATURE_MALFORMED, a high s SIGNATURE_MALLEABLE.
 */
const ecdsaParts = (signature: string): Either.Either<EcdsaParts, SiweError> =>
  Either.mapBoth(parseCanonical(signature as Hex), {
    onLeft: (e): SiweError =>
      e.reason === "high-s"
        ? new SignatureMalleable({ message: `signature ${e.message}` })
        : new SignatureMalformed({ message: `signature ${e.message}` }),
    onRight: ({ r, s, v }): EcdsaParts => ({ r, s, yParity: v === 27 ? 0 : 1 }),
  })

/**
 * 65-byte r||s||v: v in {0,1,27,28} and r, s in [1, n), else SIGNATURE_MALFORMED; s low (EIP-2,
 * s <= n/2), else SIGNATURE_MALLEABLE. Longer hex (an ERC-1271 signature, or an ERC-6492 wrapped
 * one) up to `SIWE_MAX_CONTRACT_SIGNATURE_BYTES` bytes is "contract". Anything else (not
 * 0x-prefixed even-length hex, shorter than 65 bytes, 64-byte EIP-2098 compact, too long) is
 * SIGNATURE_MALFORMED.
 */
export const checkSignatureShape = (signature: string): Either.Either<"eoa" | "contract", SiweError> => {
  if (typeof signature !== "string" || !HEX.test(signature))
    return fail(new SignatureMalformed({ message: "signature is not 0x-prefixed hex of whole bytes" }))
  const bytes = (signature.length - 2) / 2
  if (bytes === 65) return Either.map(ecdsaParts(signature), () => "eoa" as const)
  if (bytes > 65 && bytes <= SIWE_MAX_CONTRACT_SIGNATURE_BYTES) return Either.right("contract")
  return fail(
    new SignatureMalformed({
      message: `signature is ${bytes} bytes; expected 65 (r||s||v) or a contract signature of 66 to ${SIWE_MAX_CONTRACT_SIGNATURE_BYTES}`,
    }),
  )
}

// ---------------------------------------------------------------------------------------------
// Signature verification
// ---------------------------------------------------------------------------------------------

const recoversTo = (message: string, parts: EcdsaParts, address: Hex): Effect.Effect<boolean> =>
  Effect.tryPromise(() =>
    recoverAddress({
      hash: hashMessage(message),
      signature: {
        r: `0x${parts.r.toString(16).padStart(64, "0")}`,
        s: `0x${parts.s.toString(16).padStart(64, "0")}`,
        yParity: parts.yParity,
      },
    }),
  ).pipe(
    Effect.map((recovered) => isAddressEqual(recovered, address)),
    // An r that is not an x-coordinate on the curve recovers nothing: not this address.
    Effect.orElseSucceed(() => false),
  )

/** Node answers that mean "the contract call reverted", i.e. the signature is not valid. */
const REVERT_DETAILS = /execution reverted|gas required exceeds allowance|out of gas|invalid opcode/i

const isExecutionRevert = (error: unknown): boolean => {
  let current: unknown = error
  for (let depth = 0; depth < 8 && typeof current === "object" && current !== null; depth++) {
    const e = current as { code?: unknown; details?: unknown; cause?: unknown }
    if (e.code === 3) return true
    if (typeof e.details === "string" && REVERT_DETAILS.test(e.details)) return true
    current = e.cause
  }
  return false
}

/**
 * A client that forwards every request to `client` and records the failures that are not a
 * contract revert. viem's `verifyMessage` turns any `eth_call` failure, a dead RPC included, into
 * `false`; the record tells "invalid" from "could not ask".
 */
const watchedClient = (client: PublicClient): { readonly client: Client; readonly failures: Array<unknown> } => {
  const failures: Array<unknown> = []
  const watched = createClient({
    chain: client.chain,
    ccipRead: false,
    transport: custom(
      {
        request: async (args: { method: string; params?: unknown }) => {
          try {
            return await client.request(args as Parameters<PublicClient["request"]>[0])
          } catch (error) {
            if (!isExecutionRevert(error)) failures.push(error)
            throw error
          }
        },
      },
      // The underlying client's transport already retries as configured.
      { retryCount: 0 },
    ),
  })
  return { client: watched, failures }
}

const chainUnavailable = (cause: unknown) =>
  new SiweChainUnavailable({
    message: `auth chain could not verify the signature (${cause instanceof Error ? cause.name : "unknown error"})`,
    cause,
  })

/**
 * Verifies `signature` over `message` (EIP-191 personal_sign) by `address`.
 * The shape is checked first (`checkSignatureShape`: malformed / malleable fail here, before any
 * RPC). EOA: a 65-byte signature that recovers to `address` is accepted locally, no RPC. Otherwise
 * (a contract signature, or 65 bytes that recover to someone else, e.g. an ERC-1271 wallet's owner),
 * when a viem PublicClient for the configured auth chain is given, the chain decides through viem's
 * `verifyMessage` action (ERC-1271 deployed wallets, ERC-6492 counterfactual ones). An RPC failure
 * or a timeout (`SIWE_CHAIN_TIMEOUT`) is SiweChainUnavailable, never "valid" and never
 * SIGNATURE_INVALID. A `false` from the chain (including a reverted validation call), or no client to
 * ask, is SIGNATURE_INVALID. An `address` that is not 20-byte hex is SIWE_ADDRESS_MISMATCH.
 */
export const verifySiweSignature = (p: {
  message: string
  signature: `0x${string}`
  address: `0x${string}`
  client?: PublicClient | undefined
}): Effect.Effect<void, SiweError | SiweChainUnavailable> =>
  Effect.gen(function* () {
    if (!isAddress(p.address, { strict: false }))
      return yield* new SiweAddressMismatch({
        message: "address is not a 20-byte hex address",
      })
    const shape = yield* checkSignatureShape(p.signature)
    if (shape === "eoa") {
      const parts = yield* ecdsaParts(p.signature)
      if (yield* recoversTo(p.message, parts, p.address)) return
    }
    const client = p.client
    if (client === undefined)
      return yield* new SignatureInvalid({
        message:
          shape === "eoa"
            ? "signature was not made by the address"
            : "contract signature cannot be checked without an auth chain client",
      })

    const watched = watchedClient(client)
    const valid = yield* Effect.tryPromise({
      try: () =>
        verifyMessage(watched.client, {
          address: p.address,
          message: p.message,
          signature: p.signature,
        }),
      catch: chainUnavailable,
    }).pipe(
      Effect.timeoutFail({
        duration: SIWE_CHAIN_TIMEOUT,
        onTimeout: () =>
          new SiweChainUnavailable({
            message: `auth chain did not answer within ${Duration.format(SIWE_CHAIN_TIMEOUT)}`,
          }),
      }),
    )
    if (valid) return
    if (watched.failures.length > 0) return yield* chainUnavailable(watched.failures[0])
    return yield* new SignatureInvalid({
      message: "the auth chain rejected the signature",
    })
  })
