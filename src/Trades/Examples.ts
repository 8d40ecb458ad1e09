/**
 * Examples of the trades contract for the OpenAPI document (issue 18 item 3), annotated on the schemas of Api.ts.
 * One story across Orders, Escrow, Withdrawals and Trades: a maker (owner 0x5da0219448a27ea90aca305258d53b972e319c0b)
 * funds an order on hyperliquid (chain 999) that receives on aster (chain 42161) and quotes it under a quote
 * identity (signer 0xb7389293049d10485916ea9bd02eefc7531d5ec9); a taker takes it; the owner withdraws and closes.
 * Typed data is built with the service's own builders, every signature is real (throwaway keys) and verifies, and
 * the trade's proof passes verifyTradeProofV2. Escrow and operator addresses are made up.
 */
/** GET /v1/trades?a=aster&b=hyperliquid: the last fills between the pair, latest first. */
export const RECENT_TRADES_ANSWER = {
  a: "aster",
  b: "hyperliquid",
  trades: [
    {
      id: "c2a7e915-04bd-4f6e-8d3a-71b9e6f25a08",
      from: "aster",
      amount_in: "25000000",
      amount_out: "24975000",
      at: "2025-11-25T14:08:50.000Z",
    },
    {
      id: "5e61b0d7-2f9a-4c38-b1e4-9a07c3d8f216",
      from: "hyperliquid",
      amount_in: "10000000",
      amount_out: "9990000",
      at: "2025-11-25T13:58:50.000Z",
    },
  ],
} as const

