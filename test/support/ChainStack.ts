import { Context, Effect, Layer } from "effect"
import { ChainClients, type ChainTransportFactory } from "../../src/Chain/ChainClients.ts"
import { FaultPoint } from "../../src/Chain/FaultPoint.ts"
import { Relayer } from "../../src/Relayer.ts"
import { startTestChain, type TestChain } from "./ChainDevnet.ts"
import { TestDatabaseLive } from "./Database.ts"
import { testAppConfig } from "./TestConfig.ts"
import { TestHttpLive } from "./TestServer.ts"

/** The test file's chain (anvil with the devnet contracts). */
export class TestChainTag extends Context.Tag("test/TestChain")<TestChainTag, TestChain>() {}

export interface ChainStackOptions {
  readonly anvil?: Parameters<typeof startTestChain>[0]
  /** The config overrides, given the started chain (venues, operator_key, …). */
  readonly config: (chain: TestChain) => Record<string, unknown>
  /** Replaces the watcher's and relayer's transport (fault injection). */
  readonly transport?: ChainTransportFactory
}

/**
 * One anvil chain, a throw-away database, the config built from the chain, the chain clients
 * (optionally through a fault transport), FaultPoint no-op, the Relayer service, and the HTTP
 * server (for /health). Watchers and relayers are built by the tests themselves (makeVenueWatcher,
 * makeTxRelayer), so each test decides when they poll.
 */
export const chainStack = (options: ChainStackOptions) =>
  Layer.unwrapScoped(
    Effect.gen(function* () {
      const chain = yield* Effect.acquireRelease(
        Effect.promise(() => startTestChain(options.anvil)),
        (c) => Effect.promise(() => c.anvil.stop()),
      )
      const base = Layer.mergeAll(
        ChainClients.layerWith(options.transport),
        FaultPoint.Noop,
        Relayer.Live,
        TestHttpLive,
      )
      return base.pipe(
        Layer.provideMerge(TestDatabaseLive),
        Layer.provideMerge(testAppConfig(options.config(chain))),
        Layer.provideMerge(Layer.succeed(TestChainTag, chain)),
      )
    }),
  )
