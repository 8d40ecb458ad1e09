/**
 * Examples of the transfer routes for the OpenAPI document (issue 18 item 3): a transfer of 25 USDC from Hyperliquid
 * to Aster whose payer's wallet lacked 10 USDC, so a venue withdrawal prefunds it (values are illustrative).
 */
import { toWireTypedData } from "../Domain/WireTypedData.ts"
import { EXAMPLE_TAKE_ID } from "../Takes/Examples.ts"

const PAYER = "0x90f79bf6eb2c4f870365e785982e1f101e93b906"

export const EXAMPLE_CREATE_TRANSFER_REQUEST = {
  client_transfer_id: "transfer-2026-11-28-0001",
  from: "hyperliquid",
  to: "aster",
  amount_in: "25000000",
  min_out: "24725250",
  payer: PAYER,
  recipient: PAYER,
  max_parts: 8,
}

/** The venue's withdrawal of the shortfall to the payer (Hyperliquid `usdSend`, amounts in whole USDC). */
const withdrawalTypedData = toWireTypedData({
  domain: {
    name: "HyperliquidSignTransaction",
    version: "1",
    chainId: 42161,
    verifyingContract: `0x${"0".repeat(40)}`,
  },
  types: {
    "HyperliquidTransaction:UsdSend": [
      { name: "hyperliquidChain", type: "string" },
      { name: "destination", type: "string" },
      { name: "amount", type: "string" },
      { name: "time", type: "uint64" },
    ],
  },
  primaryType: "HyperliquidTransaction:UsdSend",
  message: { hyperliquidChain: "Mainnet", destination: PAYER, amount: "10", time: 1_795_838_400_000 },
})

export const EXAMPLE_TRANSFER = {
  id: "be14b6f0-1c34-4d23-ac4d-72ee72497d0f",
  client_transfer_id: "transfer-2026-11-28-0001",
  client_take_id: "transfer:be14b6f0-1c34-4d23-ac4d-72ee72497d0f",
  from: "hyperliquid",
  to: "aster",
  amount_in: "25000000",
  min_out: "24725250",
  max_parts: 8,
  payer: PAYER,
  recipient: PAYER,
  from_chain_id: 999,
  to_chain_id: 42161,
  withdrawal_preparation: {
    amount: "10000000",
    typed_data: withdrawalTypedData,
    created_at: "2026-11-28T12:00:00.000Z",
  },
  withdrawal: null,
  take_id: null,
  take_final: null,
  cancelled_at: null,
  created_at: "2026-11-28T12:00:00.000Z",
}

/** The same intent once funded and settled: its take exists and every fill is final. */
export const EXAMPLE_TRANSFER_SETTLED = {
  ...EXAMPLE_TRANSFER,
  take_id: EXAMPLE_TAKE_ID,
  take_final: true,
}

export const EXAMPLE_TRANSFERS_PAGE = { items: [EXAMPLE_TRANSFER_SETTLED], next_cursor: null }

export const EXAMPLE_PAY_KEY_REQUEST = { pay_key: "0x42b189e8eb1bf4223d3f0733e66849f77743bab2" }
