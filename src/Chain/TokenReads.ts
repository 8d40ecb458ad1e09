import { Data, Effect } from "effect"
import { type Address, getAddress, type PublicClient } from "viem"
import type { TokenDomain } from "../Domain/Permit.ts"
import { mockUSDCAbi } from "./artifacts/index.ts"

export class TokenReadFailed extends Data.TaggedError("TokenReadFailed")<{ readonly message: string }> {}

const eip712DomainAbi = [
  {
    type: "function",
    name: "eip712Domain",
    stateMutability: "view",
    inputs: [],
    outputs: [
      { name: "fields", type: "bytes1" },
      { name: "name", type: "string" },
      { name: "version", type: "string" },
      { name: "chainId", type: "uint256" },
      { name: "verifyingContract", type: "address" },
      { name: "salt", type: "bytes32" },
      { name: "extensions", type: "uint256[]" },
    ],
  },
] as const

const read = <A>(what: string, f: () => Promise<A>) =>
  Effect.tryPromise({ try: f, catch: () => new TokenReadFailed({ message: `could not read ${what} from the chain` }) })

/**
 * The token's permit domain (ERC-5267) and the owner's permit nonce and balance. Only the fields
 * the token declares are used: viem's getEip712Domain reports a zero salt the token excludes, which
 * would make every permit invalid.
 */
export const readPermitContext = (client: PublicClient, token: string, owner: string) =>
  Effect.gen(function* () {
    const address = getAddress(token) as Address
    const [fields, name, version, chainId, verifyingContract] = yield* read("the token's EIP-712 domain", () =>
      client.readContract({ address, abi: eip712DomainAbi, functionName: "eip712Domain" }),
    )
    if ((Number.parseInt(fields, 16) & 0x0f) !== 0x0f) {
      return yield* new TokenReadFailed({ message: "the token's permit domain is not name/version/chainId/contract" })
    }
    const [nonce, balance] = yield* read("the owner's permit nonce and balance", () =>
      Promise.all([
        client.readContract({ address, abi: mockUSDCAbi, functionName: "nonces", args: [getAddress(owner)] }),
        client.readContract({ address, abi: mockUSDCAbi, functionName: "balanceOf", args: [getAddress(owner)] }),
      ]),
    )
    const domain: TokenDomain = { name, version, chainId: Number(chainId), verifyingContract }
    return { domain, nonce, balance }
  })

/** The owner's token balance (base units) at the node's latest block. */
export const readTokenBalance = (client: PublicClient, token: string, owner: string) =>
  read("the wallet's token balance", () =>
    client.readContract({
      address: getAddress(token),
      abi: mockUSDCAbi,
      functionName: "balanceOf",
      args: [getAddress(owner)],
    }),
  )
