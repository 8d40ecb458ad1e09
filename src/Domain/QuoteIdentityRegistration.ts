import { type Address, getAddress } from "viem"

/**
 * What a maker's signing key signs to register a credential quote identity: proof that the key
 * exists and consents to quote for this master. Its own domain name keeps it apart from every
 * escrow message; chain id and the auth chain's escrow bind it to this deployment.
 */
export const quoteIdentityRegistrationTypes = {
  QuoteIdentityRegistration: [
    { name: "master", type: "address" },
    { name: "signer", type: "address" },
    { name: "purpose", type: "string" },
  ],
} as const

export const REGISTRATION_PURPOSE = "Register this key as a quote signer. It signs quote sets, never moves funds."

export const quoteIdentityRegistrationTypedData = (p: {
  chainId: number
  verifyingContract: string
  master: string
  signer: string
}) => ({
  domain: {
    name: "SettlementService",
    version: "1",
    chainId: p.chainId,
    verifyingContract: getAddress(p.verifyingContract) as Address,
  },
  types: quoteIdentityRegistrationTypes,
  primaryType: "QuoteIdentityRegistration" as const,
  message: {
    master: getAddress(p.master) as Address,
    signer: getAddress(p.signer) as Address,
    purpose: REGISTRATION_PURPOSE,
  },
})
