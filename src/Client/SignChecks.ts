/**
 * What the typed client checks before a wallet signs a sign-in or an account link (spec, POST /v1/auth/challenge
 * rule 1: the client checks the message's domain, URI, address and expiry; DESIGN §12: never sign what the service
 * hands over unchecked). A service that slipped another site's sign-in, a Permit, a venue withdrawal or an agent
 * with trading or withdrawal rights into a challenge gets no signature. Pure; browser-safe.
 */
import { Either } from "effect"
import { type Address, getAddress, isAddress } from "viem"
import { parseAgentApproval } from "../Domain/AsterSignedPayloads.ts"
import { parseSiwe } from "../Domain/Siwe.ts"

export interface SignExpectations {
  /** The wallet's address. */
  readonly address: string
  /** The application origin the service signs users in for (its SIWE domain and URI); unchecked when omitted. */
  readonly appOrigin?: string | undefined
  /** The client's clock, Unix milliseconds. */
  readonly nowMs: number
}

const sameAddress = (a: string | undefined, b: string) => a !== undefined && a.toLowerCase() === b.toLowerCase()

const expired = (at: string | undefined, nowMs: number) => at === undefined || !(Date.parse(at) > nowMs)

/** Why the sign-in message must not be signed, or undefined: an EIP-4361 message for this address (and origin). */
export const signInProblem = (message: string, expect: SignExpectations): string | undefined => {
  const parsed = parseSiwe(message)
  if (Either.isLeft(parsed)) return "it is not a Sign-In with Ethereum message"
  const m = parsed.right
  if (!sameAddress(m.address, expect.address)) return "it signs in another address"
  if (expect.appOrigin !== undefined) {
    const origin = new URL(expect.appOrigin)
    if (m.domain !== origin.host || m.uri !== origin.origin) return `it does not sign in to ${origin.origin}`
  }
  if (expired(m.expirationTime, expect.nowMs)) return "it has no expiry in the future"
  return undefined
}

/** The link message's lines (src/Domain/LinkMessage.ts builds them). */
const LINK_FIRST = /^(\S+) asks you to link this address to a settlement account\.$/

/**
 * Why the link challenge must not be signed, or undefined. A message: exactly the service's link message for this
 * address, venue and master (and origin), not expired. Typed data: only the agent-approval venue's approval for this
 * address granting nothing (every permission false, no IP whitelist), whose body is the challenge's message.
 */
export const linkProblem = (
  challenge: { readonly message: string; readonly typed_data?: unknown },
  expect: SignExpectations & { readonly venue: string; readonly master: string },
): string | undefined => {
  if (challenge.typed_data !== undefined) {
    if (!isAddress(expect.address)) return "the wallet's address is not an address"
    // biome-ignore lint/suspicious/noExplicitAny: typed data as proposed on the wire (checked by the parser)
    const td = challenge.typed_data as any
    const parsed = parseAgentApproval(td, {
      user: getAddress(expect.address) as Address,
      signatureChainId: Number(td?.domain?.chainId),
    })
    if (Either.isLeft(parsed)) return `it is not an agent approval granting nothing: ${parsed.left}`
    if (td.message.msg !== challenge.message) return "the approval's body is not the challenge's message"
    return undefined
  }
  const lines = challenge.message.split("\n")
  const first = LINK_FIRST.exec(lines[0] ?? "")
  const field = (i: number, name: string) =>
    lines[i]?.startsWith(`${name}: `) ? lines[i]!.slice(name.length + 2) : undefined
  if (lines.length !== 8 || first === null || lines[1] !== "") return "it is not the service's link message"
  if (expect.appOrigin !== undefined && first[1] !== new URL(expect.appOrigin).host) {
    return `it is not a link for ${new URL(expect.appOrigin).origin}`
  }
  if (field(2, "Venue") !== expect.venue) return `it links another venue than ${expect.venue}`
  if (!sameAddress(field(3, "Address"), expect.address)) return "it links another address"
  if (!sameAddress(field(4, "Master"), expect.master)) return "it links to another account"
  if (field(5, "Nonce") === undefined || field(6, "Issued At") === undefined)
    return "it is not the service's link message"
  if (expired(field(7, "Expiration Time"), expect.nowMs)) return "it has no expiry in the future"
  return undefined
}
