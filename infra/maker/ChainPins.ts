/**
 * The chain ids a v2 maker signs for come from its own endpoints (`--rpc`), never from the service's venue list:
 * a FundOrder, a permit or a quote set is an EIP-712 message whose domain names a chain, and a service that named
 * another chain (where it deployed a contract at the reviewed address) would get a signature valid there. Setup and
 * `run` stop, with nothing signed, when the service's chain id for a venue differs from the endpoint's eth_chainId.
 */
import { createPublicClient, http } from "viem"
import { UsageError } from "./MakerOptions.ts"

/** eth_chainId of an endpoint. */
export const endpointChainId = (url: string): Promise<number> =>
  createPublicClient({ transport: http(url) }).getChainId()

/**
 * Checks that each venue in `ids` has the chain id its endpoint in `rpc` reports. Returns the venues unchanged;
 * throws a UsageError naming the first venue that differs, or one with no endpoint.
 */
export const pinChainIds = async <V extends { readonly id: string; readonly chain_id: number }>(
  venues: ReadonlyArray<V>,
  rpc: Readonly<Record<string, string>>,
  ids: ReadonlyArray<string>,
  chainIdOf: (url: string) => Promise<number> = endpointChainId,
): Promise<ReadonlyArray<V>> => {
  for (const id of new Set(ids)) {
    const venue = venues.find((v) => v.id === id)
    if (venue === undefined) throw new UsageError(`the service lists no venue ${id}`)
    const url = rpc[id]
    if (url === undefined) throw new UsageError(`a v2 order needs --rpc ${id}=URL (your own endpoint)`)
    const own = await chainIdOf(url)
    if (own !== venue.chain_id) {
      throw new UsageError(
        `venue ${id}: the service says chain ${venue.chain_id}, your endpoint says chain ${own}; nothing signed`,
      )
    }
  }
  return venues
}
