/**
 * Aster request bodies (research/venues.md §1, §5.3): `application/x-www-form-urlencoded`, parameters in a fixed
 * order, `signature` always last.
 *
 * A V3 request is signed over its own query string (`msg` = every parameter but `signature`, URL-encoded as
 * Python's `urllib.parse.urlencode` does in the venue's reference code), so the body we send must be
 * byte-identical to what was signed: we build the string once and use it for both. Values here are addresses,
 * integers, asset names and plain decimals, for which every common encoder agrees; the encoder below is
 * `quote_plus` (unreserved `A–Z a–z 0–9 _ . - ~` kept, space → "+", everything else %XX of UTF-8).
 */
import type { FormPairs } from "../Domain/AsterSignedPayloads.ts"

export type { FormPairs }

const UNRESERVED = /[A-Za-z0-9_.\-~]/

export const encodeFormComponent = (value: string): string => {
  let out = ""
  for (const ch of value) {
    if (UNRESERVED.test(ch)) out += ch
    else if (ch === " ") out += "+"
    else for (const byte of Buffer.from(ch, "utf8")) out += `%${byte.toString(16).toUpperCase().padStart(2, "0")}`
  }
  return out
}

/** `k1=v1&k2=v2…` in the given order. */
export const encodeForm = (pairs: FormPairs): string =>
  pairs.map(([k, v]) => `${encodeFormComponent(k)}=${encodeFormComponent(v)}`).join("&")

/** The V3 authentication parameters, appended after the endpoint's own (docs: `nonce`, `user`, `signer`). */
export const withV3Envelope = (
  params: FormPairs,
  envelope: { readonly nonce: number; readonly user: string; readonly signer: string },
): FormPairs => [
  ...params,
  ["nonce", String(envelope.nonce)],
  ["user", envelope.user.toLowerCase()],
  ["signer", envelope.signer.toLowerCase()],
]

/** The final body: the signed string, then `&signature=`. */
export const withSignature = (signed: string, signature: string): string => `${signed}&signature=${signature}`
