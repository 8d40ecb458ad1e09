import { Layer } from "effect"
import { ChainClients } from "./Chain/ChainClients.ts"
import { EscrowV2CheckLive } from "./Chain/EscrowV2Check.ts"
import { FaultPoint } from "./Chain/FaultPoint.ts"
import { ChainStatusBoard } from "./Health/ChainStatusBoard.ts"
import { Relayer } from "./Relayer.ts"

/**
 * The chain layer's services for the composition root: the watcher's and relayer's viem clients,
 * the fault points (armed only by SETTLEMENT_CRASH_POINT), the Relayer callers use, and the status
 * board /health reads, and the start-up check of the configured v2 escrows' immutables (a mismatch stops the
 * service with one line). Needs AppConfig, SqlClient and PgClient.
 */
export const ChainLive = Layer.mergeAll(
  ChainClients.Live,
  FaultPoint.fromEnv,
  Relayer.Live,
  ChainStatusBoard.Live,
  EscrowV2CheckLive.pipe(Layer.provide(ChainClients.Live)),
)
