/**
 * The EIP-712 typed data objects the venues expect, as handed to `eth_signTypedData_v4` (spec: Typed data object).
 *
 * Objects are plain JSON (numbers, strings, booleans; no bigint) so that what we return to a client is exactly
 * what we hash and what the venue reconstructs. Integers in these messages are millisecond or microsecond
 * timestamps, far below 2^53, so JSON numbers are exact.
 */
import { Data, Effect, Either } from "effect"
import {
  type Address,
  type Hex,
  hashDomain,
  hashStruct,
  hashTypedData,
  isAddress,
  recoverTypedDataAddress,
  type TypedData,
} from "viem"

export interface TypedDataField {
  readonly name: string
  readonly type: string
}

export interface TypedDataDomain {
  readonly name: string
  readonly version: string
  readonly chainId: number
  readonly verifyingContract: Address
}

export type TypedDataValue = string | number | boolean

export interface TypedDataObject<P extends string = string> {
  readonly types: Readonly<Record<string, ReadonlyArray<TypedDataField>>>
  readonly primaryType: P
  readonly domain: TypedDataDomain
  readonly message: Readonly<Record<string, TypedDataValue>>
}

export const ZERO_ADDRESS: Address = "0x0000000000000000000000000000000000000000"

/** The domain type every venue domain here uses: all four fields, in the canonical order. */
export const EIP712_DOMAIN_FIELDS: ReadonlyArray<TypedDataField> = [
  { name: "name", type: "string" },
  { name: "version", type: "string" },
  { name: "chainId", type: "uint256" },
  { name: "verifyingContract", type: "address" },
]

/** A name/version/chainId domain with the zero verifying contract, as both venues use. */
export const zeroContractDomain = (name: string, version: string, chainId: number): TypedDataDomain => ({
  name,
  version,
  chainId,
  verifyingContract: ZERO_ADDRESS,
})

/** The EIP-712 `encodeType` string of a struct without nested structs (all venue types here are flat). */
export const encodeType = (primaryType: string, fields: ReadonlyArray<TypedDataField>): string =>
  `${primaryType}(${fields.map((f) => `${f.type} ${f.name}`).join(",")})`

// viem's parameter types are derived from literal type definitions; ours are data, so they go through this view.
const asViem = (td: TypedDataObject) =>
  ({
    domain: td.domain,
    types: td.types as unknown as TypedData,
    primaryType: td.primaryType,
    message: td.message as Record<string, unknown>,
  }) as Parameters<typeof hashTypedData>[0]

/** The digest a wallet signs: keccak256(0x1901 ‖ domainSeparator ‖ hashStruct(message)). */
export const typedDataDigest = (td: TypedDataObject): Hex => hashTypedData(asViem(td))

export const domainSeparator = (td: TypedDataObject): Hex =>
  hashDomain({
    domain: td.domain,
    types: { EIP712Domain: EIP712_DOMAIN_FIELDS } as unknown as TypedData,
  } as Parameters<typeof hashDomain>[0])

export const messageStructHash = (td: TypedDataObject): Hex =>
  hashStruct({
    data: td.message as Record<string, unknown>,
    primaryType: td.primaryType,
    types: td.types as unknown as TypedData,
  } as Parameters<typeof hashStruct>[0])

export class SignatureUnrecoverable extends Data.TaggedError("SignatureUnrecoverable")<{ readonly message: string }> {}

/**
 * The address that signed `td`, or an error for a malformed signature. Any signature recovers *some* address;
 * callers compare it with the expected signer.
 */
export const recoverTypedDataSigner = (
  td: TypedDataObject,
  signature: Hex,
): Effect.Effect<Address, SignatureUnrecoverable> =>
  Effect.tryPromise({
    try: async () => (await recoverTypedDataAddress({ ...asViem(td), signature })).toLowerCase() as Address,
    catch: (e) => new SignatureUnrecoverable({ message: e instanceof Error ? e.message : String(e) }),
  })

/** Two field lists are the same EIP-712 type (names, types and order). */
export const sameFields = (a: ReadonlyArray<TypedDataField>, b: unknown): boolean =>
  Array.isArray(b) &&
  b.length === a.length &&
  a.every((f, i) => {
    const g = b[i] as { name?: unknown; type?: unknown } | undefined
    return g !== undefined && g !== null && g.name === f.name && g.type === f.type && Object.keys(g).length === 2
  })

/** A JSON integer that may arrive as a number or a decimal string (spec: Typed data object). */
export const asSafeInteger = (value: unknown): number | undefined => {
  if (typeof value === "number") return Number.isSafeInteger(value) && value >= 0 ? value : undefined
  if (typeof value === "string" && /^(0|[1-9][0-9]{0,15})$/.test(value)) {
    const n = Number(value)
    return Number.isSafeInteger(n) ? n : undefined
  }
  return undefined
}

export const asAddress = (value: unknown): Address | undefined =>
  typeof value === "string" && isAddress(value, { strict: false }) ? (value.toLowerCase() as Address) : undefined

/** Reads the parts common to every venue object; the venue modules check the rest. */
export interface TypedDataEnvelope {
  readonly types: Readonly<Record<string, unknown>>
  readonly primaryType: string
  readonly domain: TypedDataDomain
  readonly message: Readonly<Record<string, unknown>>
}

const isRecord = (x: unknown): x is Readonly<Record<string, unknown>> =>
  typeof x === "object" && x !== null && !Array.isArray(x)

export const readEnvelope = (input: unknown): Either.Either<TypedDataEnvelope, string> => {
  if (!isRecord(input)) return Either.left("typed data must be an object")
  const { types, primaryType, domain, message } = input
  if (!isRecord(types)) return Either.left("types must be an object")
  if (typeof primaryType !== "string") return Either.left("primaryType must be a string")
  if (!isRecord(domain)) return Either.left("domain must be an object")
  if (!isRecord(message)) return Either.left("message must be an object")
  const chainId = asSafeInteger(domain.chainId)
  const verifyingContract = asAddress(domain.verifyingContract)
  if (typeof domain.name !== "string" || typeof domain.version !== "string") {
    return Either.left("domain name and version must be strings")
  }
  if (chainId === undefined || chainId === 0) return Either.left("domain chainId must be a positive integer")
  if (verifyingContract === undefined) return Either.left("domain verifyingContract must be an address")
  const domainKeys = Object.keys(domain).sort().join(",")
  if (domainKeys !== "chainId,name,verifyingContract,version") {
    return Either.left("domain must have exactly name, version, chainId and verifyingContract")
  }
  if (types.EIP712Domain !== undefined && !sameFields(EIP712_DOMAIN_FIELDS, types.EIP712Domain)) {
    return Either.left("types.EIP712Domain must list name, version, chainId, verifyingContract")
  }
  return Either.right({
    types,
    primaryType,
    domain: { name: domain.name, version: domain.version, chainId, verifyingContract },
    message,
  })
}
