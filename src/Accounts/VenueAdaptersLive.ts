/**
 * The VenueAdapters registry of a deployment: one adapter per configured venue that has an `api_url`, speaking to
 * it over fetch (FetchHttpClient), with Aster requests signed by the account's agent from the database
 * (src/Accounts/VenueAgents.ts). A venue whose adapter cannot be built is left out and logged: its withdrawals answer
 * VENUE_UNAVAILABLE instead of taking the whole service down.
 *
 * One instance per process: HandlersLive and the WithdrawalDesk provide this same layer value, which Effect builds
 * once (layers are memoised by reference), so Aster request nonces come from a single strictly increasing source.
 */
import { FetchHttpClient } from "@effect/platform"
import { SqlClient } from "@effect/sql"
import { Effect, Exit, Layer } from "effect"
import { AppConfig, type VenueConfig } from "../Config.ts"
import type { AsterAgentResolver } from "../Venues/AsterAgent.ts"
import type { HyperliquidSettings } from "../Venues/HyperliquidAdapter.ts"
import type { VenueAdapter } from "../Venues/VenueAdapter.ts"
import { makeVenueAdapter, type VenueAdapterOptions, VenueAdapters } from "../Venues/VenueAdapters.ts"
import { agentKeyring, databaseAgentResolver } from "./VenueAgents.ts"

/** The adapter options a venue's `venue_api` settings give (only the fields that are set). */
export const adapterOptions = (venue: VenueConfig, agents: AsterAgentResolver): VenueAdapterOptions => {
  const api = venue.venue_api
  if (venue.kind === "hyperliquid") {
    const hyperliquid: { -readonly [K in keyof HyperliquidSettings]?: HyperliquidSettings[K] } = {
      hyperliquidChain: api.hyperliquid_chain,
      signatureChainId: api.signature_chain_id,
      requestTimeoutMs: api.request_timeout_ms,
    }
    if (api.usdc_token !== undefined) hyperliquid.usdcToken = api.usdc_token
    if (api.nonce_window_past_ms !== undefined || api.nonce_window_future_ms !== undefined) {
      hyperliquid.nonceWindow = {
        pastMs: api.nonce_window_past_ms ?? 2 * 86_400_000,
        futureMs: api.nonce_window_future_ms ?? 86_400_000,
      }
    }
    return { hyperliquid }
  }
  return {
    aster: {
      agents,
      signatureChainId: api.signature_chain_id,
      requestTimeoutMs: api.request_timeout_ms,
      ...(api.api_chain_id === undefined ? {} : { apiChainId: api.api_chain_id }),
      ...(api.asset === undefined ? {} : { asset: api.asset }),
      ...(api.wallet_chain_id === undefined ? {} : { walletChainId: api.wallet_chain_id }),
    },
  }
}

export const VenueAdaptersLive = Layer.effect(
  VenueAdapters,
  Effect.gen(function* () {
    const { deployment } = yield* AppConfig
    const sql = yield* SqlClient.SqlClient
    const ring = agentKeyring(deployment)
    const adapters: Array<VenueAdapter> = []
    for (const venue of deployment.venues) {
      if (venue.api_url === undefined) continue
      const built = yield* Effect.exit(
        makeVenueAdapter(venue, adapterOptions(venue, databaseAgentResolver(sql, ring, venue.id))),
      )
      if (Exit.isSuccess(built)) adapters.push(built.value)
      else yield* Effect.logWarning(`venue ${venue.id}: no venue adapter; its withdrawals are unavailable`, built.cause)
    }
    return VenueAdapters.fromList(adapters)
  }),
).pipe(Layer.provide(FetchHttpClient.layer))
