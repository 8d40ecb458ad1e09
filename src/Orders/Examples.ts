/**
 * Examples of the orders contract for the OpenAPI document (issue 18 item 3), annotated on the schemas of Api.ts.
 * One story across Orders, Escrow, Withdrawals and Trades: a maker (owner 0x5da0219448a27ea90aca305258d53b972e319c0b)
 * funds an order on hyperliquid (chain 999) that receives on aster (chain 42161) and quotes it under a quote
 * identity (signer 0xb7389293049d10485916ea9bd02eefc7531d5ec9); a taker takes it; the owner withdraws and closes.
 * Typed data is built with the service's own builders, every signature is real (throwaway keys) and verifies, and
 * the trade's proof passes verifyTradeProofV2. Escrow and operator addresses are made up.
 */
/** POST /v1/orders: an order of 250 USDC on hyperliquid, receiving on aster. */
export const CREATE_ORDER_REQUEST = {
  client_order_id: "mm-hl-2025-11-25-01",
  venue: "hyperliquid",
  receive_venue: "aster",
  owner_address: "0x5da0219448a27ea90aca305258d53b972e319c0b",
  amount: "250000000",
  quote_identity_id: "3f1c9a52-7d4e-4b8a-9c61-2e5f0a7b8d13",
} as const

/** The owner's fund_order and permit sign items of the example order (after the venue_transfer when margin funds it). */
const FUND_AND_PERMIT = [
  {
    kind: "fund_order",
    signer: "0x5da0219448a27ea90aca305258d53b972e319c0b",
    typed_data: {
      domain: {
        name: "SettlementEscrow",
        version: "2",
        chainId: 999,
        verifyingContract: "0x0B555E5B749817BA3a2Df14dE73EA588c009531c",
      },
      types: {
        FundOrder: [
          { name: "orderId", type: "bytes32" },
          { name: "owner", type: "address" },
          { name: "operator", type: "address" },
          { name: "quoteSigner", type: "address" },
          { name: "amount", type: "uint256" },
          { name: "deadline", type: "uint256" },
        ],
      },
      primaryType: "FundOrder",
      message: {
        orderId: "0x1dafaff67e857446f88e44a55e34c22fa410abb2e583028ca7911f1e7f78c43c",
        owner: "0x5Da0219448a27EA90ACA305258d53b972e319C0B",
        operator: "0x50411332149d286B93448711aDb48cE51c327E8D",
        quoteSigner: "0xB7389293049d10485916Ea9bd02EEFC7531d5ec9",
        amount: "250000000",
        deadline: "1764082800",
      },
    },
  },
  {
    kind: "permit",
    signer: "0x5da0219448a27ea90aca305258d53b972e319c0b",
    typed_data: {
      domain: {
        name: "USDC",
        version: "2",
        chainId: 999,
        verifyingContract: "0xb88339CB7199b77E23DB6E890353E22632Ba630f",
      },
      types: {
        Permit: [
          { name: "owner", type: "address" },
          { name: "spender", type: "address" },
          { name: "value", type: "uint256" },
          { name: "nonce", type: "uint256" },
          { name: "deadline", type: "uint256" },
        ],
      },
      primaryType: "Permit",
      message: {
        owner: "0x5Da0219448a27EA90ACA305258d53b972e319C0B",
        spender: "0x0B555E5B749817BA3a2Df14dE73EA588c009531c",
        value: "250000000",
        nonce: "0",
        deadline: "1764082800",
      },
    },
  },
] as const

/** The order just created (state preparing) when the owner's wallet holds the amount: fund_order and permit. */
export const ORDER_PREPARATION_WALLET = {
  order: {
    id: "0x1dafaff67e857446f88e44a55e34c22fa410abb2e583028ca7911f1e7f78c43c",
    venue: "hyperliquid",
    receive_venue: "aster",
    owner_address: "0x5da0219448a27ea90aca305258d53b972e319c0b",
    state: "preparing",
    error: "",
    amount: "250000000",
    escrow_available: "0",
    quotable: "0",
    filled: "0",
    received: "0",
    last_sequence: null,
    quote_set: null,
    margin_move: null,
    transactions: [],
    created_at: "2025-11-25T14:00:00.000Z",
    updated_at: "2025-11-25T14:00:00.000Z",
    client_order_id: "mm-hl-2025-11-25-01",
    quote_identity_id: "3f1c9a52-7d4e-4b8a-9c61-2e5f0a7b8d13",
    quote_signer: "0xb7389293049d10485916ea9bd02eefc7531d5ec9",
  },
  to_sign: [...FUND_AND_PERMIT],
} as const

