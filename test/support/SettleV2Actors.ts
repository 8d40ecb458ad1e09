import { Context, Effect, Layer } from "effect"
import { encodeFunctionData, type Hex } from "viem"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { runTxRelayer } from "../../actors/TxRelayer.ts"
import { runVenueWatcher } from "../../actors/VenueWatcher.ts"
import { settlementEscrowV2Abi } from "../../src/Chain/artifacts/index.ts"
import { ChainClients } from "../../src/Chain/ChainClients.ts"
import { FaultPoint } from "../../src/Chain/FaultPoint.ts"
import { AppConfig } from "../../src/Config.ts"
import { Relayer } from "../../src/Relayer.ts"
import { openStoredFillSecret } from "../../src/Settlement/FillSecrets.ts"
import { account, key, sendCalls, startTestChain, type TestChain, venueEntry } from "./ChainDevnet.ts"
import { TestDatabaseLive } from "./Database.ts"
import { pollUntil } from "./Poll.ts"
import { settlementPass } from "./SettlementPass.ts"
import { type MakerOrderV2, makerOrderV2 } from "./TakesV2.ts"
import { testAppConfig } from "./TestConfig.ts"
import { TestHttpLive } from "./TestServer.ts"

/**
 * Settlement v2 in-process on two devnet chains (Hyperliquid-like 999 = the makers' chain, Aster-like 42161 = the
 * taker's), each with its SettlementEscrowV2 (devnet immutables), the real VenueWatchers (v2 index, 2
 * confirmations) and TxRelayers, a block every 250 ms. The Settlement entity's step is run by the test over every
 * pending take (`pass`), not by the entities. Take rows come from test/support/TakesV2.ts.
 */

export const OPERATOR = 9
export const operator = account(OPERATOR).address
/** Relays the makers' order funding. */
export const FUNDER = account(8)
export const PAYER = account(3)
export const M = "hyperliquid"
export const T = "aster"

export class SettleV2Env extends Context.Tag("test/SettleV2Env")<
  SettleV2Env,
  { readonly hl: TestChain; readonly aster: TestChain }
>() {}

const chainOf = (chainId: number, kind: "hyperliquid" | "aster") =>
  Effect.acquireRelease(
    Effect.promise(() => startTestChain({ chainId, kind })),
    (c) => Effect.promise(() => c.anvil.stop()),
  )

const fast = {
  watcher: { poll_ms: 100, confirmations: 2, integrity_interval_seconds: 3600 },
  relayer: { poll_ms: 100 },
  escrowV2: true,
}
const entry = (c: TestChain, id: string) => {
  const { legacy_escrow: _legacy, ...v } = venueEntry(c, id, fast)
  return v
}

/**
 * Chains whose 250 ms block is skipped while they are in here (a transaction is still mined at once): a test holds a
 * chain's latest block where it is, so nothing on it turns final.
 */
export const miningPaused = new Set<TestChain>()

/**
 * While `on`, both venues' watchers wait before their next poll (the `watcher.before-poll` fault point): the index
 * stays where it is while the chains, the relayers and the passes go on, as when the index lags the relayer.
 */
export const indexHeld = { on: false }

const holdWhileIndexHeld: Effect.Effect<void> = Effect.suspend(() =>
  indexHeld.on ? Effect.zipRight(Effect.sleep("25 millis"), holdWhileIndexHeld) : Effect.void,
)

const IndexHold = Layer.succeed(FaultPoint, {
  hit: (name) => (name === "watcher.before-poll" ? holdWhileIndexHeld : Effect.void),
})

/** The stack; `settlement` is the config's settlement section (give it `escrow_version: 2`). */
export const settleV2ActorsLive = (settlement: Record<string, unknown>) =>
  Layer.unwrapScoped(
    Effect.gen(function* () {
      const [hl, aster] = yield* Effect.all([chainOf(999, "hyperliquid"), chainOf(42161, "aster")], {
        concurrency: 2,
      })
      const config = testAppConfig({
        venues: [entry(hl, M), entry(aster, T)],
        auth: { rpc_urls: [hl.anvil.rpcUrl] },
        operator_key: key(OPERATOR),
        settlement,
      })
      const base = Layer.mergeAll(TestHttpLive, ChainClients.Live, IndexHold, Relayer.Live).pipe(
        Layer.provideMerge(TestDatabaseLive),
        Layer.provideMerge(config),
      )
      const actors = Effect.gen(function* () {
        const { deployment } = yield* AppConfig
        for (const v of deployment.venues) {
          yield* Effect.forkScoped(runVenueWatcher(v))
          yield* Effect.forkScoped(runTxRelayer(v))
        }
        yield* Effect.forkScoped(
          Effect.promise(() =>
            Promise.all([hl, aster].filter((c) => !miningPaused.has(c)).map((c) => c.test.mine({ blocks: 1 }))),
          ).pipe(Effect.zipRight(Effect.sleep("250 millis")), Effect.forever),
        )
        return { hl, aster }
      })
      return Layer.scoped(SettleV2Env, actors).pipe(Layer.provideMerge(base))
    }),
  )

/** One settlement pass: the Settlement entity's step over every pending take (v2 takes run the v2 pass). */
export const pass = settlementPass(openStoredFillSecret)

/** Runs v2 passes until `done` holds (checked after each pass), for `what` (named in the failure). */
export const settleUntil = <R>(what: string, done: Effect.Effect<boolean, unknown, R>) =>
  pollUntil(Effect.zipRight(pass, done), (ok) => ok, { every: "200 millis", within: "120 seconds" }).pipe(
    Effect.mapError((e) => new Error(`${what}: ${String(e)}`)),
  )

export const fresh = () => privateKeyToAccount(generatePrivateKey()).address

/** A maker (anvil account `i`, a fresh quote signer and payee) with a funded v2 order of `amount` on hyperliquid. */
export const newMakerV2 = (i: number, amount: bigint) =>
  Effect.gen(function* () {
    const { hl, aster } = yield* SettleV2Env
    const signerKey = generatePrivateKey()
    return yield* makerOrderV2(hl, aster, {
      owner: account(i),
      signerKey,
      signer: privateKeyToAccount(signerKey),
      relayer: FUNDER,
      operator,
      payee: fresh(),
      amount,
      makerVenue: M,
      takerVenue: T,
    })
  })

/** The maker's reveal: its own claimPayment on the taker chain, with the secret it derives. */
export const revealV2 = (order: MakerOrderV2, digest: Hex, index: number) =>
  Effect.gen(function* () {
    const { aster } = yield* SettleV2Env
    const data = encodeFunctionData({
      abi: settlementEscrowV2Abi,
      functionName: "claimPayment",
      args: [digest, order.hashlocks.secrets[index]!],
    })
    yield* Effect.promise(() => sendCalls(aster, order.owner, [{ to: aster.escrowV2!, data }]))
  })
