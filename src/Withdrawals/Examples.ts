/**
 * Examples of the withdrawals contract for the OpenAPI document (issue 18 item 3), annotated on the schemas of Api.ts.
 * One story across Orders, Escrow, Withdrawals and Trades: a maker (owner 0x5da0219448a27ea90aca305258d53b972e319c0b)
 * funds an order on hyperliquid (chain 999) that receives on aster (chain 42161) and quotes it under a quote
 * identity (signer 0xb7389293049d10485916ea9bd02eefc7531d5ec9); a taker takes it; the owner withdraws and closes.
 * Typed data is built with the service's own builders, every signature is real (throwaway keys) and verifies, and
 * the trade's proof passes verifyTradeProofV2. Escrow and operator addresses are made up.
 */
/** POST /v1/withdrawals/prepare: 25 USDC from the linked hyperliquid account to its wallet. */
export const PREPARE_WITHDRAWAL_REQUEST = { venue: "hyperliquid", amount: "25000000", to: "wallet" } as const

/** The preparation's typed data: Hyperliquid withdraw3 (amount in whole USDC, time = the nonce in ms). */
const WITHDRAW_TYPED_DATA = {
  types: {
    EIP712Domain: [
      { name: "name", type: "string" },
      { name: "version", type: "string" },
      { name: "chainId", type: "uint256" },
      { name: "verifyingContract", type: "address" },
    ],
    "HyperliquidTransaction:Withdraw": [
      { name: "hyperliquidChain", type: "string" },
      { name: "destination", type: "string" },
      { name: "amount", type: "string" },
      { name: "time", type: "uint64" },
    ],
  },
  primaryType: "HyperliquidTransaction:Withdraw",
  domain: {
    name: "HyperliquidSignTransaction",
    version: "1",
    chainId: 42161,
    verifyingContract: "0x0000000000000000000000000000000000000000",
  },
  message: {
    hyperliquidChain: "Mainnet",
    destination: "0x5da0219448a27ea90aca305258d53b972e319c0b",
    amount: "25",
    time: 1764165600037,
  },
} as const

/** Its preparation: Hyperliquid withdraw3 typed data (amount in whole USDC, time = the nonce in ms). */
export const WITHDRAWAL_PREPARATION = {
  venue: "hyperliquid",
  amount: "25000000",
  to: "wallet",
  destination: "0x5da0219448a27ea90aca305258d53b972e319c0b",
  typed_data: WITHDRAW_TYPED_DATA,
  expires_at: "2025-11-26T14:10:00.000Z",
} as const

/** POST /v1/withdrawals: the prepared typed data unchanged and the linked address's signature. */
export const SUBMIT_WITHDRAWAL_REQUEST = {
  venue: "hyperliquid",
  amount: "25000000",
  to: "wallet",
  typed_data: WITHDRAW_TYPED_DATA,
  signature:
    "0x61508f9b2c558c98639647f1257a302ae54eb645745d5d1e1665175e34907c8604de4bffb7e9146058ff34b5016c51350b20c195ec92c2a1e390923bc689c3581c",
} as const

/** The withdrawal as submit answers it (queued, revision 1). */
export const WITHDRAWAL_QUEUED = {
  id: "8b0d2c4e-61f3-4a57-9e2b-5c7d1a93f0e4",
  venue: "hyperliquid",
  address: "0x5da0219448a27ea90aca305258d53b972e319c0b",
  amount: "25000000",
  to: "wallet",
  destination: "0x5da0219448a27ea90aca305258d53b972e319c0b",
  state: "queued",
  error: "",
  created_at: "2025-11-26T14:00:21.000Z",
  updated_at: "2025-11-26T14:00:21.000Z",
  revision: "1",
} as const

/** The same withdrawal once the venue acknowledged it (venue_ref and relayed_at appear). */
export const WITHDRAWAL_RELAYED = {
  id: "8b0d2c4e-61f3-4a57-9e2b-5c7d1a93f0e4",
  venue: "hyperliquid",
  address: "0x5da0219448a27ea90aca305258d53b972e319c0b",
  amount: "25000000",
  to: "wallet",
  destination: "0x5da0219448a27ea90aca305258d53b972e319c0b",
  state: "relayed",
  venue_ref: "0x5da0219448a27ea90aca305258d53b972e319c0b:1764165600037",
  error: "",
  created_at: "2025-11-26T14:00:21.000Z",
  updated_at: "2025-11-26T14:00:23.000Z",
  relayed_at: "2025-11-26T14:00:23.000Z",
  revision: "3",
} as const

/** GET /v1/withdrawals/history?limit=1: one withdrawal and the cursor of the next page. */
export const WITHDRAWAL_HISTORY = {
  data: [
    {
      id: "8b0d2c4e-61f3-4a57-9e2b-5c7d1a93f0e4",
      venue: "hyperliquid",
      address: "0x5da0219448a27ea90aca305258d53b972e319c0b",
      amount: "25000000",
      to: "wallet",
      destination: "0x5da0219448a27ea90aca305258d53b972e319c0b",
      state: "relayed",
      venue_ref: "0x5da0219448a27ea90aca305258d53b972e319c0b:1764165600037",
      error: "",
      created_at: "2025-11-26T14:00:21.000Z",
      updated_at: "2025-11-26T14:00:23.000Z",
      relayed_at: "2025-11-26T14:00:23.000Z",
      revision: "3",
    },
  ],
  next_cursor: "MTc2NDE2NTYyMTAwMDAwMC44YjBkMmM0ZS02MWYzLTRhNTctOWUyYi01YzdkMWE5M2YwZTQ.L7bvEdxKAhH3ngU_saO-nQ",
  has_more: true,
} as const
