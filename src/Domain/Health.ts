import { HttpApiSchema } from "@effect/platform"
import { Schema } from "effect"
import { Alert } from "./Alerts.ts"
import { Timestamp } from "./Primitives.ts"

/** One chain's entry of GET /health. Block numbers are decimal strings (lossless). */
export const ChainHealth = Schema.Struct({
  venue: Schema.String,
  chain_id: Schema.Int,
  ready: Schema.Boolean,
  block: Schema.String,
  finalized_block: Schema.String,
  checked_at: Schema.NullOr(Timestamp),
  finalized_at: Schema.NullOr(Timestamp),
  error: Schema.String,
  operator_gas: Schema.String,
  integrity_checked_at: Schema.NullOr(Timestamp),
  integrity_completed_at: Schema.NullOr(Timestamp),
  integrity_error: Schema.String,
  integrity_mismatch: Schema.Boolean,
}).annotations({ identifier: "ChainHealth" })
export type ChainHealth = typeof ChainHealth.Type

/**
 * Supervision beside the spec's fields (DESIGN §4): from the status row each runner rewrites about
 * every 2 s, so every runner answers the same. Not part of the ok/degraded rule.
 */
export const ClusterHealth = Schema.Struct({
  actors: Schema.Array(
    Schema.Struct({
      kind: Schema.String.annotations({ description: "actor kind, e.g. venue-watcher (one per venue)" }),
      active: Schema.Int.pipe(Schema.nonNegative()).annotations({ description: "instances running on live runners" }),
      restarts: Schema.Int.pipe(Schema.nonNegative()).annotations({
        description: "restarts after a failure, summed over listed runners since each started",
      }),
      last_failure: Schema.NullOr(Schema.Struct({ message: Schema.String, at: Timestamp, runner: Schema.String })),
      mailbox_depth: Schema.Int.pipe(Schema.nonNegative()).annotations({
        description: "unprocessed persisted messages (cluster_messages) of this entity type",
      }),
    }).annotations({ identifier: "ActorStatus" }),
  ),
  mailbox_depth: Schema.Int.pipe(Schema.nonNegative()).annotations({
    description: "unprocessed persisted messages (cluster_messages), all kinds",
  }),
  runners: Schema.Array(
    Schema.Struct({
      address: Schema.String,
      alive: Schema.Boolean.annotations({ description: "heartbeat younger than the shard lock expiration (6 s)" }),
      heartbeat_age_ms: Schema.Int.pipe(Schema.nonNegative()),
      shards: Schema.Int.pipe(Schema.nonNegative()),
      singletons: Schema.Array(Schema.String).annotations({ description: "singletons whose body runs there now" }),
    }).annotations({ identifier: "RunnerStatus" }),
  ),
}).annotations({ identifier: "ClusterHealth" })
export type ClusterHealth = typeof ClusterHealth.Type

const healthFields = {
  ready: Schema.Boolean,
  server_time: Timestamp,
  pending_transactions: Schema.Int.pipe(Schema.nonNegative()),
  chains: Schema.Array(ChainHealth),
  journal_unpublished: Schema.Int.pipe(Schema.nonNegative()),
  journal_oldest_unpublished_seconds: Schema.Int,
  cluster: ClusterHealth,
  /** What waits for a person (src/Domain/Alerts.ts), beside the spec's fields. */
  alerts: Schema.Array(Alert),
}

/** 200: every chain fresh at its final head, gas sufficient, < 32 pending transactions, no mismatch. */
export class HealthOk extends Schema.Class<HealthOk>("HealthOk")({
  status: Schema.Literal("ok"),
  ...healthFields,
}) {}

/** 503 with the same body shape (not the error envelope), as the spec requires. */
export class HealthDegraded extends Schema.Class<HealthDegraded>("HealthDegraded")(
  { status: Schema.Literal("degraded"), ...healthFields },
  HttpApiSchema.annotations({
    status: 503,
    description: "Not ready: same body as 200, status degraded.",
  }),
) {}

/** Readiness queue limit from the spec: fewer than 32 pending transactions. */
export const MAX_PENDING_FOR_READY = 32
