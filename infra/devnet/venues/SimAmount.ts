// The simulators' own decimal handling, written independently of src/Venues/DecimalAmount.ts on purpose: a
// simulator that reused the adapter's code would agree with the adapter's bugs.
//
// A venue reads the amount string it was sent (and signed) as an exact decimal. Non-canonical spellings such as
// "12.50" are valid numbers; what matters for the signature is that the string is the one that was signed.

/** Exact value of a plain decimal in units of 10^-decimals, or undefined (bad syntax or too many places). */
export const parseUnits = (text: string, decimals: number): bigint | undefined => {
  const m = /^([0-9]+)(?:\.([0-9]+))?$/.exec(text)
  if (m === null) return undefined
  const whole = m[1] ?? "0"
  const frac = (m[2] ?? "").replace(/0+$/, "")
  if (frac.length > decimals) return undefined
  return BigInt(whole) * 10n ** BigInt(decimals) + BigInt(frac.padEnd(decimals, "0") || "0")
}

/** Units → plain decimal with at least `minPlaces` places (Hyperliquid "0.0", Aster 8 places). */
export const formatUnits = (units: bigint, decimals: number, minPlaces = 0): string => {
  const negative = units < 0n
  const abs = negative ? -units : units
  const scale = 10n ** BigInt(decimals)
  let frac = (abs % scale).toString().padStart(decimals, "0").replace(/0+$/, "")
  if (frac.length < minPlaces) frac = frac.padEnd(minPlaces, "0")
  const text = frac === "" ? (abs / scale).toString() : `${abs / scale}.${frac}`
  return negative ? `-${text}` : text
}
