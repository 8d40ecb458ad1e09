import { Schema } from "effect"
import { Timestamp, toRfc3339 } from "./Primitives.ts"

/**
 * What waits for a person (issue 17 item 4): /health's `alerts`, beside the spec's fields. Each names its
 * subject (a fill, a close, a venue, an actor, a singleton) and says what is wrong in one line; the README's
 * "Operating" section says what to do about each kind. Only `relayer_out_of_gas` takes part in readiness (the
 * spec's "operator gas suffices"): the others leave `status` as the spec's rule makes it.
 */

export const ALERT_KINDS = [
  "fill_needs_operator",
  "fill_stuck",
  "close_stuck",
  "relayer_out_of_gas",
  "actor_restarting",
  "singleton_unowned",
  "shards_unowned",
] as const
export type AlertKind = (typeof ALERT_KINDS)[number]

export const Alert = Schema.Struct({
  kind: Schema.Literal(...ALERT_KINDS),
  subject: Schema.String.annotations({ description: "fill id, close id, venue, actor kind or singleton name" }),
  message: Schema.String,
  since: Schema.NullOr(Timestamp).annotations({ description: "when the condition began, when known" }),
  degrades: Schema.Boolean.annotations({ description: "part of the spec's readiness rule (status degraded)" }),
}).annotations({ identifier: "Alert" })
export type Alert = typeof Alert.Type

/** A settlement call that failed this many times (SettlementStep's MAX_ATTEMPTS) is not retried: it waits. */
export const FILL_ATTEMPTS_MAX = 5
/** Past every expiry a fill ends within minutes (refund); this long after its timeouts it is stuck. */
export const FILL_STUCK_GRACE_SECONDS = 900
/** A pending close normally ends within a minute or two; after this its transaction is not getting through. */
export const CLOSE_STUCK_SECONDS = 900
/** Restarts (summed over runners) with the latest failure this recent: a restart loop. */
export const ACTOR_LOOP_RESTARTS = 3
export const ACTOR_LOOP_WINDOW_SECONDS = 120
/** Entries per kind; more are counted in one last entry. */
export const ALERTS_PER_KIND = 10

export interface AlertFacts {
  readonly nowMs: number
  /** Fills not final whose settlement call failed FILL_ATTEMPTS_MAX times. */
  readonly fillsFailed: ReadonlyArray<{
    readonly id: string
    readonly call: string
    readonly reason: string
    readonly at: number
  }>
  /** Fills not final created before `stuckBefore` (ms). */
  readonly fillsOld: ReadonlyArray<{ readonly id: string; readonly state: string; readonly createdAt: number }>
  readonly closesOld: ReadonlyArray<{ readonly id: string; readonly venue: string; readonly createdAt: number }>
  readonly chains: ReadonlyArray<{
    readonly venue: string
    readonly checked: boolean
    readonly gas: bigint
    readonly minGas: bigint
  }>
  /** Per actor kind: restarts summed over runners and the latest failure (ms). */
  readonly actors: ReadonlyArray<{
    readonly kind: string
    readonly restarts: number
    readonly lastFailureAt: number | null
    readonly lastFailure: string
  }>
  /** Singleton names registered on alive runners, and whether one of them runs it. */
  readonly singletons: ReadonlyArray<{ readonly name: string; readonly owned: boolean }>
  readonly aliveRunners: number
  readonly shardsOwned: number
  readonly shardsTotal: number
}

const capped = (kind: AlertKind, entries: ReadonlyArray<Alert>): ReadonlyArray<Alert> =>
  entries.length <= ALERTS_PER_KIND
    ? entries
    : [
        ...entries.slice(0, ALERTS_PER_KIND),
        {
          kind,
          subject: `+${entries.length - ALERTS_PER_KIND}`,
          message: `${entries.length - ALERTS_PER_KIND} more like these`,
          since: null,
          degrades: entries.some((e) => e.degrades),
        },
      ]

const iso = (ms: number | null) => (ms === null ? null : toRfc3339(ms))

export const deriveAlerts = (f: AlertFacts): ReadonlyArray<Alert> => {
  const out: Array<Alert> = []
  const add = (kind: AlertKind, entries: ReadonlyArray<Alert>) => out.push(...capped(kind, entries))
  add(
    "fill_needs_operator",
    f.fillsFailed.map((x) => ({
      kind: "fill_needs_operator",
      subject: x.id,
      message: `${x.call} failed ${FILL_ATTEMPTS_MAX} times (${x.reason}); settlement no longer retries it`,
      since: iso(x.at),
      degrades: false,
    })),
  )
  const failed = new Set(f.fillsFailed.map((x) => x.id))
  add(
    "fill_stuck",
    f.fillsOld
      .filter((x) => !failed.has(x.id))
      .map((x) => ({
        kind: "fill_stuck",
        subject: x.id,
        message: `${x.state} for ${Math.round((f.nowMs - x.createdAt) / 60_000)} min: past every timeout and not final`,
        since: iso(x.createdAt),
        degrades: false,
      })),
  )
  add(
    "close_stuck",
    f.closesOld.map((x) => ({
      kind: "close_stuck",
      subject: x.id,
      message: `close on ${x.venue} pending for ${Math.round((f.nowMs - x.createdAt) / 60_000)} min`,
      since: iso(x.createdAt),
      degrades: false,
    })),
  )
  add(
    "relayer_out_of_gas",
    f.chains
      .filter((c) => c.checked && c.gas < c.minGas)
      .map((c) => ({
        kind: "relayer_out_of_gas",
        subject: c.venue,
        message: `operator gas ${c.gas} wei below the minimum ${c.minGas}: relayed calls stop`,
        since: null,
        degrades: true,
      })),
  )
  add(
    "actor_restarting",
    f.actors
      .filter(
        (a) =>
          a.restarts >= ACTOR_LOOP_RESTARTS &&
          a.lastFailureAt !== null &&
          f.nowMs - a.lastFailureAt <= ACTOR_LOOP_WINDOW_SECONDS * 1000,
      )
      .map((a) => ({
        kind: "actor_restarting",
        subject: a.kind,
        message: `${a.restarts} restarts, the last ${Math.round((f.nowMs - a.lastFailureAt!) / 1000)} s ago: ${a.lastFailure}`,
        since: iso(a.lastFailureAt),
        degrades: false,
      })),
  )
  if (f.aliveRunners > 0) {
    add(
      "singleton_unowned",
      f.singletons
        .filter((s) => !s.owned)
        .map((s) => ({
          kind: "singleton_unowned",
          subject: s.name,
          message: "registered but running on no live runner",
          since: null,
          degrades: false,
        })),
    )
    const missing = f.shardsTotal - f.shardsOwned
    if (missing > 0)
      add("shards_unowned", [
        {
          kind: "shards_unowned",
          subject: `${missing}`,
          message: `${missing} of ${f.shardsTotal} shards held by no live runner`,
          since: null,
          degrades: false,
        },
      ])
  }
  return out
}