/** The same order when the wallet holds only 100 USDC: a venue_transfer of the 150 USDC shortfall comes first. */
export const ORDER_PREPARATION_MARGIN = {
  order: {
    id: "0x1dafaff67e857446f88e44a55e34c22fa410abb2e583028ca7911f1e7f78c43c",
    venue: "hyperliquid",
    receive_venue: "aster",
    owner_address: "0x5da0219448a27ea90aca305258d53b972e319c0b",
    state: "preparing",
    error: "",
    amount: "250000000",
    escrow_available: "0",
    quotable: "0",
    filled: "0",
    received: "0",
    last_sequence: null,
    quote_set: null,
    margin_move: null,
    transactions: [],
    created_at: "2025-11-25T14:00:00.000Z",
    updated_at: "2025-11-25T14:00:00.000Z",
    client_order_id: "mm-hl-2025-11-25-01",
    quote_identity_id: "3f1c9a52-7d4e-4b8a-9c61-2e5f0a7b8d13",
    quote_signer: "0xb7389293049d10485916ea9bd02eefc7531d5ec9",
  },
  to_sign: [
    {
      kind: "venue_transfer",
      signer: "0x5da0219448a27ea90aca305258d53b972e319c0b",
      typed_data: {
        types: {
          EIP712Domain: [
            { name: "name", type: "string" },
            { name: "version", type: "string" },
            { name: "chainId", type: "uint256" },
            { name: "verifyingContract", type: "address" },
          ],
          "HyperliquidTransaction:SendAsset": [
            { name: "hyperliquidChain", type: "string" },
            { name: "destination", type: "string" },
            { name: "sourceDex", type: "string" },
            { name: "destinationDex", type: "string" },
            { name: "token", type: "string" },
            { name: "amount", type: "string" },
            { name: "fromSubAccount", type: "string" },
            { name: "nonce", type: "uint64" },
          ],
        },
        primaryType: "HyperliquidTransaction:SendAsset",
        domain: {
          name: "HyperliquidSignTransaction",
          version: "1",
          chainId: 42161,
          verifyingContract: "0x0000000000000000000000000000000000000000",
        },
        message: {
          hyperliquidChain: "Mainnet",
          destination: "0x2000000000000000000000000000000000000000",
          sourceDex: "",
          destinationDex: "spot",
          token: "USDC:0x6d1e7cde53ba9467b783cb7c530ce054",
          amount: "150",
          fromSubAccount: "",
          nonce: 1764079200412,
        },
      },
    },
    ...FUND_AND_PERMIT,
  ],
} as const

/** POST /v1/orders/{id}/signatures: the owner's signatures of fund_order and permit (wallet funding). */
export const ORDER_SIGNATURES_REQUEST = {
  fund_order:
    "0x6492576f824f06b63270e761d4fbdc5ec19cb54d935e9702da98d2da73973a2a51c1a1c1f11e86457ed1a9b46a9d2f3eab8cdb8755155f3862217de41debd5371b",
  permit:
    "0xb0eb8cd0651c24bdb06d2d4fe3808e7376de01d1782000cf27c1c8240cb83b25213d764bb0690ce0d8d4d52e1ac453ea8587ad20bb4d45cdf8d59823dee08d011c",
} as const

/** The order once its signatures are accepted: fund is with the relayer. */
export const ORDER_FUNDING = {
  id: "0x1dafaff67e857446f88e44a55e34c22fa410abb2e583028ca7911f1e7f78c43c",
  venue: "hyperliquid",
  receive_venue: "aster",
  owner_address: "0x5da0219448a27ea90aca305258d53b972e319c0b",
  state: "funding",
  error: "",
  amount: "250000000",
  escrow_available: "0",
  quotable: "0",
  filled: "0",
  received: "0",
  last_sequence: null,
  quote_set: null,
  margin_move: null,
  transactions: [
    {
      kind: "fund",
      chain_id: 999,
      hash: "0x8eeef51ffab2dbeaa0c6915c43fbd466c6f64e3222e7077992aaecc1c2514d5f",
      status: "pending",
      error: "",
      at: "2025-11-25T14:01:35.000Z",
    },
  ],
  created_at: "2025-11-25T14:00:00.000Z",
  updated_at: "2025-11-25T14:01:34.000Z",
  client_order_id: "mm-hl-2025-11-25-01",
  quote_identity_id: "3f1c9a52-7d4e-4b8a-9c61-2e5f0a7b8d13",
  quote_signer: "0xb7389293049d10485916ea9bd02eefc7531d5ec9",
} as const

