import { expect, layer } from "@effect/vitest"
import { Effect, Option, Ref } from "effect"
import type { Hex } from "viem"
import { makeTxRelayer } from "../../actors/TxRelayer.ts"
import { FaultPoint, type FaultPointName } from "../../src/Chain/FaultPoint.ts"
import { AppConfig } from "../../src/Config.ts"
import { Relayer } from "../../src/Relayer.ts"
import { key } from "../support/ChainDevnet.ts"
import { chainStack, TestChainTag } from "../support/ChainStack.ts"
import { mintData, recipientFrom, relayerVenue, rpc } from "../support/RelayerFixtures.ts"

// The relayer signs with anvil account #8 (untouched by the deployment).
const Live = chainStack({
  anvil: { slotsInAnEpoch: 1 },
  config: (c) => ({
    venues: [relayerVenue(c, "hyperliquid")],
    operator_key: key(8),
  }),
})

const recipient = recipientFrom(0xfeed0000)

/**
 * A relayer whose "relayer.follow-after-heads" point runs the test's hook once (a pass slowed between its reads of
 * the chain while the chain moves on); every other point is a no-op.
 */
const relayerWithHook = Effect.gen(function* () {
  const { deployment } = yield* AppConfig
  const hook = yield* Ref.make<Option.Option<Effect.Effect<void>>>(Option.none())
  const fault = {
    hit: (name: FaultPointName) =>
      name !== "relayer.follow-after-heads"
        ? Effect.void
        : Effect.flatMap(
            Ref.getAndSet(hook, Option.none()),
            Option.getOrElse(() => Effect.void),
          ),
  }
  const relayer = yield* makeTxRelayer(deployment.venues[0]).pipe(Effect.provideService(FaultPoint, fault))
  return { ...relayer, onNextFollow: (effect: Effect.Effect<void>) => Ref.set(hook, Option.some(effect)) }
})

layer(Live, { timeout: "120 seconds", excludeTestServices: true })(
  "transaction relayer: the lowest open nonce",
  (it) => {
    it.effect("blocks mined while a pass reads the chain do not count as a nonce's wait as the lowest open one", () =>
      Effect.gen(function* () {
        const c = yield* TestChainTag
        const r = yield* Relayer
        const { handle, onNextFollow } = yield* relayerWithHook
        const status = (k: string) => r.status(k).pipe(Effect.map(Option.getOrThrow))
        yield* Effect.acquireRelease(
          Effect.promise(() => c.test.setAutomine(false)),
          () => Effect.promise(() => c.test.setAutomine(true)),
        )
        for (const [k, i] of [
          ["first", 1],
          ["second", 2],
        ] as const) {
          yield* r.submit({ idempotencyKey: k, venue: "hyperliquid", to: c.token, data: mintData(recipient(i), 3n) })
        }
        yield* handle.tick
        const second = (yield* status("second")).txHash as Hex
        // The next pass reads the heads; before it reads the nonce counts, "second" leaves the node's pool and three
        // blocks are mined ("first" in the first of them). "second" became the lowest open nonce in that block.
        yield* onNextFollow(
          rpc(c, "anvil_dropTransaction", [second]).pipe(
            Effect.zipRight(Effect.promise(() => c.test.mine({ blocks: 3 }))),
            Effect.asVoid,
          ),
        )
        yield* handle.tick
        // Seen as the lowest open nonce from the head after those blocks on: no block has passed yet. It is not
        // replaced; it is rebroadcast (the node lost it).
        yield* handle.tick
        expect((yield* status("second")).attempts).toEqual([second])
        expect((yield* status("first")).status).toBe("included")
        const back = yield* Effect.promise(() => c.pub.getTransaction({ hash: second }))
        expect(back.hash).toBe(second)
        yield* Effect.promise(() => c.test.mine({ blocks: 4 }))
        yield* handle.tick
        yield* handle.tick
        const outcome = yield* status("second")
        expect(outcome.status).toBe("final")
        expect(outcome.attempts).toEqual([second])
      }).pipe(Effect.scoped),
    )
  },
)
