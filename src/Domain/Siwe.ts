/**
 * Sign-In With Ethereum (EIP-4361) core: build the message we issue, parse what comes back strictly,
 * check every field ourselves, and verify the EIP-191 signature (SiweSignature.ts: locally for EOAs, on chain
 * for ERC-1271 / ERC-6492 smart wallets). Its verdicts: SiweVerdicts.ts.
 *
 * Pure: no clock, no randomness. Time comes in as `nowMs`; the only I/O is the optional chain call,
 * made through the viem client the caller passes.
 *
 * Why not viem's SIWE helpers (research/reliability.md §4.1, §5.1, §5.3):
 * - `parseSiweMessage` is a lenient regex: it accepts 12 of the 29 spruceid malformed messages and
 *   silently drops out-of-order fields. We parse with the ABNF parser of `@spruceid/siwe-parser`.
 * - `verifySiweMessage` never checks `chainId`, and skips domain/nonce when they are not passed.
 * - viem's recovery accepts high-s (EIP-2 malleable) twins; we reject them.
 * - The pure verify util only does ecrecover, so it says `false` for ERC-1271 wallets; the client
 *   action `verifyMessage` handles ERC-1271 and ERC-6492. But that action answers `false` when the RPC
 *   itself fails (viem turns the transport error into a `CallExecutionError`, then into "invalid"),
 *   so we watch the transport and report `SiweChainUnavailable` instead of a false "invalid".
 */
import { ParsedMessage } from "@spruceid/siwe-parser"
import { Effect, Either } from "effect"
import { getAddress, isAddress, type PublicClient } from "viem"
import {
  ChallengeExpired,
  ChallengeNotYetValid,
  SiweAddressMismatch,
  SiweChainMismatch,
  SiweDomainMismatch,
  SiweMalformed,
  SiweNonceMismatch,
  SiweUriMismatch,
} from "./Errors.ts"
import { checkSignatureShape, verifySiweSignature } from "./SiweSignature.ts"
import type { SiweChainUnavailable, SiweError } from "./SiweVerdicts.ts"

/** Longest message we hand to the ABNF parser. Its cost grows with length (about 45 ms at 8 KiB). */
export const SIWE_MAX_MESSAGE_LENGTH = 4096
/** Default tolerance for an Issued At slightly ahead of our clock. */
export const SIWE_DEFAULT_SKEW_MS = 60_000

const fail = (error: SiweError) => Either.left(error)

/** Quotes an untrusted value for an error message: JSON-escaped and cut to a readable length. */
const quote = (value: string, max = 80): string =>
  JSON.stringify(value.length > max ? `${value.slice(0, max)}…` : value)

// ---------------------------------------------------------------------------------------------
// Building
// ---------------------------------------------------------------------------------------------

export interface BuildSiweParams {
  readonly domain: string
  readonly uri: string
  readonly chainId: number
  readonly address: string
  readonly nonce: string
  readonly issuedAtMs: number
  readonly expirationTimeMs: number
  readonly statement?: string
}

const invalidBuild = (message: string) =>
  new SiweMalformed({
    message: `buildSiweMessage: ${message}`,
  })

const toRfc3339Utc = (ms: number, field: string): string => {
  if (!Number.isFinite(ms)) throw invalidBuild(`${field} must be a finite number of milliseconds`)
  const date = new Date(ms)
  if (Number.isNaN(date.getTime())) throw invalidBuild(`${field} is out of the Date range`)
  return date.toISOString()
}

/**
 * Builds the message we issue: EIP-55 address, optional statement, Version 1, Issued At and
 * Expiration Time as RFC 3339 UTC (`toISOString`, millisecond precision). The layout is the one of
 * EIP-4361 and of spruceid's `SiweMessage.toMessage()` (no statement: three line feeds).
 *
 * `address` may be any case; it is re-checksummed. An empty `statement` means no statement.
 * Throws a `SiweError` (SIWE_MALFORMED) when the inputs cannot form a valid message (bad domain,
 * URI, nonce, chain id, statement with a line break, expiry not after issuance…): it parses its own
 * output with the strict parser and checks every field came back unchanged, so we never issue a
 * message that our own verifier would refuse or read differently. This is a programmer or
 * configuration error, hence a throw (a defect inside Effect) rather than a typed failure.
 */
