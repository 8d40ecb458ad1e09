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
/**
 * The `settlement` v2 values: the deployed v2 escrows' immutables (every chain is deployed with the same ones,
 * DEVNET_TIMING_V2), and `escrow_version: 2` so the devnet's new orders, takes and transfers settle on v2. Omitted
 * when no v2 escrow is deployed (then everything stays on v1).
 */
const settlementV2Of = (chains: ReadonlyArray<RunningChain>) => {
  const t = chains.find((c) => c.deployment.escrowV2Timing !== undefined)?.deployment.escrowV2Timing
  if (t === undefined) return {}
  return {
    settlement: {
      escrow_version: 2,
      max_lock_seconds: t.maxLockSeconds,
      pay_by_max_seconds: t.payByMaxSeconds,
      claim_window_seconds: t.claimWindowSeconds,
      max_quote_life_seconds: t.maxQuoteLifeSeconds,
      taker_timeout_min_seconds: t.takerTimeoutMinSeconds,
    },
  }
}

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
      // Settlement v2 beside v1 (the service checks its immutables against `settlement` at start).
      ...(deployment.contracts.escrowV2 === undefined
        ? {}
        : {
            escrow_v2: {
              address: deployment.contracts.escrowV2.address,
              deployment_block: Number(deployment.contracts.escrowV2.block),
            },
          }),
    })),
    app_origins: ["http://localhost:5173", "http://127.0.0.1:5173"],
    admins: [privateKeyToAddress(devnetKey(DEVNET_ROLES.admin))],
    // TEST ONLY: anvil's well-known account #0, public to everyone.
    operator_key: devnetKey(DEVNET_ROLES.operator),
    access: { mode: "open" },
    ...settlementV2Of(chains),
  }
  return Effect.as(decodeDeploymentConfig(config, "the generated devnet config"), config)
}
