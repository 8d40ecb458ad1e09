/**
 * The OpenAPI document's `info.description` (issue 18 item 3): what a browser app or a bot needs before the
 * reference, walking through sign-in, linking, a transfer and a close. Markdown; kept beside the contract
 * (src/Http/Api.ts) and checked by test/integration/openapi-docs.test.ts.
 */
export const API_GUIDE = `
Settles token transfers between perpetual-DEX venues through on-chain escrows. The service relays every
transaction and pays gas, but every movement of your funds is authorised by your own signature: treat every
\`to_sign\` item as a proposal, check it against your intent and reviewed configuration (escrow addresses, chain
ids, amounts, recipient), then sign.

## Conventions

- JSON names are snake_case; unknown request fields are refused (400); bodies are at most 64 KiB.
- Amounts are decimal strings of token base units (\`"1000000"\` is one token of a six-decimal asset).
  Cursors, revisions and generations are decimal strings: keep them lossless.
- Every failure is \`{"error": {"code", "message", "request_id", "retryable"}}\`: branch on \`code\`, never on
  \`message\`. \`retryable\` is a transport hint, not permission for a new intent. On 429 wait \`Retry-After\`
  seconds and send the same request again.
- Idempotency comes from your client ids (\`client_order_id\`, \`client_take_id\`, \`client_transfer_id\`):
  persist yours before the first attempt; the same id and parameters answer the same resource (a transfer's
  repeat answers 200), other parameters 409 \`STATE_CONFLICT\`.
- Private GETs answer \`x-event-cursor\`: subscribe to \`GET /v1/stream\` after it (see \`/v1/asyncapi.json\`) to
  receive every later change.

## Authentication

Two bearer schemes, both sent as \`Authorization: Bearer <token>\` and never in a URL:

- **session** — a master session from sign-in (seven days by default, revocable). Every financial route needs one.
- **credential** — a maker credential \`mk_…\` issued with \`POST /v1/credentials\`, bound to one quote identity,
  with scopes \`quote\` (lease renewal, quote publication) and \`read\` (the legacy escrow scan, private stream
  events). A credential never moves capital, links accounts, takes or closes.

## 1. Sign in (SIWE)

1. \`POST /v1/auth/challenge\` \`{"address": "0xYourWallet"}\` answers \`{message, nonce, expires_at}\`.
2. Check the message's domain, URI, address and expiry, then \`personal_sign\` it exactly as given.
3. \`POST /v1/auth/verify\` \`{"nonce", "signature"}\` answers \`{token, expires_at, master_address}\`. The first
   sign-in creates your account. \`GET /v1/me\` shows it; \`access\` must be \`granted\` for new commitments
   (\`ACCESS_REQUIRED\` otherwise).

## 2. Link a venue account

1. \`POST /v1/accounts/challenge\` \`{"venue": "hyperliquid", "address": "0xVenueAccount"}\` answers a one-use link
   message (on the venue that uses agent approvals, its approval as \`typed_data\`).
2. Sign it with that address and send \`POST /v1/accounts\` \`{venue, address, nonce, signature}\`. Your master
   address links without a signature.

## 3. Move funds across venues (a transfer intent)

1. Optionally \`POST /v1/takes/preview\` \`{from, to, amount_in}\` shows the route and price now; it reserves nothing.
2. \`POST /v1/transfers\` \`{client_transfer_id, from, to, amount_in, min_out, payer, recipient}\` answers the intent
   (201; 200 for an identical repeat). When the payer's wallet lacks \`amount_in\`, \`withdrawal_preparation\`
   holds the venue withdrawal that prefunds it: sign its \`typed_data\` and submit it with \`POST /v1/withdrawals\`.
3. Settlement v2: give your client's pay key (a fresh key your client keeps) with
   \`PUT /v1/transfers/{id}/take/pay-key\`. The intent's take then exists (\`take_id\`).
4. \`GET /v1/takes/{take_id}\` answers \`to_sign\`: one \`permit\` and one \`margin_move\` (the escrow \`Fill\`) per
   fill. Check each, sign with the payer's wallet (\`eth_signTypedData_v4\`) and send them with
   \`POST /v1/takes/{take_id}/signatures\` before \`pay_deadline\`.
5. The service locks each fill on the maker's chain. Once your client has read every lock final **from its own
   chain endpoint**, the pay key signs the \`pay_authorization\` item (offered in \`to_sign\` and pushed on the
   stream) and sends it to the same signatures route; the payment follows, the maker reveals, and the recipient
   is credited on \`to\`. \`take_final\` on the intent turns true when every fill is final.
6. Recovery after a lost response: send the same request again, or walk \`GET /v1/transfers\`; recover the take
   before computing a new shortfall. Never sign a new transfer around an \`unknown\` withdrawal.

## 4. Close escrowed funds

1. \`GET /v1/escrow\` lists the orders that hold funds for your linked addresses (the zero \`order_id\` is an
   owner's available balance).
2. \`POST /v1/escrow/close/prepare\` \`{venue, order_id, to_margin}\` answers the \`close_offer\` item: sign it with the
   owning address.
3. \`POST /v1/escrow/close\` with the same terms and the signature answers the order with \`closing: true\`; the
   service relays the close and pays gas. The same terms again answer the same close. A managed order (one this
   service operates) is closed with \`POST /v1/closes\`.

## Makers

A maker registers a quote identity for a separate signer key (\`POST /v1/quote-identities\`), issues a \`quote\`
credential for its bot, funds an order (\`POST /v1/orders\`), renews the identity's lease
(\`PUT /v1/quote-identities/{id}/lease\`, a dead-man switch: new admissions stop when it lapses) and publishes
signed quote sets (\`PUT /v1/orders/{id}/quotes\`). The maker CLI does all of it: \`npm run maker -- --help\`.
`.trim()
