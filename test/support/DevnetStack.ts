import { Context, Effect, Layer } from "effect"
import { startTestChain, type TestChain, venueEntry } from "./ChainDevnet.ts"
import { TestDatabaseLive } from "./Database.ts"
import { testAppConfig } from "./TestConfig.ts"
import { TestHttpLive } from "./TestServer.ts"

/** The two devnet chains of a test: Hyperliquid-like (999) and Aster-like (42161), contracts deployed. */
export class Chains extends Context.Tag("test/Chains")<
  Chains,
  { readonly hl: TestChain; readonly aster: TestChain }
>() {}

const chain = (chainId: number, kind: "hyperliquid" | "aster") =>
  Effect.acquireRelease(
    Effect.promise(() => startTestChain({ chainId, kind })),
    (c) => Effect.promise(() => c.anvil.stop()),
  )

/** The HTTP stack on a throw-away database, configured on two real devnet chains. */
export const devnetStack = (overrides: Record<string, unknown> = {}) =>
  Layer.unwrapScoped(
    Effect.gen(function* () {
      const [hl, aster] = yield* Effect.all([chain(999, "hyperliquid"), chain(42161, "aster")], { concurrency: 2 })
      const config = testAppConfig({
        venues: [venueEntry(hl, "hyperliquid"), venueEntry(aster, "aster")].map(({ legacy_escrow: _l, ...v }) => v),
        auth: { rpc_urls: [hl.anvil.rpcUrl] },
        ...overrides,
      })
      return TestHttpLive.pipe(
        Layer.provideMerge(TestDatabaseLive),
        Layer.provideMerge(config),
        Layer.merge(Layer.succeed(Chains, { hl, aster })),
      )
    }),
  )