/** The order funded, with the active quote set of QUOTE_SET_REQUEST. */
export const ORDER_FUNDED = {
  id: "0x1dafaff67e857446f88e44a55e34c22fa410abb2e583028ca7911f1e7f78c43c",
  venue: "hyperliquid",
  receive_venue: "aster",
  owner_address: "0x5da0219448a27ea90aca305258d53b972e319c0b",
  state: "funded",
  error: "",
  amount: "250000000",
  escrow_available: "250000000",
  quotable: "250000000",
  filled: "0",
  received: "0",
  last_sequence: 1764079500123,
  quote_set: {
    sequence: 1764079500123,
    expires_at: "2025-11-25T14:07:00.000Z",
    quotes: [
      {
        venue: "aster",
        chain_id: 42161,
        token: "0xaf88d065e77c8cc2239327c5edb3a432268e5831",
        recipient: "0x5da0219448a27ea90aca305258d53b972e319c0b",
        supply: "999000",
        receive: "1000000",
        min_fill: "100000",
        escrow: "0x085b75323b25d26fb37542c9f546ef1bbce80119",
      },
    ],
    signature:
      "0x1ddfe7cce0b079c402e5853424d1b523ed1e6fb629d12ac8039ee352b4b3d92957264fe6636b31bf48956e7443d0a1b953581373d18a9884a3cd4de981d14da21c",
    created_at: "2025-11-25T14:05:01.000Z",
    valid_until: "2025-11-25T14:07:00.000Z",
    quote_size: "125000000",
    identity_generation: "3",
    active: true,
    issued_at: 1764079500,
    hashlock_root: "0x8559ca1268804bc6c68adf99f7ea9989e475bff738389a36b339462b58d0b5be",
    hashlock_count: 4,
  },
  margin_move: null,
  transactions: [
    {
      kind: "fund",
      chain_id: 999,
      hash: "0x8eeef51ffab2dbeaa0c6915c43fbd466c6f64e3222e7077992aaecc1c2514d5f",
      status: "final",
      error: "",
      at: "2025-11-25T14:02:20.000Z",
    },
  ],
  created_at: "2025-11-25T14:00:00.000Z",
  updated_at: "2025-11-25T14:02:30.000Z",
  client_order_id: "mm-hl-2025-11-25-01",
  quote_identity_id: "3f1c9a52-7d4e-4b8a-9c61-2e5f0a7b8d13",
  quote_signer: "0xb7389293049d10485916ea9bd02eefc7531d5ec9",
} as const

/** The funded order after DELETE /v1/orders/{id}/quotes: its quote set is inactive. */
export const ORDER_QUOTES_CANCELLED = {
  ...ORDER_FUNDED,
  quote_set: { ...ORDER_FUNDED.quote_set, active: false },
  updated_at: "2025-11-25T14:06:00.000Z",
} as const

/** The same answer to the order's `quote` credential: no balances, no margin move (src/Orders/View.ts). */
export const ORDER_FOR_CREDENTIAL = (() => {
  const { escrow_available, quotable, filled, received, margin_move, ...shown } = ORDER_FUNDED
  return shown
})()

/** PUT /v1/orders/{id}/quotes on the v2 escrow: one quote paying on aster, four hashlocks. */
export const QUOTE_SET_REQUEST = {
  sequence: 1764079500123,
  valid_until: 1764079620,
  quote_size: "125000000",
  identity_generation: "3",
  quotes: [
    {
      venue: "aster",
      chain_id: 42161,
      token: "0xaf88d065e77c8cc2239327c5edb3a432268e5831",
      recipient: "0x5da0219448a27ea90aca305258d53b972e319c0b",
      supply: "999000",
      receive: "1000000",
      min_fill: "100000",
      escrow: "0x085b75323b25d26fb37542c9f546ef1bbce80119",
    },
  ],
  signature:
    "0x1ddfe7cce0b079c402e5853424d1b523ed1e6fb629d12ac8039ee352b4b3d92957264fe6636b31bf48956e7443d0a1b953581373d18a9884a3cd4de981d14da21c",
  issued_at: 1764079500,
  hashlock_root: "0x8559ca1268804bc6c68adf99f7ea9989e475bff738389a36b339462b58d0b5be",
  hashlock_count: 4,
  hashlocks: [
    "0x1d9a33998930355e49ad14f0008543ad56ff507d46e9cb50e96f5488284efd6e",
    "0x0c63c45bd8a25498608f9f47a23f9da5089b10104ef2b74454ce4ae621f69af6",
    "0x7f3c379baa3a945195da0e7dc83bea9a25db20efce0d9fd9701948f82c651aa3",
    "0xefccdf4e011035accea4a2c0c608deff4ffbe298772e50b331f2a9fe02c89ee0",
  ],
} as const
