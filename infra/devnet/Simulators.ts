// HOOK(venue simulators): one venue simulator per devnet chain, its URL written as the venue's `api_url`.
//
// The simulators are built in infra/devnet/venues/ (another change). While their entry module
// `venues/VenueSimulator.ts` is absent, `loadSimulators` reports them unavailable with a note for the banner and
// the venues get no `api_url`; once it is there, the devnet starts one per chain. Loaded by a computed specifier
// so that this file type-checks (and the devnet runs) with or without that module.
import { existsSync } from "node:fs"
import { fileURLToPath } from "node:url"
import type { Address, Hex } from "viem"
import type { ChainKind } from "./Deploy.ts"

/** The interface agreed with the simulator work. */
export interface VenueSimulatorOptions {
  readonly kind: ChainKind
  /** 127.0.0.1 port; 0 = any free port. */
  readonly port: number
  readonly chainRpcUrl: string
  readonly chainId: number
  /** The chain's MockUSDC. */
  readonly token: Address
  /** MockCoreDepositWallet (hyperliquid) or MockAsterVault (aster): where margin deposits land. */
  readonly marginMock: Address
  /** Pays the venue's on-chain withdrawals. TEST ONLY anvil key. */
  readonly hotWalletKey: Hex
  /** chainId of the venue's off-chain typed data (42161). */
  readonly signatureChainId: number
  /** First block scanned for deposits. */
  readonly fromBlock?: bigint
  /** Errors of background work (deposit polling, payouts). */
  readonly onError?: (message: string) => void
}

export interface VenueSimulator {
  readonly url: string
  readonly stop: () => Promise<void>
  readonly control: unknown
}

interface SimulatorModule {
  readonly startVenueSimulator: (options: VenueSimulatorOptions) => Promise<VenueSimulator>
}

const ENTRY = new URL("./venues/VenueSimulator.ts", import.meta.url)

/** Whether the simulators' entry module is present. */
export const simulatorsPresent = (): boolean => existsSync(ENTRY)

export type SimulatorLoad =
  | { readonly available: true; readonly start: SimulatorModule["startVenueSimulator"] }
  | { readonly available: false; readonly note: string }

/** Finds the simulators' entry module; absent = not landed yet (not an error). */
export const loadSimulators = async (): Promise<SimulatorLoad> => {
  if (!simulatorsPresent()) {
    return { available: false, note: `not available yet (${fileURLToPath(ENTRY)} has not landed); no api_url` }
  }
  const specifier: string = ENTRY.href
  const mod = (await import(/* @vite-ignore */ specifier)) as Partial<SimulatorModule>
  if (typeof mod.startVenueSimulator !== "function") {
    throw new Error(`${fileURLToPath(ENTRY)} does not export startVenueSimulator(options)`)
  }
  return { available: true, start: mod.startVenueSimulator }
}
