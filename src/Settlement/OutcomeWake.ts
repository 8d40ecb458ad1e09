import { Cache, Duration, Effect, Exit } from "effect"
import { IN_FLIGHT_TRANSITIONS, parseRelayerOutcome, UNENDED_TRANSITIONS } from "../Relayer/Transitions.ts"

/** A fill's take and its escrow version (src/Settlement/Repo.ts takeOfFill). */
export interface FillTake {
  readonly take_id: string
  readonly escrow_version: number
}

/**
 * Whether a relayer transition of a settlement call wakes its take. The v1 step acts on a call's inclusion (a claim
 * included makes its secret public), finality or failure; the v2 step on its end only (decideV2 reads final,
 * reverted and replaced), so for v2 an inclusion or a reorg would wake a pass that only waits.
 */
export const outcomeWakesTake = (kind: string, escrowVersion: number) =>
  !IN_FLIGHT_TRANSITIONS.includes(kind) && !(escrowVersion === 2 && UNENDED_TRANSITIONS.includes(kind))

/**
 * The take a relayer outcome's notification wakes, if any. Keys: `settle:<fill id>:<call>` (the fill's take, read
 * with `takeOf`) and `settle:take:<take id>:payTake` (always v2's, no read); a transition still in flight or
 * another key wakes none and reads nothing.
 */
export const takeToWake = <E, R>(
  payload: string,
  takeOf: (fillId: string) => Effect.Effect<FillTake | undefined, E, R>,
): Effect.Effect<string | undefined, E, R> =>
  Effect.gen(function* () {
    const { kind, key } = parseRelayerOutcome(payload)
    if (!key.startsWith("settle:") || IN_FLIGHT_TRANSITIONS.includes(kind)) return undefined
    const [, first, second] = key.split(":")
    const take =
      first === "take"
        ? second === undefined
          ? undefined
          : { take_id: second, escrow_version: 2 }
        : yield* takeOf(first ?? "")
    return take !== undefined && outcomeWakesTake(kind, take.escrow_version) ? take.take_id : undefined
  })

/** Fills whose take a runner keeps in memory (a few hundred bytes each). */
const FILL_TAKES_CAPACITY = 10_000

/**
 * `lookup` behind a per-runner cache. A fill's take never changes, and each call of a fill has several outcomes: a
 * found take is kept an hour; no fill under the id (not a fill's key), a minute; a failed read, not at all.
 */
export const fillTakeCache = <E, R>(lookup: (fillId: string) => Effect.Effect<FillTake | undefined, E, R>) =>
  Cache.makeWith({
    capacity: FILL_TAKES_CAPACITY,
    lookup,
    timeToLive: (exit: Exit.Exit<FillTake | undefined, E>) =>
      Exit.isFailure(exit) ? Duration.zero : exit.value === undefined ? Duration.minutes(1) : Duration.hours(1),
  })
