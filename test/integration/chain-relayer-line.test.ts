import { expect, layer } from "@effect/vitest"
import { Effect, Option, Ref } from "effect"
import { type Address, encodeFunctionData, type Hex } from "viem"
import { makeTxRelayer } from "../../actors/TxRelayer.ts"
import { mockUSDCAbi } from "../../src/Chain/artifacts/index.ts"
import { FaultPoint, type FaultPointName } from "../../src/Chain/FaultPoint.ts"
import { AppConfig } from "../../src/Config.ts"
import { Relayer } from "../../src/Relayer.ts"
import { key, type TestChain, venueEntry } from "../support/ChainDevnet.ts"
import { chainStack, TestChainTag } from "../support/ChainStack.ts"

// The relayer signs with anvil account #8 (untouched by the deployment).
const Live = chainStack({
  anvil: { slotsInAnEpoch: 1 },
  config: (c) => ({
    venues: [
      venueEntry(c, "hyperliquid", {
        relayer: {
          poll_ms: 50,
          bump_after_blocks: 2,
          allow: [{ contract: c.token, functions: ["mint(address,uint256)"] }],
        },
      }),
    ],
    operator_key: key(8),
  }),
})

const recipient = (i: number): Address => `0x${(0xfeed0000 + i).toString(16).padStart(40, "0")}` as Address
const mintData = (to: Address, amount: bigint) =>
  encodeFunctionData({ abi: mockUSDCAbi, functionName: "mint", args: [to, amount] })
const rpc = (c: TestChain, method: string, params: Array<unknown>) =>
  Effect.promise(() => c.test.request({ method, params } as never))

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
        yield* r.submit({
          idempotencyKey: "first",
          venue: "hyperliquid",
          to: c.token,
          data: mintData(recipient(1), 3n),
        })
        yield* r.submit({
          idempotencyKey: "second",
          venue: "hyperliquid",
          to: c.token,
          data: mintData(recipient(2), 4n),
        })
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
