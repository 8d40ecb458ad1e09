/**
 * The configuration `npm start` uses when SETTLEMENT_CONFIG is unset. Its operator key is anvil's
 * well-known account #0: TEST ONLY, public to everyone, never fund it on a real chain.
 */
export const DevelopmentConfig = {
  venues: [
    {
      id: "hyperliquid",
      name: "Hyperliquid (devnet)",
      kind: "hyperliquid",
      chain_id: 999,
      rpc_urls: ["http://127.0.0.1:8545"],
      token: "0x5fbdb2315678afecb367f032d93f642f64180aa3",
      symbol: "USDC",
      decimals: 6,
      escrow: "0xe7f1725e7734ce288f8367e1bb143e90bb3f0512",
      deployment_block: 0,
    },
    {
      id: "aster",
      name: "Aster (devnet)",
      kind: "aster",
      chain_id: 42161,
      rpc_urls: ["http://127.0.0.1:8546"],
      token: "0x5fbdb2315678afecb367f032d93f642f64180aa3",
      symbol: "USDC",
      decimals: 6,
      escrow: "0xe7f1725e7734ce288f8367e1bb143e90bb3f0512",
      deployment_block: 0,
    },
  ],
  app_origins: ["http://localhost:5173", "http://127.0.0.1:5173"],
  admins: [],
  operator_key: "0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80",
} as const
