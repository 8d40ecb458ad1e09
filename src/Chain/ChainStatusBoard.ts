import { Context, Effect, Layer, Ref } from "effect"
import { AppConfig } from "../Config.ts"
import type { ChainHealth } from "../Domain/Health.ts"

/**
 * What /health reports per chain. Watchers publish into it; until a chain has a watcher its entry
 * stays not ready with an error saying so, which makes /health answer 503 truthfully.
 */
export class ChainStatusBoard extends Context.Tag("ChainStatusBoard")<
  ChainStatusBoard,
  {
    readonly chains: Effect.Effect<ReadonlyArray<ChainHealth>>
    readonly pendingTransactions: Effect.Effect<number>
    readonly update: (venue: string, f: (current: ChainHealth) => ChainHealth) => Effect.Effect<void>
  }
>() {
  static readonly Live = Layer.effect(
    ChainStatusBoard,
    Effect.gen(function* () {
      const { deployment } = yield* AppConfig
      const ref = yield* Ref.make<ReadonlyArray<ChainHealth>>(
        deployment.venues.map((v) => ({
          venue: v.id,
          chain_id: v.chain_id,
          ready: false,
          block: "0",
          finalized_block: "0",
          checked_at: null,
          finalized_at: null,
          error: "chain watcher not running",
          operator_gas: "0",
          integrity_checked_at: null,
          integrity_completed_at: null,
          integrity_error: "",
          integrity_mismatch: false,
        })),
      )
      return ChainStatusBoard.of({
        chains: Ref.get(ref),
        pendingTransactions: Effect.succeed(0),
        update: (venue, f) => Ref.update(ref, (all) => all.map((c) => (c.venue === venue ? f(c) : c))),
      })
    }),
  )
}
