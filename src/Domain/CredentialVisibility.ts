/**
 * What a maker credential is never shown of its order (spec, Authentication 6: a credential never sees balances or
 * withdrawals): the escrow's live amounts and the margin move (the venue withdrawal that funded it). The quote
 * routes' contract (src/Orders/Api.ts CredentialOrder) and their answer (src/Orders/View.ts) both use this list.
 */
export const SESSION_ONLY_ORDER_FIELDS = ["escrow_available", "quotable", "filled", "received", "margin_move"] as const

/**
 * The same rule on the stream: fields a credential's events never carry, whatever the kind (`withdrawal_id`:
 * `order.awaiting_margin` names the venue withdrawal that funds the order). Sessions get every field.
 */
export const SESSION_ONLY_EVENT_FIELDS: ReadonlyArray<string> = [...SESSION_ONLY_ORDER_FIELDS, "withdrawal_id"]
