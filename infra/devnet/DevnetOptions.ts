// What the devnet runs and where it keeps things: options from the environment, the data-dir layout and its
// deployment record, the roles of the test accounts. Kept free of heavy imports: `npm start` reads it (and checks the lock) before loading effect
// and viem, so a second start is refused at once.
import { existsSync, readFileSync, renameSync, writeFileSync } from "node:fs"
import { join, resolve } from "node:path"
import type { Hex } from "viem"
import { ANVIL_PRIVATE_KEYS } from "./Anvil.ts"
import type { ChainKind, Deployment } from "./Deploy.ts"

/** One devnet chain: a venue of the service, an anvil chain, and (once they land) a venue simulator. */
export interface DevnetChainSpec {
  readonly kind: ChainKind
  /** The service's venue id. */
  readonly venueId: string
  readonly name: string
  readonly chainId: number
  /** 127.0.0.1 port of the anvil RPC; 0 = any free port (tests). */
  readonly rpcPort: number
  /** 127.0.0.1 port of the venue simulator's HTTP API; 0 = any free port. */
  readonly apiPort: number
}

export interface DevnetOptions {
  /** Absolute; everything the devnet persists lives here (DEVNET_DATA_DIR, default ./.data). */
  readonly dataDir: string
  /** The service's HTTP port (PORT, default 8080). */
  readonly apiPort: number
  readonly chains: ReadonlyArray<DevnetChainSpec>
  /** Interval mining: one block every N seconds, so finality keeps advancing with no traffic. */
  readonly blockTimeSeconds: number
  /** anvil `--slots-in-an-epoch`: finalized lags latest by 2 × slots blocks (safe by slots). */
  readonly slotsInAnEpoch: number
  /** A PostgreSQL to use instead of the embedded one (DATABASE_URL). */
  readonly databaseUrl: string | undefined
}

/**
 * Roles of anvil's well-known accounts on the devnet. These keys are PUBLIC (the "test test … junk" mnemonic):
 * TEST ONLY, never use them on a real chain.
 */
export const DEVNET_ROLES = {
  /** Deploys the contracts; the service's operator key (relays, pays gas). Holds gas on both chains. */
  operator: 0,
  /** Listed in `admins` (may grant beta access). */
  admin: 1,
  /** The venue simulators' hot wallet (pays venue withdrawals on chain). */
  simulatorHotWallet: 9,
} as const

export const devnetKey = (index: number): Hex => {
  const key = ANVIL_PRIVATE_KEYS[index]
  if (key === undefined) throw new Error(`no anvil key #${index}`)
  return key as Hex
}

/** Signature chain id of the venues' off-chain typed data (Arbitrum One, as the real venues use). */
export const SIGNATURE_CHAIN_ID = 42161

const parsePort = (env: NodeJS.ProcessEnv, name: string, fallback: number): number => {
  const raw = env[name]
  if (raw === undefined || raw === "") return fallback
  const port = Number(raw)
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    throw new Error(`${name} must be a TCP port (0-65535, 0 = any free port), got "${raw}"`)
  }
  return port
}

/** Reads the devnet options; throws a message naming the variable when one is malformed. */
export const devnetOptionsFromEnv = (env: NodeJS.ProcessEnv = process.env, cwd = process.cwd()): DevnetOptions => {
  const apiPort = parsePort(env, "PORT", 8080)
  if (apiPort === 0) throw new Error("PORT must be a fixed port for the devnet (the banner and config name it)")
  return {
    dataDir: resolve(cwd, env.DEVNET_DATA_DIR || ".data"),
    apiPort,
    chains: [
      {
        kind: "hyperliquid",
        venueId: "hyperliquid",
        name: "Hyperliquid (devnet)",
        chainId: 999,
        rpcPort: parsePort(env, "DEVNET_HYPERLIQUID_RPC_PORT", 8545),
        apiPort: parsePort(env, "DEVNET_HYPERLIQUID_API_PORT", 8547),
      },
      {
        kind: "aster",
        venueId: "aster",
        name: "Aster (devnet)",
        chainId: 42161,
        rpcPort: parsePort(env, "DEVNET_ASTER_RPC_PORT", 8546),
        apiPort: parsePort(env, "DEVNET_ASTER_API_PORT", 8548),
      },
    ],
    blockTimeSeconds: 1,
    slotsInAnEpoch: 2,
    databaseUrl: env.DATABASE_URL || undefined,
  }
}

/** The data-dir layout. */
export const devnetPaths = (dataDir: string) => ({
  dataDir,
  lock: join(dataDir, "devnet.lock"),
  /** Where the contracts are: written once, after the first deployment succeeded on every chain. */
  deployment: join(dataDir, "deployment.json"),
  /** The service's SETTLEMENT_CONFIG, rewritten at every start (ports may differ between runs). */
  config: join(dataDir, "devnet-config.json"),
  pg: join(dataDir, "pg"),
  anvilState: (chainId: number) => join(dataDir, `anvil-${chainId}.json`),
})
export type DevnetPaths = ReturnType<typeof devnetPaths>

/** The deployment record in `deployment.json`. */
export interface DeploymentRecord {
  readonly version: 1
  readonly created_at: string
  readonly chains: ReadonlyArray<Deployment>
}

export const readDeploymentRecord = (file: string): DeploymentRecord | undefined => {
  if (!existsSync(file)) return undefined
  const record = JSON.parse(readFileSync(file, "utf8")) as DeploymentRecord
  if (record.version !== 1 || !Array.isArray(record.chains)) {
    throw new Error(`${file} is not a devnet deployment record this version understands; run npm run devnet:reset`)
  }
  return record
}

/** Writes through a temporary file and a rename, so a crash never leaves half a JSON file. */
export const writeJsonAtomic = (file: string, value: unknown): void => {
  const tmp = `${file}.${process.pid}.tmp`
  writeFileSync(tmp, `${JSON.stringify(value, null, 2)}\n`)
  renameSync(tmp, file)
}
