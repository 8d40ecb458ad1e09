/**
 * A venue's chain and its simulator for integration tests, stopped with the scope: an anvil chain with the real
 * contracts (test/support/ChainDevnet.ts) and the venue's simulator speaking its wire format, paying withdrawals on
 * that chain from the hot wallet (anvil #9).
 */
import { Effect } from "effect"
import type { Hex } from "viem"
import type { AnvilOptions } from "../../infra/devnet/Anvil.ts"
import {
  startVenueSimulator,
  type VenueSimulator,
  type VenueSimulatorOptions,
} from "../../infra/devnet/venues/VenueSimulator.ts"
import { key, startTestChain, type TestChain } from "./ChainDevnet.ts"

export const HOT_WALLET_KEY = key(9) as Hex

export type VenueKind = "hyperliquid" | "aster"

export interface VenueNode {
  readonly chain: TestChain
  readonly sim: VenueSimulator
}

const CHAIN_IDS = { hyperliquid: 999, aster: 42161 } as const

/** The `kind` simulator on `chain` (polling it every 100 ms), stopped with the scope; `extra` overrides. */
export const simulatorOn = (chain: TestChain, kind: VenueKind, extra: Partial<VenueSimulatorOptions> = {}) =>
  Effect.acquireRelease(
    Effect.promise(() =>
      startVenueSimulator({
        kind,
        port: 0,
        chainRpcUrl: chain.anvil.rpcUrl,
        chainId: chain.deployment.chainId,
        token: chain.token,
        marginMock: chain.deployment.contracts.venue.address,
        hotWalletKey: HOT_WALLET_KEY,
        signatureChainId: 42161,
        pollIntervalMs: 100,
        onError: () => {},
        ...extra,
      }),
    ),
    (s) => Effect.promise(() => s.stop()),
  )

/** One venue chain (the venue's chain id unless `anvil` says otherwise) with its simulator, stopped with the scope. */
export const startVenueNode = (kind: VenueKind, sim: Partial<VenueSimulatorOptions> = {}, anvil: AnvilOptions = {}) =>
  Effect.gen(function* () {
    const chain = yield* Effect.acquireRelease(
      Effect.promise(() => startTestChain({ chainId: CHAIN_IDS[kind], kind, ...anvil })),
      (c) => Effect.promise(() => c.anvil.stop()),
    )
    return { chain, sim: yield* simulatorOn(chain, kind, sim) } satisfies VenueNode
  })
