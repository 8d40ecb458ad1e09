import { Layer } from "effect"
import { ChainClients } from "./ChainClients.ts"
import { ChainStatusBoard } from "./ChainStatusBoard.ts"
import { FaultPoint } from "./FaultPoint.ts"
import { Relayer } from "./Relayer.ts"

/**
 * The chain layer's services for the composition root: the watcher's and relayer's viem clients,
 * the fault points (armed only by SETTLEMENT_CRASH_POINT), the Relayer callers use, and the status
 * board /health reads. Needs AppConfig, SqlClient and PgClient.
 */
export const ChainLive = Layer.mergeAll(ChainClients.Live, FaultPoint.fromEnv, Relayer.Live, ChainStatusBoard.Live)
