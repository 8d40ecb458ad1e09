// The service's deployment config (the JSON file named by SETTLEMENT_CONFIG) for a devnet run, built from the
// deployment record and this run's URLs.
import { Effect } from "effect"
import { privateKeyToAddress } from "viem/accounts"
import { decodeDeploymentConfig, VenueConfig } from "../../src/Config.ts"
import type { Deployment } from "./Deploy.ts"
import { DEVNET_ROLES, type DevnetChainSpec, devnetKey } from "./DevnetOptions.ts"

export interface RunningChain {
  readonly spec: DevnetChainSpec
  readonly deployment: Deployment
  readonly rpcUrl: string
  /** The venue simulator's URL, when simulators run. */
  readonly apiUrl: string | undefined
}

/**
 * The service's deployment config for this run. The operator is anvil account #0 (TEST ONLY), which deployed
 * everything and holds gas on both chains. Validated with the service's own schema before it is written, so a
 * drift between the two fails here with the field's path rather than in the child process.
 */
export const buildDevnetConfig = (chains: ReadonlyArray<RunningChain>) => {
  // `legacy_escrow` is only written when the service's schema knows it (the watcher work adds it; unknown
  // fields are rejected by the service).
  const withLegacy = "legacy_escrow" in VenueConfig.fields
  const config = {
    venues: chains.map(({ spec, deployment, rpcUrl, apiUrl }) => ({
      id: spec.venueId,
      name: spec.name,
      kind: spec.kind,
      chain_id: deployment.chainId,
      rpc_urls: [rpcUrl],
      token: deployment.contracts.token.address,
      symbol: deployment.token.symbol,
      decimals: deployment.token.decimals,
      escrow: deployment.contracts.escrow.address,
      deployment_block: Number(deployment.contracts.escrow.block),
      ...(apiUrl === undefined ? {} : { api_url: apiUrl }),
      ...(withLegacy ? { legacy_escrow: deployment.contracts.legacyEscrow.address } : {}),
    })),
    app_origins: ["http://localhost:5173", "http://127.0.0.1:5173"],
    admins: [privateKeyToAddress(devnetKey(DEVNET_ROLES.admin))],
    // TEST ONLY: anvil's well-known account #0, public to everyone.
    operator_key: devnetKey(DEVNET_ROLES.operator),
    access: { mode: "open" },
  }
  return Effect.as(decodeDeploymentConfig(config, "the generated devnet config"), config)
}
