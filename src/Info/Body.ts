import type { AppConfigShape } from "../Config.ts"

/**
 * GET /v1/info without `server_time`: fixed for the process lifetime, built once, served by the
 * HttpApi handler.
 */
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
