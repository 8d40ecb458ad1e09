import { Clock, Duration, Effect } from "effect"
import { expireLeases } from "../src/Store/QuoteIdentities.ts"
import { supervisedSingleton } from "../src/Supervision.ts"

/** How often leases are checked: the dead-man switch fires within this much after expiry. */
export const LEASE_SWEEP = Duration.millis(250)

/**
 * One sweep: every credential identity whose lease ended by now (the Effect clock, so tests drive
 * it with TestClock) has its quote sets deactivated and its expiry journaled once per generation.
 * Admission checks compare leases with database time themselves, so a late sweep never admits
 * anything: the sweep only makes the stop visible (inactive sets, an event).
 */
export const sweepLeases = Effect.flatMap(Clock.currentTimeMillis, expireLeases)

export const runLeaseKeeper = sweepLeases.pipe(
  Effect.catchAllCause((cause) => Effect.logWarning("lease sweep failed; retrying", cause)),
  Effect.zipRight(Effect.sleep(LEASE_SWEEP)),
  Effect.forever,
  Effect.annotateLogs({ actor: "LeaseKeeper" }),
)

/**
 * The lease keeper runs once in the cluster. A singleton sweeping by expiry time, rather than an
 * entity per identity holding a timer, needs no re-arming after a crash or a shard move.
 */
export const LeaseKeeperLive = supervisedSingleton("lease-keeper", runLeaseKeeper)
