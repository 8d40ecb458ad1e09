import { Effect, Layer } from "effect"
import { DevelopmentConfig } from "../../src/DevelopmentConfig.ts"
import { TestDatabaseLive } from "./Database.ts"
import { startSiweAnvil } from "./SiweAnvil.ts"
import { testAppConfig } from "./TestConfig.ts"
import { TestHttpLive } from "./TestServer.ts"

/**
 * The HTTP stack on a throw-away database, with one real anvil standing in for every venue chain
 * and the auth chain, so signature checks that fall back to the chain (ERC-1271) get a real answer.
 */
export const testStackWithChain = (overrides: Record<string, unknown> = {}) =>
  Layer.unwrapScoped(
    Effect.map(
      Effect.acquireRelease(
        Effect.promise(() => startSiweAnvil(999)),
        (anvil) => Effect.promise(() => anvil.stop()),
      ),
      (anvil) =>
        TestHttpLive.pipe(
          Layer.provideMerge(TestDatabaseLive),
          Layer.provideMerge(
            testAppConfig({
              venues: DevelopmentConfig.venues.map((v) => ({ ...v, rpc_urls: [anvil.url] })),
              auth: { rpc_urls: [anvil.url] },
              ...overrides,
            }),
          ),
        ),
    ),
  )