/** GET /v1/trades/history?limit=1: one settled v2 trade with its proof and the cursor of the next page. */
export const TRADE_HISTORY = {
  data: [
    {
      id: "c2a7e915-04bd-4f6e-8d3a-71b9e6f25a08",
      from: "aster",
      to: "hyperliquid",
      amount_in: "25000000",
      amount_out: "24975000",
      at: "2025-11-25T14:08:50.000Z",
      order_id: "0x1dafaff67e857446f88e44a55e34c22fa410abb2e583028ca7911f1e7f78c43c",
      proof: {
        escrow_version: 2,
        quote_set: {
          typed_data: {
            domain: {
              name: "SettlementEscrow",
              version: "2",
              chainId: 999,
              verifyingContract: "0x0B555E5B749817BA3a2Df14dE73EA588c009531c",
            },
            types: {
              QuoteSet: [
                { name: "owner", type: "address" },
                { name: "orderId", type: "bytes32" },
                { name: "sequence", type: "uint64" },
                { name: "generation", type: "uint64" },
                { name: "quoteSize", type: "uint256" },
                { name: "issuedAt", type: "uint64" },
                { name: "validUntil", type: "uint64" },
                { name: "hashlockRoot", type: "bytes32" },
                { name: "hashlockCount", type: "uint32" },
                { name: "quotes", type: "Quote[]" },
              ],
              Quote: [
                { name: "chainId", type: "uint256" },
                { name: "token", type: "address" },
                { name: "escrow", type: "address" },
                { name: "recipient", type: "address" },
                { name: "supply", type: "uint256" },
                { name: "receive", type: "uint256" },
                { name: "minFill", type: "uint256" },
              ],
            },
            primaryType: "QuoteSet",
            message: {
              owner: "0x5Da0219448a27EA90ACA305258d53b972e319C0B",
              orderId: "0x1dafaff67e857446f88e44a55e34c22fa410abb2e583028ca7911f1e7f78c43c",
              sequence: "1764079500123",
              generation: "3",
              quoteSize: "125000000",
              issuedAt: "1764079500",
              validUntil: "1764079620",
              hashlockRoot: "0x8559ca1268804bc6c68adf99f7ea9989e475bff738389a36b339462b58d0b5be",
              hashlockCount: 4,
              quotes: [
                {
                  chainId: "42161",
                  token: "0xaf88d065e77c8cC2239327C5EDb3A432268e5831",
                  escrow: "0x085B75323b25d26fb37542c9F546eF1bBce80119",
                  recipient: "0x5Da0219448a27EA90ACA305258d53b972e319C0B",
                  supply: "999000",
                  receive: "1000000",
                  minFill: "100000",
                },
              ],
            },
          },
          signature:
            "0x1ddfe7cce0b079c402e5853424d1b523ed1e6fb629d12ac8039ee352b4b3d92957264fe6636b31bf48956e7443d0a1b953581373d18a9884a3cd4de981d14da21c",
          signer: "0xb7389293049d10485916ea9bd02eefc7531d5ec9",
          hashlock_index: 0,
          hashlock_proof: [
            "0x74597c22586930079d7b9f83cf0e56051d41e4f110cce689fbb7c601e3087ebb",
            "0x6706ba3ba3df756a7e789bb0052ede6f1244adb257b2364883b0f1d09e94d6e9",
          ],
        },
        fill: {
          typed_data: {
            domain: {
              name: "SettlementEscrow",
              version: "2",
              chainId: 42161,
              verifyingContract: "0x085B75323b25d26fb37542c9F546eF1bBce80119",
            },
            types: {
              Fill: [
                { name: "fillId", type: "bytes32" },
                { name: "owner", type: "address" },
                { name: "orderId", type: "bytes32" },
                { name: "sequence", type: "uint64" },
                { name: "makerChainId", type: "uint256" },
                { name: "makerEscrow", type: "address" },
                { name: "takerChainId", type: "uint256" },
                { name: "takerEscrow", type: "address" },
                { name: "payer", type: "address" },
                { name: "payee", type: "address" },
                { name: "amountIn", type: "uint256" },
                { name: "recipient", type: "address" },
                { name: "amountOut", type: "uint256" },
                { name: "dex", type: "uint32" },
                { name: "toMargin", type: "bool" },
                { name: "hashlock", type: "bytes32" },
                { name: "hashlockIndex", type: "uint32" },
                { name: "payKey", type: "address" },
                { name: "payBy", type: "uint64" },
                { name: "makerExpiry", type: "uint64" },
                { name: "takerExpiry", type: "uint64" },
              ],
            },
            primaryType: "Fill",
            message: {
              fillId: "0x61f3030a1d5d7f379f1749432a968cb72867fd2738feae59dd59b4409500f5ca",
              owner: "0x5Da0219448a27EA90ACA305258d53b972e319C0B",
              orderId: "0x1dafaff67e857446f88e44a55e34c22fa410abb2e583028ca7911f1e7f78c43c",
              sequence: "1764079500123",
              makerChainId: "999",
              makerEscrow: "0x0B555E5B749817BA3a2Df14dE73EA588c009531c",
              takerChainId: "42161",
              takerEscrow: "0x085B75323b25d26fb37542c9F546eF1bBce80119",
              payer: "0xA19fA5e853e2b7929D23996FdEc59bA3F9CACa7F",
              payee: "0x5Da0219448a27EA90ACA305258d53b972e319C0B",
              amountIn: "25000000",
              recipient: "0xA19fA5e853e2b7929D23996FdEc59bA3F9CACa7F",
              amountOut: "24975000",
              dex: 0,
              toMargin: true,
              hashlock: "0x1d9a33998930355e49ad14f0008543ad56ff507d46e9cb50e96f5488284efd6e",
              hashlockIndex: 0,
              payKey: "0x7435eCD0dCc4452cbfe596a8B4E36CFA5DC58270",
              payBy: "1764079660",
              makerExpiry: "1764082240",
              takerExpiry: "1764081040",
            },
          },
          signature:
            "0xd24471d7eb28c72070d4a6f8a0340e1a5ac0b2cc455dd57c17475c725f9577ae483648a87c67a530dc063930b3102de666e791484b9653d89379cb7f231f0b901c",
          signer: "0xa19fa5e853e2b7929d23996fdec59ba3f9caca7f",
          quote_index: 0,
          digest: "0x46664517f5b84d20448242fa6651a1035b18f7f2a178b15a2b2055088e836b1e",
        },
        pay_authorization: {
          typed_data: {
            domain: {
              name: "SettlementEscrow",
              version: "2",
              chainId: 42161,
              verifyingContract: "0x085B75323b25d26fb37542c9F546eF1bBce80119",
            },
            types: { PayTake: [{ name: "fills", type: "bytes32[]" }] },
            primaryType: "PayTake",
            message: { fills: ["0x46664517f5b84d20448242fa6651a1035b18f7f2a178b15a2b2055088e836b1e"] },
          },
          signature:
            "0x612ee9aede1bccd8d3d2fc8c4f1e541bebf5236e43266b0ad77fce38889f05955cde460c47b8697af74acb1f76bf5cc77c0d5a3d2f3e244cb356bdcb5ea093661b",
          signer: "0x7435ecd0dcc4452cbfe596a8b4e36cfa5dc58270",
        },
        secret: "0xc2b92f77f96069a1ca27c9668764c7c9e3fa69eef71926decd059ec7cbe8f4a2",
        transactions: [
          {
            kind: "lock",
            chain_id: 999,
            hash: "0x94d166c017c2d80bb811c860520f971a38a87a863c0e59f9e942355629433980",
            block_number: 21874305,
          },
          {
            kind: "pay",
            chain_id: 42161,
            hash: "0x4e381d53fe5e08b5dd02f7ee7ac9ad2663226eea61711748f50e829d5555424e",
            block_number: 402117988,
          },
          {
            kind: "claim_payment",
            chain_id: 42161,
            hash: "0x6ebce6cceb0e89f100335eb68475821b73b9a9853af4559652cef8c841518cc1",
            block_number: 402118301,
          },
          {
            kind: "claim",
            chain_id: 999,
            hash: "0x0760ac67d34c6f2735ed9b2c1eb52580a20291d0850897af61b3aca766233f3f",
            block_number: 21874390,
          },
        ],
      },
    },
  ],
  next_cursor:
    "eyJ0IjoiMTc2NDA3OTczMDAwMDAwMCIsImlkIjoiYzJhN2U5MTUtMDRiZC00ZjZlLThkM2EtNzFiOWU2ZjI1YTA4In0.HdvmbkmrWHvIBUAxvpAsQg",
  has_more: true,
} as const
