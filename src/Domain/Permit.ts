import { type Address, getAddress } from "viem"

/** EIP-2612 `Permit`, as the token verifies it (domain read from the token itself, ERC-5267). */
export const permitTypes = {
  Permit: [
    { name: "owner", type: "address" },
    { name: "spender", type: "address" },
    { name: "value", type: "uint256" },
    { name: "nonce", type: "uint256" },
    { name: "deadline", type: "uint256" },
  ],
} as const

export interface TokenDomain {
  readonly name: string
  readonly version: string
  readonly chainId: number
  readonly verifyingContract: Address
}

export const permitTypedData = (
  domain: TokenDomain,
  p: { owner: string; spender: string; value: bigint; nonce: bigint; deadline: bigint },
) => ({
  domain,
  types: permitTypes,
  primaryType: "Permit" as const,
  message: {
    owner: getAddress(p.owner),
    spender: getAddress(p.spender),
    value: p.value,
    nonce: p.nonce,
    deadline: p.deadline,
  },
})
