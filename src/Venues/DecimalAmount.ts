/**
 * Token amounts as whole-token decimal strings ("12.5") ↔ base units (bigint), with exact integer arithmetic.
 *
 * The service counts base units (spec: Wire conventions 2); the venues sign whole-token strings inside their
 * typed data (Hyperliquid `usdSend`/`withdraw3`/`sendAsset`, Aster `Action`). A venue hashes the string exactly as
 * sent, so the string we put in the typed data is the string we send, and it is always the canonical form:
 *
 *   - no sign, no exponent, no thousands separators;
 *   - the integer part without leading zeros ("0" below one token);
 *   - the fraction without trailing zeros, and no "." at all when the fraction is zero.
 *
 * That is what nktkas/hyperliquid's `normalizeDecimalString` yields for a well-formed decimal ("12.50" → "12.5",
 * "00123" → "123", "1.0" → "1") and what Aster asks for ("Trailing zeros in Amount and Fee must be stripped").
 * No floating point anywhere: a value that cannot be written exactly is refused, never rounded.
 */
import { Data, Either } from "effect"

export type AmountProblem = "negative" | "zero" | "syntax" | "precision" | "decimals"

export class AmountNotRepresentable extends Data.TaggedError("AmountNotRepresentable")<{
  readonly problem: AmountProblem
  readonly message: string
}> {}

const fail = (problem: AmountProblem, message: string) => Either.left(new AmountNotRepresentable({ problem, message }))

/** A venue or token decimals count we can handle: 0 to 77 (10^77 still fits uint256). */
export const isValidDecimals = (decimals: number): boolean =>
  Number.isSafeInteger(decimals) && decimals >= 0 && decimals <= 77

/** The canonical whole-token form (see the module comment). */
export const CANONICAL_WHOLE_TOKENS = /^(0|[1-9][0-9]*)(\.[0-9]*[1-9])?$/

/** Any plain decimal: digits, optionally "." and more digits. Leading/trailing zeros allowed; ".5" and "5." not. */
const PLAIN_DECIMAL = /^([0-9]+)(?:\.([0-9]+))?$/

export const isCanonicalWholeTokens = (text: string): boolean => CANONICAL_WHOLE_TOKENS.test(text)

/**
 * Base units → the canonical whole-token string. `maxFractionDigits` (≤ decimals) is the venue's own precision:
 * an amount with a non-zero digit beyond it is refused (e.g. an 18-decimal token on a venue that keeps 6).
 */
export const toWholeTokens = (
  baseUnits: bigint,
  decimals: number,
  maxFractionDigits: number = decimals,
): Either.Either<string, AmountNotRepresentable> => {
  if (!isValidDecimals(decimals)) return fail("decimals", `unsupported token decimals ${decimals}`)
  if (baseUnits < 0n) return fail("negative", "an amount cannot be negative")
  const scale = 10n ** BigInt(decimals)
  const whole = baseUnits / scale
  const fraction = (baseUnits % scale).toString().padStart(decimals, "0").replace(/0+$/, "")
  if (fraction.length > Math.max(0, maxFractionDigits)) {
    return fail(
      "precision",
      `${baseUnits} base units need ${fraction.length} decimal places; the venue keeps ${maxFractionDigits}`,
    )
  }
  return Either.right(fraction === "" ? whole.toString() : `${whole}.${fraction}`)
}

/**
 * A plain decimal string → base units, exactly. Accepts non-canonical spellings ("12.50", "012") because they
 * denote exact values; refuses anything that needs more than `decimals` places (a non-zero digit beyond them).
 */
export const fromWholeTokens = (text: string, decimals: number): Either.Either<bigint, AmountNotRepresentable> => {
  if (!isValidDecimals(decimals)) return fail("decimals", `unsupported token decimals ${decimals}`)
  const match = PLAIN_DECIMAL.exec(text)
  if (match === null) return fail("syntax", `not a plain decimal number: ${JSON.stringify(text.slice(0, 80))}`)
  const integer = match[1] ?? "0"
  const fraction = (match[2] ?? "").replace(/0+$/, "")
  if (fraction.length > decimals) {
    return fail("precision", `${text} has more than ${decimals} significant decimal places`)
  }
  return Either.right(BigInt(integer) * 10n ** BigInt(decimals) + BigInt(fraction.padEnd(decimals, "0") || "0"))
}

/**
 * A balance reported by a venue → base units, rounded down. A venue may keep more places than the token (Aster
 * reports 8); rounding down never overstates what can be withdrawn. A negative balance reads as zero.
 */
export const fromWholeTokensFloor = (text: string, decimals: number): Either.Either<bigint, AmountNotRepresentable> => {
  if (!isValidDecimals(decimals)) return fail("decimals", `unsupported token decimals ${decimals}`)
  const negative = text.startsWith("-")
  const match = PLAIN_DECIMAL.exec(negative ? text.slice(1) : text)
  if (match === null) return fail("syntax", `not a plain decimal number: ${JSON.stringify(text.slice(0, 80))}`)
  if (negative) return Either.right(0n)
  const integer = match[1] ?? "0"
  const fraction = (match[2] ?? "").slice(0, decimals)
  return Either.right(BigInt(integer) * 10n ** BigInt(decimals) + BigInt(fraction.padEnd(decimals, "0") || "0"))
}

/** Any plain decimal → its canonical spelling ("012.50" → "12.5"); refuses what is not a plain decimal. */
export const normalizeWholeTokens = (text: string): Either.Either<string, AmountNotRepresentable> => {
  const match = PLAIN_DECIMAL.exec(text)
  if (match === null) return fail("syntax", `not a plain decimal number: ${JSON.stringify(text.slice(0, 80))}`)
  const integer = (match[1] ?? "").replace(/^0+/, "") || "0"
  const fraction = (match[2] ?? "").replace(/0+$/, "")
  return Either.right(fraction === "" ? integer : `${integer}.${fraction}`)
}

/** `baseUnits` rounded up to a multiple of `step` (the venue's smallest signable amount). */
export const roundUpTo = (baseUnits: bigint, step: bigint): bigint => ((baseUnits + step - 1n) / step) * step

/** The amount a withdrawal signs: strictly positive and exactly representable at the venue's precision. */
export const withdrawalAmount = (
  baseUnits: bigint,
  decimals: number,
  maxFractionDigits: number = decimals,
): Either.Either<string, AmountNotRepresentable> =>
  baseUnits === 0n
    ? fail("zero", "a withdrawal amount must be positive")
    : toWholeTokens(baseUnits, decimals, maxFractionDigits)