export const buildSiweMessage = (p: BuildSiweParams): string => {
  if (!isAddress(p.address, { strict: false })) throw invalidBuild("address is not a 20-byte hex address")
  if (!Number.isSafeInteger(p.chainId) || p.chainId < 1) throw invalidBuild("chainId must be a positive safe integer")
  const address = getAddress(p.address.toLowerCase())
  const issuedAt = toRfc3339Utc(p.issuedAtMs, "issuedAtMs")
  const expirationTime = toRfc3339Utc(p.expirationTimeMs, "expirationTimeMs")
  if (p.expirationTimeMs <= p.issuedAtMs) throw invalidBuild("expirationTimeMs must be after issuedAtMs")
  const statement = p.statement === undefined || p.statement === "" ? undefined : p.statement

  const message = [
    `${p.domain} wants you to sign in with your Ethereum account:`,
    address,
    "",
    ...(statement === undefined ? [] : [statement]),
    "",
    `URI: ${p.uri}`,
    "Version: 1",
    `Chain ID: ${p.chainId}`,
    `Nonce: ${p.nonce}`,
    `Issued At: ${issuedAt}`,
    `Expiration Time: ${expirationTime}`,
  ].join("\n")

  const parsed = parseSiwe(message)
  if (Either.isLeft(parsed)) throw invalidBuild(`the inputs do not form a valid message (${parsed.left.message})`)
  const back = parsed.right
  const sameFields =
    back.scheme === undefined &&
    back.domain === p.domain &&
    back.address === address &&
    back.statement === statement &&
    back.uri === p.uri &&
    back.chainId === p.chainId &&
    back.nonce === p.nonce &&
    back.issuedAt === issuedAt &&
    back.expirationTime === expirationTime &&
    back.notBefore === undefined &&
    back.requestId === undefined &&
    back.resources === undefined
  if (!sameFields) throw invalidBuild("the inputs do not survive a parse round trip")
  return message
}

// ---------------------------------------------------------------------------------------------
// Parsing
// ---------------------------------------------------------------------------------------------

export interface ParsedSiwe {
  readonly domain: string
  /** As written in the message; the parser guarantees EIP-55. */
  readonly address: string
  readonly statement?: string
  readonly uri: string
  readonly version: string
  readonly chainId: number
  readonly nonce: string
  readonly issuedAt: string
  readonly expirationTime?: string
  readonly notBefore?: string
  readonly requestId?: string
  readonly resources?: ReadonlyArray<string>
  /** The optional `scheme://` before the domain. */
  readonly scheme?: string
}

const firstLine = (text: string): string => {
  const line = text.split("\n").find((l) => l.trim() !== "") ?? "unparseable"
  return line.length > 160 ? `${line.slice(0, 160)}…` : line
}

/**
 * Strict EIP-4361 parse with the ABNF grammar of `@spruceid/siwe-parser` (never viem's lenient
 * parser). On top of the grammar it refuses: messages longer than `SIWE_MAX_MESSAGE_LENGTH`,
 * chain ids that are not safe integers (the parser's `parseInt` would round them), and timestamps
 * that pass the grammar but that `Date.parse` cannot evaluate (a leap second `:60`), because we
 * could not compare them with the clock. Every failure is SIWE_MALFORMED.
 */
export const parseSiwe = (message: string): Either.Either<ParsedSiwe, SiweError> => {
  if (typeof message !== "string" || message.length === 0)
    return fail(new SiweMalformed({ message: "message is empty" }))
  if (message.length > SIWE_MAX_MESSAGE_LENGTH)
    return fail(new SiweMalformed({ message: `message is longer than ${SIWE_MAX_MESSAGE_LENGTH} characters` }))
  let m: ParsedMessage
  try {
    m = new ParsedMessage(message)
  } catch (e) {
    return fail(
      new SiweMalformed({
        message: `not an EIP-4361 message: ${firstLine(e instanceof Error ? e.message : String(e))}`,
      }),
    )
  }
  if (!Number.isSafeInteger(m.chainId) || m.chainId < 0)
    return fail(new SiweMalformed({ message: "Chain ID is not a safe integer" }))
  for (const [field, value] of [
    ["Issued At", m.issuedAt],
    ["Expiration Time", m.expirationTime],
    ["Not Before", m.notBefore],
  ] as const) {
    if (value !== undefined && !Number.isFinite(Date.parse(value)))
      return fail(new SiweMalformed({ message: `${field} is not a usable date-time` }))
  }
  return Either.right({
    domain: m.domain,
    address: m.address,
    ...(m.statement === undefined ? {} : { statement: m.statement }),
    uri: m.uri,
    version: m.version,
    chainId: m.chainId,
    nonce: m.nonce,
    issuedAt: m.issuedAt,
    ...(m.expirationTime === undefined ? {} : { expirationTime: m.expirationTime }),
    ...(m.notBefore === undefined ? {} : { notBefore: m.notBefore }),
    ...(m.requestId === undefined ? {} : { requestId: m.requestId }),
    ...(m.resources === undefined ? {} : { resources: [...m.resources] }),
    ...(m.scheme === undefined ? {} : { scheme: m.scheme }),
  })
}

// ---------------------------------------------------------------------------------------------
// Field checks
// ---------------------------------------------------------------------------------------------

