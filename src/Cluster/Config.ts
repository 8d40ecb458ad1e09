import { ShardingConfig } from "@effect/cluster"
import { Duration } from "effect"

/**
 * The cluster's timings, the one place they are set (research/effect-stack.md §5b). A SIGKILLed
 * runner's advisory locks go at once, but survivors keep it in their hash ring until it is marked
 * unhealthy (a ping every `runnerHealthCheckInterval`, ~2.5 s of retries) or its heartbeat is older
 * than `shardLockExpiration`; they look every `refreshAssignmentsInterval`. With these a SIGKILLed
 * runner's singletons move in a few seconds (the defaults took 30 s; README "Several instances").
 * Advisory locks stay on: a runner wrongly thought dead keeps its locks while its session lives, so
 * no shard is ever held twice; never combine a short expiration with `shardLockDisableAdvisory`.
 * Cost: a lock operation times out at the refresh period (2 s), so a database stall longer than
 * that makes a runner drop its shards (they come back when the database answers).
 */
export const CLUSTER_TIMING = {
  shardLockExpiration: Duration.seconds(6),
  shardLockRefreshInterval: Duration.seconds(2),
  shardLockDisableAdvisory: false,
  refreshAssignmentsInterval: Duration.seconds(1),
  runnerHealthCheckInterval: Duration.seconds(2),
  // Persisted messages (and DeliverAt timers) are found at most this late.
  entityMessagePollInterval: Duration.seconds(1),
  // A message to an entity on this runner is handed over as is, not encoded and decoded as if it crossed the network
  // (the library's default, a development aid): that round trip was a third of a lease renewal's CPU. Messages to
  // other runners and persisted ones are still encoded (the three-runner tests send both kinds).
  simulateRemoteSerialization: false,
} as const

/** A runner is alive while its heartbeat is younger than this (the cluster's own rule). */
export const RUNNER_ALIVE_MS = Duration.toMillis(CLUSTER_TIMING.shardLockExpiration)
/** How often each runner rewrites its status row (and at once when one of its actors changed). */
export const STATUS_INTERVAL = Duration.seconds(2)
/** Processed cluster messages (and their replies) are kept this long, then deleted. */
export const MESSAGE_RETENTION = Duration.hours(24)

/**
 * The whole ShardingConfig: the library's defaults, our timings, then this runner's overrides. No
 * environment is read: the cluster's own reader (`layerFromEnv`) would take PORT and HOST, which
 * mean something else here.
 */
export const shardingConfig = (
  overrides: Partial<ShardingConfig.ShardingConfig["Type"]> = {},
): ShardingConfig.ShardingConfig["Type"] => ({ ...ShardingConfig.defaults, ...CLUSTER_TIMING, ...overrides })
