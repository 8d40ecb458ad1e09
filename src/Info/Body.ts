/**
 * The info routes' wire schemas, shared by the contract (src/Info/Api.ts) and the service that encodes the bodies
 * once (src/Info.ts), and GET /v1/info's fixed part, built from the config.
 */
import { Schema } from "effect"
import type { AppConfigShape } from "../Config.ts"
import { Timestamp } from "../Domain/Primitives.ts"

/** The documentation's example deployment's chains (the devnet's: src/DevelopmentConfig.ts). */
const EXAMPLE_CHAINS = [
  { venue: "hyperliquid", chain_id: 999 },
  { venue: "aster", chain_id: 42161 },
].map((c) => ({
  ...c,
  token: "0x5fbdb2315678afecb367f032d93f642f64180aa3",
  symbol: "USDC",
  decimals: 6,
  escrow: "0xe7f1725e7734ce288f8367e1bb143e90bb3f0512",
  deployment_block: "0",
}))

const ChainInfo = Schema.Struct({
  venue: Schema.String,
  chain_id: Schema.Int,
  token: Schema.String,
  symbol: Schema.String,
  decimals: Schema.Int,
  escrow: Schema.String,
  deployment_block: Schema.String,
})

/** GET /v1/info's body (the OpenAPI component "Info"). */
export const InfoBody = Schema.Struct({
  api_version: Schema.Literal("v1"),
  server_time: Timestamp,
  operator: Schema.String,
  limits: Schema.Struct({
    requests_per_second: Schema.Int,
    request_burst: Schema.Int,
    body_bytes: Schema.Int,
    batch_orders: Schema.Int,
    lease_seconds_min: Schema.Int,
    lease_seconds_max: Schema.Int,
    quote_validity_seconds_max: Schema.Int,
    take_parts_max: Schema.Int,
    pay_window_seconds: Schema.Int,
    fill_max: Schema.String,
  }),
  settlement: Schema.Struct({
    maker_timeout_seconds: Schema.Int,
    taker_timeout_seconds: Schema.Int,
    lock_cutoff_seconds: Schema.Int,
    reveal_cutoff_seconds: Schema.Int,
    claim_window_seconds: Schema.Int.annotations({
      description:
        "Settlement v2: a lock outlives its payment's takerExpiry by at least this (the escrow's CLAIM_WINDOW)",
    }),
    pay_by_max_seconds: Schema.Int.annotations({
      description: "Settlement v2: the latest payBy a Fill may name, after its lock (the escrow's PAY_BY_MAX)",
    }),
    max_lock_seconds: Schema.Int.annotations({
      description: "Settlement v2: the longest a lock holds maker funds, hence the longest a close waits (MAX_LOCK)",
    }),
    max_quote_life_seconds: Schema.Int.annotations({
      description: "Settlement v2: a quote set's validUntil - issuedAt at most (the escrow's MAX_QUOTE_LIFE)",
    }),
    taker_timeout_min_seconds: Schema.Int.annotations({
      description: "Settlement v2: a Fill's takerExpiry - payBy at least (the escrow's TAKER_TIMEOUT_MIN)",
    }),
  }),
  chains: Schema.Array(ChainInfo),
  access: Schema.Struct({ mode: Schema.String, captcha_site_key: Schema.String }),
}).annotations({
  identifier: "Info",
  examples: [
    {
      api_version: "v1",
      server_time: "2025-06-02T09:30:00.123Z",
      operator: "0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266",
      limits: {
        requests_per_second: 60,
        request_burst: 120,
        body_bytes: 65536,
        batch_orders: 20,
        lease_seconds_min: 5,
        lease_seconds_max: 120,
        quote_validity_seconds_max: 300,
        take_parts_max: 8,
        pay_window_seconds: 120,
        fill_max: "1000000000000",
      },
      settlement: {
        maker_timeout_seconds: 1800,
        taker_timeout_seconds: 3600,
        lock_cutoff_seconds: 60,
        reveal_cutoff_seconds: 600,
        claim_window_seconds: 600,
        pay_by_max_seconds: 120,
        max_lock_seconds: 7200,
        max_quote_life_seconds: 300,
        taker_timeout_min_seconds: 900,
      },
      chains: EXAMPLE_CHAINS,
      access: { mode: "open", captcha_site_key: "" },
    },
  ],
})

/** One entry of GET /v1/venues (the OpenAPI component "Venue"). */
export const VenueBody = Schema.Struct({
  id: Schema.String,
  name: Schema.String,
  kind: Schema.String,
  chain_id: Schema.Int,
  token: Schema.String,
  symbol: Schema.String,
  decimals: Schema.Int,
  escrow: Schema.String,
  deployment_block: Schema.String,
}).annotations({ identifier: "Venue" })

/** GET /v1/venues' body. */
export const VenuesBody = Schema.Struct({ data: Schema.Array(VenueBody) }).annotations({
  examples: [
    {
      data: EXAMPLE_CHAINS.map(({ venue, ...chain }) => ({
        id: venue,
        name: venue === "aster" ? "Aster (devnet)" : "Hyperliquid (devnet)",
        kind: venue,
        ...chain,
      })),
    },
  ],
})

/** GET /v1/info without `server_time`: fixed for the process lifetime (the Info service builds it once). */
export const infoFixed = ({ deployment, operator }: AppConfigShape) => {
  const { limits, settlement, access } = deployment
  return {
    api_version: "v1" as const,
    operator,
    limits: {
      requests_per_second: limits.requests_per_second,
      request_burst: limits.request_burst,
      body_bytes: limits.body_bytes,
      batch_orders: limits.batch_orders,
      lease_seconds_min: limits.lease_seconds_min,
      lease_seconds_max: limits.lease_seconds_max,
      quote_validity_seconds_max: limits.quote_validity_seconds_max,
      take_parts_max: limits.take_parts_max,
      pay_window_seconds: limits.pay_window_seconds,
      fill_max: limits.fill_max,
    },
    settlement: {
      maker_timeout_seconds: settlement.maker_timeout_seconds,
      taker_timeout_seconds: settlement.taker_timeout_seconds,
      lock_cutoff_seconds: settlement.lock_cutoff_seconds,
      reveal_cutoff_seconds: settlement.reveal_cutoff_seconds,
      // Settlement v2 (DESIGN §6): the v2 escrows' CLAIM_WINDOW, PAY_BY_MAX, MAX_LOCK, MAX_QUOTE_LIFE and
      // TAKER_TIMEOUT_MIN (checked at start); makers bound a v2 set's validUntil − issuedAt by max_quote_life_seconds.
      claim_window_seconds: settlement.claim_window_seconds,
      pay_by_max_seconds: settlement.pay_by_max_seconds,
      max_lock_seconds: settlement.max_lock_seconds,
      max_quote_life_seconds: settlement.max_quote_life_seconds,
      taker_timeout_min_seconds: settlement.taker_timeout_min_seconds,
    },
    chains: deployment.venues.map((v) => ({
      venue: v.id,
      chain_id: v.chain_id,
      token: v.token.toLowerCase(),
      symbol: v.symbol,
      decimals: v.decimals,
      escrow: v.escrow.toLowerCase(),
      deployment_block: String(v.deployment_block),
    })),
    access: { mode: access.mode, captcha_site_key: access.captcha_site_key },
  }
}
