import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { Timestamp } from "../Domain/Primitives.ts"

const ChainInfo = Schema.Struct({
  venue: Schema.String,
  chain_id: Schema.Int,
  token: Schema.String,
  symbol: Schema.String,
  decimals: Schema.Int,
  escrow: Schema.String,
  deployment_block: Schema.String,
})

export const Info = Schema.Struct({
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
}).annotations({ identifier: "Info" })

export const Venue = Schema.Struct({
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

export class InfoApi extends HttpApiGroup.make("info")
  .add(
    HttpApiEndpoint.get("info", "/v1/info")
      .addSuccess(Info)
      .annotate(OpenApi.Description, "The deployment's own values. Not a trust root for signing."),
  )
  .add(HttpApiEndpoint.get("venues", "/v1/venues").addSuccess(Schema.Struct({ data: Schema.Array(Venue) })))
  .annotate(OpenApi.Title, "Deployment") {}
