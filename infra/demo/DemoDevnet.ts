// Finds the running devnet the demo talks to: its API URL and the venues (chain RPC, token, escrow, simulator API)
// from the devnet's data dir (`npm start` writes devnet.lock and devnet-config.json there), or from the
// environment. Fails with a message saying what to do when no devnet answers.
import { existsSync, readFileSync } from "node:fs"
import { join, resolve } from "node:path"
import { Cause, Effect, Exit } from "effect"
import type { Address } from "viem"
import { type ApiFailure, makeApiClient, request } from "../../src/Client/ApiClient.ts"

export interface DemoVenue {
  readonly id: string
  readonly name: string
  readonly chain_id: number
  readonly rpc_urls: ReadonlyArray<string>
  readonly token: Address
  readonly decimals: number
  readonly symbol: string
  readonly escrow: Address
  /** The venue's SettlementEscrowV2, when the devnet deployed one. */
  readonly escrow_v2?: { readonly address: Address; readonly deployment_block: number }
  /** The venue simulator (its /_control answers margin balances); absent when the devnet runs without one. */
  readonly api_url?: string
}

/** The config's `settlement` fields the demo's clients use (defaults as the service's when absent). */
export interface DemoSettlement {
  /** The escrow new orders and takes use: 2 = every venue's `escrow_v2`. */
  readonly escrow_version: 1 | 2
  readonly claim_window_seconds: number
  readonly pay_by_max_seconds: number
}

export interface DemoDevnet {
  readonly apiUrl: string
  readonly venues: ReadonlyArray<DemoVenue>
  readonly settlement: DemoSettlement
}

export class DevnetNotRunning extends Error {}

const HOW = "start it in another terminal with `npm start` (or set DEVNET_DATA_DIR / DEMO_API_URL)"

/** DEVNET_DATA_DIR (default ./.data) holds devnet.lock (api_url) and devnet-config.json (venues). */
export const findDevnet = async (env: NodeJS.ProcessEnv = process.env): Promise<DemoDevnet> => {
  const dataDir = resolve(env.DEVNET_DATA_DIR || ".data")
  const configFile = join(dataDir, "devnet-config.json")
  const lockFile = join(dataDir, "devnet.lock")
  if (!existsSync(configFile)) throw new DevnetNotRunning(`no devnet config at ${configFile}: ${HOW}`)
  const config = JSON.parse(readFileSync(configFile, "utf8")) as {
    venues: ReadonlyArray<DemoVenue>
    settlement?: Partial<DemoSettlement>
  }
  const lock = existsSync(lockFile) ? (JSON.parse(readFileSync(lockFile, "utf8")) as { api_url?: string }) : {}
  const apiUrl = (env.DEMO_API_URL || lock.api_url || "").replace(/\/$/, "")
  if (apiUrl === "") throw new DevnetNotRunning(`the devnet in ${dataDir} is not running (no devnet.lock): ${HOW}`)
  const info = await Effect.runPromiseExit(
    makeApiClient(apiUrl, { retries: 0, timeout: "3 seconds" }).pipe(Effect.flatMap((c) => request(c.info.info()))),
  )
  if (Exit.isFailure(info)) {
    const e = Cause.squash(info.cause) as ApiFailure
    const why =
      e._tag === "ApiError" ? `GET /v1/info answered ${e.status}` : e._tag === "ApiUnreachable" ? e.reason : "error"
    throw new DevnetNotRunning(`the devnet API ${apiUrl} does not answer (${why}): ${HOW}`)
  }
  const settlement: DemoSettlement = {
    escrow_version: config.settlement?.escrow_version ?? 1,
    claim_window_seconds: config.settlement?.claim_window_seconds ?? 600,
    pay_by_max_seconds: config.settlement?.pay_by_max_seconds ?? 120,
  }
  return { apiUrl, venues: config.venues, settlement }
}