export interface SiweExpectations {
  /** Our configured origin's authority (host[:port]), compared exactly. */
  readonly domain: string
  /** The URI we put in the message, compared exactly. */
  readonly uri: string
  readonly chainId: number
  /** The address the challenge was issued for, any case. */
  readonly address: string
  /** The nonce we issued, compared exactly (case-sensitive). */
  readonly nonce: string
  /** Server time in Unix milliseconds. */
  readonly nowMs: number
  /** Tolerance for an Issued At in the future; default `SIWE_DEFAULT_SKEW_MS`. */
  readonly skewMs?: number
}

const schemeOf = (uri: string): string | undefined => /^([A-Za-z][A-Za-z0-9+.-]*):/.exec(uri)?.[1]?.toLowerCase()

/**
 * Every field we must check ourselves, in this order: domain (and the optional `scheme://` prefix,
 * which must be our URI's scheme), URI, chain id (viem never checks it), address, nonce, Issued At
 * not later than now + skew, Expiration Time (when present) strictly after now, Not Before (when
 * present) not after now. Version is fixed to 1 by the grammar. An unusable clock (`nowMs` or
 * `skewMs` not finite, negative skew) fails closed as CHALLENGE_EXPIRED.
 */
export const checkSiwe = (parsed: ParsedSiwe, expect: SiweExpectations): Either.Either<void, SiweError> => {
  if (parsed.domain !== expect.domain)
    return fail(
      new SiweDomainMismatch({ message: `message domain ${quote(parsed.domain)} is not ${quote(expect.domain)}` }),
    )
  if (parsed.scheme !== undefined && parsed.scheme.toLowerCase() !== schemeOf(expect.uri))
    return fail(
      new SiweDomainMismatch({ message: `message scheme ${quote(parsed.scheme)} does not match our URI's scheme` }),
    )
  if (parsed.uri !== expect.uri)
    return fail(new SiweUriMismatch({ message: `message URI ${quote(parsed.uri)} is not ${quote(expect.uri)}` }))
  if (parsed.chainId !== expect.chainId)
    return fail(new SiweChainMismatch({ message: `message chain id ${parsed.chainId} is not ${expect.chainId}` }))
  if (parsed.address.toLowerCase() !== expect.address.toLowerCase())
    return fail(new SiweAddressMismatch({ message: "message address is not the address the challenge was issued for" }))
  if (parsed.nonce !== expect.nonce)
    return fail(new SiweNonceMismatch({ message: "message nonce is not the issued nonce" }))

  const now = expect.nowMs
  const skew = expect.skewMs ?? SIWE_DEFAULT_SKEW_MS
  if (!Number.isFinite(now) || !Number.isFinite(skew) || skew < 0)
    return fail(new ChallengeExpired({ message: "server time or skew is not usable; refusing" }))

  const issuedAt = Date.parse(parsed.issuedAt)
  if (!Number.isFinite(issuedAt)) return fail(new SiweMalformed({ message: "Issued At is not a usable date-time" }))
  if (issuedAt > now + skew) return fail(new ChallengeNotYetValid({ message: "Issued At is in the future" }))

  if (parsed.expirationTime !== undefined) {
    const expiresAt = Date.parse(parsed.expirationTime)
    if (!Number.isFinite(expiresAt))
      return fail(new SiweMalformed({ message: "Expiration Time is not a usable date-time" }))
    if (expiresAt <= now) return fail(new ChallengeExpired({ message: "the message has expired" }))
  }
  if (parsed.notBefore !== undefined) {
    const notBefore = Date.parse(parsed.notBefore)
    if (!Number.isFinite(notBefore)) return fail(new SiweMalformed({ message: "Not Before is not a usable date-time" }))
    if (notBefore > now) return fail(new ChallengeNotYetValid({ message: "Not Before is in the future" }))
  }
  return Either.void
}

/**
 * Convenience: `parseSiwe`, `checkSiwe`, `checkSignatureShape`, `verifySiweSignature`, in that
 * order, stopping at the first failure. The signature is verified for the address written in the
 * message (which `checkSiwe` has already matched to `expect.address`). Returns the parsed message.
 * Consuming the nonce (single use) is the caller's job.
 */
export const verifySiwe = (p: {
  message: string
  signature: string
  expect: SiweExpectations
  client?: PublicClient | undefined
}): Effect.Effect<ParsedSiwe, SiweError | SiweChainUnavailable> =>
  Effect.gen(function* () {
    const parsed = yield* parseSiwe(p.message)
    yield* checkSiwe(parsed, p.expect)
    yield* checkSignatureShape(p.signature)
    yield* verifySiweSignature({
      message: p.message,
      signature: p.signature as `0x${string}`,
      address: parsed.address as `0x${string}`,
      client: p.client,
    })
    return parsed
  })
