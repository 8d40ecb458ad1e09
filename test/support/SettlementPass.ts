import { Effect } from "effect"
import { chainTimes, type OpenSecret, pendingKeys, stepSettlement } from "../../actors/Settlement.ts"
import { AppConfig } from "../../src/Config.ts"

/**
 * One settlement pass driven by the test, as the singleton's sweep was: the Settlement entity's step (one action
 * per nonfinal fill, actors/Settlement.ts) over every take with settlement work pending, so a test can stop the
 * "operator" between steps. The entity runs exactly this step per take (with wakes, cadence and backstop ticks).
 */
export const settlementPass = (open: OpenSecret, pageSize?: number) =>
  Effect.gen(function* () {
    const { deployment } = yield* AppConfig
    const times = chainTimes(deployment.venues.map((v) => v.id))
    for (const takeId of yield* pendingKeys) yield* stepSettlement(open, times, pageSize)(takeId)
  })
