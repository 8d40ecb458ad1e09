/**
 * Withdrawal states (spec: Withdrawal `state`; DESIGN §4 WithdrawalDesk) and their transitions:
 *
 *   queued ──claim──▶ submitting ──acknowledged──▶ relayed    (the venue accepted it; funds may still be on the way)
 *                        │ ├────────refused─────▶ failed     (a clear refusal, or never sent: nothing applied)
 *                        │ └──no clear answer───▶ unknown    (it may have reached the venue)
 *                        └──service restarted───▶ unknown    (never re-sent: the send may have happened)
 *   queued ──not relayable (no adapter, typed data rejected before sending)──▶ failed
 *   unknown ──evidence Found──▶ relayed
 *   unknown ──NotFound after the signed transfer can no longer land (nonce window passed)──▶ failed
 *   unknown ──NotFound before that, or Unavailable──▶ unknown (checked again later, with backoff)
 *
 * `relayed` and `failed` are final. Nothing ever signs or sends a new transfer for an unknown one. Each
 * transition bumps `revision` and journals `withdrawal.<state>` in the same transaction.
 */

export const WITHDRAWAL_STATES = ["queued", "submitting", "relayed", "failed", "unknown"] as const
export type WithdrawalState = (typeof WITHDRAWAL_STATES)[number]

/** States that may still move funds: they block another withdrawal on the venue account, and unlinking. */
export const OPEN_STATES: ReadonlyArray<WithdrawalState> = ["queued", "submitting", "unknown"]

export type WithdrawalTarget = "wallet" | "signer"

/** The allowed moves; a store update names its expected `from` state and writes nothing otherwise. */
export const TRANSITIONS: Readonly<Record<WithdrawalState, ReadonlyArray<WithdrawalState>>> = {
  queued: ["submitting", "failed"],
  submitting: ["relayed", "failed", "unknown"],
  unknown: ["relayed", "failed"],
  relayed: [],
  failed: [],
}

export const canMove = (from: WithdrawalState, to: WithdrawalState): boolean => TRANSITIONS[from].includes(to)

/** History page size (spec: 1 to 500); the default is ours. */
export const HISTORY_LIMIT_MAX = 500
export const HISTORY_LIMIT_DEFAULT = 100
/** Spec: cursors of history routes are at most 512 characters. */
export const HISTORY_CURSOR_MAX = 512
