// The banner `npm start` prints once the devnet answers: where everything is, the test accounts, what to try next.
import { relative } from "node:path"
import type { Hex } from "viem"
import { privateKeyToAddress } from "viem/accounts"
import { ANVIL_PRIVATE_KEYS } from "./Anvil.ts"
import type { RunningChain } from "./DevnetConfig.ts"
import { DEVNET_ROLES } from "./DevnetOptions.ts"

export interface BannerInput {
  readonly apiUrl: string
  readonly chains: ReadonlyArray<RunningChain>
  readonly dataDir: string
  readonly configFile: string
  /** e.g. "embedded PostgreSQL in .data/pg" or "DATABASE_URL". */
  readonly database: string
  /** true: contracts deployed by this start; false: an existing deployment resumed. */
  readonly fresh: boolean
  readonly startupMs: number
  readonly cwd?: string
}

const roleOf = (index: number): string => {
  switch (index) {
    case DEVNET_ROLES.operator:
      return "operator + deployer: the service signs with it, do not use it in a wallet"
    case DEVNET_ROLES.admin:
      return "admin (listed in admins); has legacy offers"
    case 2:
      return "has legacy offers"
    case DEVNET_ROLES.simulatorHotWallet:
      return "venue simulators' hot wallet"
    default:
      return ""
  }
}

const shown = (path: string, cwd: string) => {
  const rel = relative(cwd, path)
  return rel === "" ? "." : rel.startsWith("..") ? path : `./${rel}`
}

export const renderBanner = (b: BannerInput): string => {
  const cwd = b.cwd ?? process.cwd()
  const rule = "─".repeat(100)
  const user = privateKeyToAddress(ANVIL_PRIVATE_KEYS[3] as Hex)
  const lines = [
    rule,
    `  Settlement devnet is up (${(b.startupMs / 1000).toFixed(1)} s, ${b.fresh ? "contracts deployed now" : "resumed from existing data"})`,
    "",
    `  API        ${b.apiUrl}`,
    `  Docs       ${b.apiUrl}/v1/docs`,
    `  Health     ${b.apiUrl}/health   (503 until every chain is watched and fresh)`,
    `  Config     ${shown(b.configFile, cwd)}   (the service's SETTLEMENT_CONFIG)`,
    `  Database   ${b.database}`,
    `  Data dir   ${shown(b.dataDir, cwd)}   (kept across restarts; npm run devnet:reset wipes it)`,
    "",
    "  Chains (interval mining, 1 block/s; finalized lags latest by 4 blocks)",
    ...b.chains.flatMap((c) => [
      `    ${c.spec.name.padEnd(22)} chain ${String(c.deployment.chainId).padEnd(6)} RPC ${c.rpcUrl}` +
        (c.apiUrl === undefined ? "" : `   venue API ${c.apiUrl}`),
      `      USDC ${c.deployment.contracts.token.address}   escrow ${c.deployment.contracts.escrow.address}` +
        `   legacy escrow ${c.deployment.contracts.legacyEscrow.address}`,
    ]),
    "",
    "  Test accounts: anvil's well-known keys. TEST ONLY: these keys are public, never use them on a real chain.",
    "  Each started with 10 000 ETH and 1 000 000 USDC on both chains.",
    ...ANVIL_PRIVATE_KEYS.map((key, i) => {
      const role = roleOf(i)
      return `    #${i} ${privateKeyToAddress(key as Hex)}  ${key}${role === "" ? "" : `  ${role}`}`
    }),
    "",
    "  Next:",
    `    curl ${b.apiUrl}/v1/info`,
    `    curl -X POST ${b.apiUrl}/v1/auth/challenge -H 'content-type: application/json' -d '{"address":"${user}"}'`,
    "    then personal_sign the message with account #3's key and POST {nonce, signature} to /v1/auth/verify.",
    "  Ctrl-C stops everything (the data stays).",
    rule,
  ]
  return lines.join("\n")
}
