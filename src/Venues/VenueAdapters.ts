/**
 * One adapter per configured venue, looked up by venue id. Built from the deployment's VenueConfig plus the
 * venue-specific settings VenueConfig does not carry (Hyperliquid environment and spot token, Aster API chain and
 * the agent key resolver); unspecified settings take the documented mainnet values.
 */
import type { HttpClient } from "@effect/platform"
import { Context, Data, Effect } from "effect"
import type { VenueConfig } from "../Config.ts"
import { type AsterSettings, asterSettings, makeAsterAdapter } from "./AsterAdapter.ts"
import type { AsterAgentResolver } from "./AsterAgent.ts"
import { type HyperliquidSettings, hyperliquidSettings, makeHyperliquidAdapter } from "./HyperliquidAdapter.ts"
import type { VenueAdapter } from "./VenueAdapter.ts"

export class VenueConfigIncomplete extends Data.TaggedError("VenueConfigIncomplete")<{
  readonly venue: string
  readonly reason: string
}> {}

export interface VenueAdapterOptions {
  readonly hyperliquid?: Partial<HyperliquidSettings>
  /** Aster needs the agent resolver; the asset defaults to the venue's token symbol. */
  readonly aster?: Partial<AsterSettings> & { readonly agents?: AsterAgentResolver }
}

export const makeVenueAdapter = (
  venue: VenueConfig,
  options: VenueAdapterOptions = {},
): Effect.Effect<VenueAdapter, VenueConfigIncomplete, HttpClient.HttpClient> => {
  const apiUrl = venue.api_url
  if (apiUrl === undefined) {
    return Effect.fail(
      new VenueConfigIncomplete({ venue: venue.id, reason: "api_url is required for a venue adapter" }),
    )
  }
  if (venue.kind === "hyperliquid") {
    return makeHyperliquidAdapter(
      hyperliquidSettings({ ...options.hyperliquid, venueId: venue.id, apiUrl, decimals: venue.decimals }),
    )
  }
  const agents = options.aster?.agents
  if (agents === undefined) {
    return Effect.fail(
      new VenueConfigIncomplete({ venue: venue.id, reason: "an Aster adapter needs an agent resolver" }),
    )
  }
  return makeAsterAdapter(
    asterSettings({
      asset: venue.symbol,
      ...options.aster,
      agents,
      venueId: venue.id,
      apiUrl,
      decimals: venue.decimals,
      withdrawChainId: venue.chain_id,
    }),
  )
}

export interface VenueAdaptersShape {
  readonly get: (venueId: string) => VenueAdapter | undefined
  readonly all: ReadonlyArray<VenueAdapter>
}

export class VenueAdapters extends Context.Tag("VenueAdapters")<VenueAdapters, VenueAdaptersShape>() {
  static readonly fromList = (adapters: ReadonlyArray<VenueAdapter>): VenueAdaptersShape => {
    const byId = new Map(adapters.map((a) => [a.venueId, a]))
    return { get: (id) => byId.get(id), all: adapters }
  }
}
