/**
 * The settlement v2 end-to-end tests' harness (settlement-v2-e2e, settlement-v2-crash, taker-claim-v2-e2e): the v2
 * stack (SettleV2Stack.ts) with both chains mining, the service as a child process on it, and a maker bot quoting
 * one funded order. `procs` is mutable: a test that kills and restarts either process puts the new one there, so
 * the scope's finalizer kills whichever runs at the end.
 */
import { Context, Effect, Layer } from "effect"
import { databaseLayer } from "../../src/Sql/Database.ts"
import { account } from "./ChainDevnet.ts"
import type { CrashableService } from "./ChainProcess.ts"
import { testDatabaseUrl } from "./Database.ts"
import {
  killNow,
  type MakerProcess,
  mineForever,
  runMakerClient,
  startV2Service,
  type V2Maker,
  type V2Stack,
  v2Maker,
  v2Stack,
} from "./SettleV2Stack.ts"

export interface V2Processes {
  service?: CrashableService
  maker?: MakerProcess
}

export class V2Harness extends Context.Tag("test/V2Harness")<
  V2Harness,
  {
    readonly stack: V2Stack
    readonly procs: V2Processes
    readonly maker: V2Maker
    /** The maker bot's mk_ credential (to restart it). */
    readonly credential: string
  }
>() {}

/** The harness and the tests' own database client, with a maker order of `amount` (anvil #1 owns it). */
export const v2HarnessLive = (amount: bigint) =>
  Layer.unwrapScoped(
    Effect.gen(function* () {
      const url = yield* testDatabaseUrl
      const { stack } = yield* v2Stack(url)
      const procs: V2Processes = {}
      yield* Effect.addFinalizer(() =>
        Effect.all([
          procs.maker ? killNow(procs.maker) : Effect.void,
          procs.service ? killNow(procs.service) : Effect.void,
        ]),
      )
      yield* Effect.forkScoped(mineForever(stack))
      // The service migrates the database; the test's own client opens after it.
      procs.service = yield* startV2Service(stack)
      const db = databaseLayer(url)
      const { maker, credential } = yield* v2Maker(stack, account(1), amount).pipe(Effect.provide(db))
      procs.maker = runMakerClient(stack, maker, credential)
      return Layer.merge(db, Layer.succeed(V2Harness, { stack, procs, maker, credential }))
    }),
  )
