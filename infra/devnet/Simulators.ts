// One venue simulator per devnet chain (infra/devnet/venues), its URL written as the venue's `api_url`.
//
// Loaded lazily, in parallel with the chains, like the other viem-heavy modules; typed by the simulators' own
// interface.
import type { Deployment } from "./Deploy.ts"
import { DEVNET_ROLES, type DevnetChainSpec, devnetKey, SIGNATURE_CHAIN_ID } from "./DevnetOptions.ts"
import type { VenueSimulator } from "./venues/VenueSimulator.ts"

export type { VenueSimulator }

/** Starts the simulator of one chain: deposits are read from the venue mock, withdrawals paid by anvil key #9. */
export const startSimulator = async (
  chain: { readonly spec: DevnetChainSpec; readonly deployment: Deployment; readonly rpcUrl: string },
  onError: (message: string) => void,
): Promise<VenueSimulator> => {
  const { startVenueSimulator } = await import("./venues/VenueSimulator.ts")
  return startVenueSimulator({
    kind: chain.spec.kind,
    port: chain.spec.apiPort,
    chainRpcUrl: chain.rpcUrl,
    chainId: chain.deployment.chainId,
    token: chain.deployment.contracts.token.address,
    marginMock: chain.deployment.contracts.venue.address,
    // TEST ONLY anvil key, funded with ETH and USDC on both chains.
    hotWalletKey: devnetKey(DEVNET_ROLES.simulatorHotWallet),
    signatureChainId: SIGNATURE_CHAIN_ID,
    // Deposits into the venue mock cannot predate it.
    fromBlock: BigInt(chain.deployment.contracts.venue.block),
    onError,
  })
}
