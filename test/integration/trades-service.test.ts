/**
 * The Trades service (src/Trades.ts) on its Test layer: a throw-away database and the development config, no HTTP.
 * The routes' own tests (trades.test.ts) cover the wire; this proves the concept stands alone.
 */
import { describe, expect, layer } from "@effect/vitest"
import { Effect, Exit, Layer } from "effect"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { DevelopmentConfig } from "../../src/DevelopmentConfig.ts"
import { Trades } from "../../src/Trades.ts"
import { testAppConfig } from "../support/TestConfig.ts"
import { insertTrade, type ProofJson, signTrade, verifyTradeProofOffline } from "../support/TradeFixtures.ts"

const [hl, aster] = DevelopmentConfig.venues as unknown as [
  { id: string; chain_id: number; token: string; escrow: string },
  { id: string; chain_id: number; token: string; escrow: string },
]
const fresh = () => privateKeyToAccount(generatePrivateKey()).address

/** The catalogue error's tag a failed call ended with. */
const tagOf = <A, E>(exit: Exit.Exit<A, E>) =>
  Exit.isFailure(exit) && exit.cause._tag === "Fail" ? (exit.cause.error as { _tag?: string })._tag : undefined

describe("Trades service", () => {
  layer(Trades.Test.pipe(Layer.provideMerge(testAppConfig())), { timeout: 120_000 })((it) => {
    it.effect("refuses a pair of one venue and an unknown venue; pages nothing on an empty book", () =>
      Effect.gen(function* () {
        const trades = yield* Trades
        expect(tagOf(yield* Effect.exit(trades.recent(hl.id, hl.id)))).toBe("InvalidRequest")
        expect(tagOf(yield* Effect.exit(trades.recent(hl.id, "nowhere")))).toBe("NotFound")
        const query = { scope: "all", master: null, after: undefined, limit: 10 } as const
        expect(tagOf(yield* Effect.exit(trades.history({ ...query, a: hl.id, b: undefined })))).toBe("InvalidRequest")
        expect(tagOf(yield* Effect.exit(trades.history({ ...query, a: undefined, b: undefined, after: "x" })))).toBe(
          "InvalidRequest",
        )
        expect(yield* trades.recent(hl.id, aster.id)).toEqual({ a: hl.id, b: aster.id, rows: [] })
      }),
    )

    it.effect("lists a settled trade in recent and in history, with a proof that verifies offline", () =>
      Effect.gen(function* () {
        const trades = yield* Trades
        const maker = fresh()
        const trade = yield* Effect.promise(() => signTrade({ maker: aster, taker: hl, amountIn: 4_200_000n }))
        const id = yield* insertTrade(trade, { makerMaster: maker, takerMaster: fresh() })
        const recent = yield* trades.recent(aster.id, hl.id)
        expect(recent.rows.map((r) => [r.id, r.from_venue, r.amount_in])).toEqual([[id, hl.id, "4200000"]])
        const mine = yield* trades.history({
          scope: "mine",
          master: maker.toLowerCase(),
          a: hl.id,
          b: aster.id,
          after: undefined,
          limit: 1,
        })
        expect(mine.data.map((t) => t.id)).toEqual([id])
        expect(mine.has_more).toBe(false)
        const item = mine.data[0]!
        const problems = yield* Effect.promise(() =>
          verifyTradeProofOffline(item as never, item.proof as unknown as ProofJson),
        )
        expect(problems).toEqual([])
        const others = yield* trades.history({
          scope: "mine",
          master: fresh().toLowerCase(),
          a: undefined,
          b: undefined,
          after: undefined,
          limit: 10,
        })
        expect(others.data).toEqual([])
      }),
    )
  })
})
