import { getAddress } from "viem"

/**
 * The text a venue account's owner signs (personal_sign) to link it to a master account. It names
 * the app, the venue, the address and the master, so a signature cannot be replayed for another
 * master or venue; the nonce is single-use and the message expires.
 */
export const buildLinkMessage = (p: {
  domain: string
  venue: string
  address: string
  master: string
  nonce: string
  issuedAtMs: number
  expirationTimeMs: number
}) =>
  [
    `${p.domain} asks you to link this address to a settlement account.`,
    "",
    `Venue: ${p.venue}`,
    `Address: ${getAddress(p.address)}`,
    `Master: ${getAddress(p.master)}`,
    `Nonce: ${p.nonce}`,
    `Issued At: ${new Date(p.issuedAtMs).toISOString()}`,
    `Expiration Time: ${new Date(p.expirationTimeMs).toISOString()}`,
  ].join("\n")
