import { HttpApiBuilder } from "@effect/platform"
import { Clock, Effect } from "effect"
import { AppConfig } from "../Config.ts"
import { toRfc3339 } from "../Domain/Primitives.ts"
import { Api } from "./Api.ts"

export const InfoHandlers = HttpApiBuilder.group(Api, "info", (handlers) =>
  Effect.gen(function* () {
    const { deployment, operator } = yield* AppConfig
    const { limits, settlement, access } = deployment
    // Everything but server_time is fixed for the process lifetime: build it once.
    const chains = deployment.venues.map((v) => ({
      venue: v.id,
      chain_id: v.chain_id,
      token: v.token.toLowerCase(),
      symbol: v.symbol,
      decimals: v.decimals,
      escrow: v.escrow.toLowerCase(),
      deployment_block: String(v.deployment_block),
    }))
    const fixed = {
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
      },
      chains,
      access: { mode: access.mode, captcha_site_key: access.captcha_site_key },
    }
    const venues = {
      data: deployment.venues.map((v, i) => ({ id: v.id, name: v.name, kind: v.kind, ...omitVenue(chains[i]!) })),
    }
    return handlers
      .handle("info", () => Effect.map(Clock.currentTimeMillis, (now) => ({ ...fixed, server_time: toRfc3339(now) })))
      .handle("venues", () => Effect.succeed(venues))
  }),
)

const omitVenue = ({ venue: _venue, ...rest }: { venue: string } & Record<string, unknown>) =>
  rest as {
    chain_id: number
    token: string
    symbol: string
    decimals: number
    escrow: string
    deployment_block: string
  }
