/**
 * Examples of the escrow contract for the OpenAPI document (issue 18 item 3), annotated on the schemas of Api.ts.
 * One story across Orders, Escrow, Withdrawals and Trades: a maker (owner 0x5da0219448a27ea90aca305258d53b972e319c0b)
 * funds an order on hyperliquid (chain 999) that receives on aster (chain 42161) and quotes it under a quote
 * identity (signer 0xb7389293049d10485916ea9bd02eefc7531d5ec9); a taker takes it; the owner withdraws and closes.
 * Typed data is built with the service's own builders, every signature is real (throwaway keys) and verifies, and
 * the trade's proof passes verifyTradeProofV2. Escrow and operator addresses are made up.
 */
/** GET /v1/escrow: the owner's zero-id balance on aster and its managed order on hyperliquid. */
export const ESCROW_LIST = {
  data: [
    {
      venue: "aster",
      order_id: "0x0000000000000000000000000000000000000000000000000000000000000000",
      owner: "0x5da0219448a27ea90aca305258d53b972e319c0b",
      available: "1500000",
      operator: "0x0000000000000000000000000000000000000000",
      managed: false,
      closing: false,
    },
    {
      venue: "hyperliquid",
      order_id: "0x1dafaff67e857446f88e44a55e34c22fa410abb2e583028ca7911f1e7f78c43c",
      owner: "0x5da0219448a27ea90aca305258d53b972e319c0b",
      available: "250000000",
      operator: "0x50411332149d286b93448711adb48ce51c327e8d",
      managed: true,
      closing: false,
    },
  ],
} as const

/** POST /v1/escrow/close/prepare: release the zero-id balance on aster into margin. */
export const CLOSE_PREPARE_REQUEST = {
  venue: "aster",
  order_id: "0x0000000000000000000000000000000000000000000000000000000000000000",
  to_margin: true,
} as const

/** Its terms and the close_offer item (v2 escrow domain). */
export const CLOSE_PREPARATION = {
  venue: "aster",
  order_id: "0x0000000000000000000000000000000000000000000000000000000000000000",
  dex: 0,
  nonce: "52023116495957724989878204169339943491499821394024908848777042034062929201116",
  deadline: 1764090000,
  to_sign: [
    {
      kind: "close_offer",
      signer: "0x5da0219448a27ea90aca305258d53b972e319c0b",
      typed_data: {
        domain: {
          name: "SettlementEscrow",
          version: "2",
          chainId: 42161,
          verifyingContract: "0x085B75323b25d26fb37542c9F546eF1bBce80119",
        },
        types: {
          CloseOffer: [
            { name: "orderId", type: "bytes32" },
            { name: "owner", type: "address" },
            { name: "dex", type: "uint32" },
            { name: "toMargin", type: "bool" },
            { name: "nonce", type: "uint256" },
            { name: "deadline", type: "uint256" },
          ],
        },
        primaryType: "CloseOffer",
        message: {
          orderId: "0x0000000000000000000000000000000000000000000000000000000000000000",
          owner: "0x5Da0219448a27EA90ACA305258d53b972e319C0B",
          dex: 0,
          toMargin: true,
          nonce: "52023116495957724989878204169339943491499821394024908848777042034062929201116",
          deadline: "1764090000",
        },
      },
    },
  ],
  to_margin: true,
} as const

/** POST /v1/escrow/close: the same terms and the owner's signature of the close_offer. */
export const CLOSE_REQUEST = {
  venue: "aster",
  order_id: "0x0000000000000000000000000000000000000000000000000000000000000000",
  dex: 0,
  nonce: "52023116495957724989878204169339943491499821394024908848777042034062929201116",
  deadline: 1764090000,
  signature:
    "0xd22dda8fde3bc08743d9a80fe6c0bfd9b281b457a41ded73f676a1f8374d888f466cd2860f8a6d4725cbf5a2b917cbcd1bef85db0c7d99eb481fe469d2bca1751b",
  to_margin: true,
} as const

/** The zero-id balance with its close pending. */
export const ESCROW_ORDER_CLOSING = {
  venue: "aster",
  order_id: "0x0000000000000000000000000000000000000000000000000000000000000000",
  owner: "0x5da0219448a27ea90aca305258d53b972e319c0b",
  available: "1500000",
  operator: "0x0000000000000000000000000000000000000000",
  managed: false,
  closing: true,
} as const

/** POST /v1/closes: close the managed order to the owner's wallet. */
export const MANAGED_CLOSE_REQUEST = {
  venue: "hyperliquid",
  order_id: "0x1dafaff67e857446f88e44a55e34c22fa410abb2e583028ca7911f1e7f78c43c",
  to_margin: false,
} as const

/** The managed order with its close pending. */
export const MANAGED_ORDER_CLOSING = {
  venue: "hyperliquid",
  order_id: "0x1dafaff67e857446f88e44a55e34c22fa410abb2e583028ca7911f1e7f78c43c",
  owner: "0x5da0219448a27ea90aca305258d53b972e319c0b",
  available: "250000000",
  operator: "0x50411332149d286b93448711adb48ce51c327e8d",
  managed: true,
  closing: true,
} as const

/** GET /v1/escrow/legacy: one offer found in a retired escrow, more pages to follow. */
export const LEGACY_PAGE = {
  data: [
    {
      chain_id: 42161,
      escrow: "0x379af48eca70aa48b68de1280a1f34052a6cc209",
      owner: "0x5da0219448a27ea90aca305258d53b972e319c0b",
      kind: "offer",
      id: "1742",
      amount: "5000000",
      offer_id: "1742",
      refund_at: 1735689600,
      reclaimable: true,
    },
  ],
  next_cursor:
    "djEuNDIxNjEuMHgzNzlhZjQ4ZWNhNzBhYTQ4YjY4ZGUxMjgwYTFmMzQwNTJhNmNjMjA5LjI5ODExODAwMQ.biIHDC03wAxpwSa9luxePA",
  has_more: true,
} as const
