/**
 * The venue layer's contract (DESIGN §7): one adapter per configured venue, speaking that venue's real wire
 * format. The adapter never decides policy (balances after deductions, one withdrawal at a time, when an unknown
 * becomes final); it reads, builds, relays and classifies, and says exactly what it saw.
 */
import { Data, type Effect } from "effect"
import type { Address, Hex } from "viem"
import type { VenueKind } from "../Config.ts"
import type { TypedDataObject } from "../Domain/TypedData.ts"
import type { AgentUnavailable, TypedDataRejected, VenueUnavailable, WithdrawalRequestInvalid } from "./VenueErrors.ts"

/** Spec `POST /v1/withdrawals/prepare` `to`: the linked signer on the escrow chain, or the venue wallet route. */
export type WithdrawalTarget = "wallet" | "signer"

export interface WithdrawableBalance {
  /** Token base units, rounded down from the venue's figure. */
  readonly amountBaseUnits: bigint
  /**
   * Our clock (Unix ms) just *before* the request left: every transfer acknowledged after this instant may be
   * missing from the figure, so the caller deducts those (spec prepare rule 3). Erring early double-counts, never
   * misses.
   */
  readonly readAtMs: number
}

export interface WithdrawalRequest {
  /** The venue account (the linked address); it signs the typed data. */
  readonly address: Address
  readonly amountBaseUnits: bigint
  readonly to: WithdrawalTarget
  /** Who receives the funds. For `signer` it must be `address` (the venue pays the signer on the escrow chain). */
  readonly destination: Address
  /** Unix ms from the caller's Clock; becomes the venue nonce. Strictly increasing per signer is the caller's job. */
  readonly nowMs: number
  /**
   * `amountBaseUnits` is what must reach `destination`: the venue's fee is added to the signed amount (rounded up
   * to the venue's precision). A transfer's funding withdrawal asks this; a plain withdrawal signs the amount asked.
   */
  readonly feeOnTop?: boolean
}

/** The venue action a prepared withdrawal uses. */
export type WithdrawalAction = "hyperliquid.withdraw3" | "hyperliquid.sendAsset" | "aster.withdraw"

export interface PreparedWithdrawal {
  readonly typedData: TypedDataObject
  /** Whole tokens exactly as signed ("12.5"). */
  readonly amount: string
  /** The signed amount in base units; the destination receives it less `feeBaseUnits`. */
  readonly amountBaseUnits: bigint
  /** The venue's fee, taken out of the signed amount on the way (0 where the wire signs none). */
  readonly feeBaseUnits: bigint
  readonly action: WithdrawalAction
  /** The venue nonce the signature commits to (Hyperliquid ms, Aster µs); the key for evidence. */
  readonly nonce: number
  /** Who receives the funds (not necessarily the wire `destination`, e.g. Hyperliquid's system address). */
  readonly destination: Address
  /** After this instant (Unix ms) the venue can no longer accept this signed transfer (nonce window). */
  readonly replayableUntilMs: number
}

export interface SubmitRequest {
  /** The venue account the typed data is for (Aster authenticates the relay as this user's agent). */
  readonly address: Address
  /** As returned by `buildWithdrawal` (or the agent approval); JSON integers may be numbers or decimal strings. */
  readonly typedData: unknown
  /** 65 bytes r ‖ s ‖ v. */
  readonly signature: Hex
}

/**
 * How a relayed request ended, as far as the venue told us:
 * - Acknowledged: the venue accepted it (funds may not have arrived yet).
 * - Refused: a clear refusal, or certainly never delivered (`sent: false`); nothing was applied, a new attempt is
 *   safe.
 * - Unknown: it may have been applied (timeout, 5xx, reset after sending, "accepted then answered an error",
 *   an answer we cannot read). Reconcile with `findEvidence`; never resubmit blindly.
 */
export type SubmitOutcome = Data.TaggedEnum<{
  Acknowledged: { readonly venueRef: string }
  Refused: { readonly error: string; readonly code: string; readonly sent: boolean }
  Unknown: { readonly reason: string }
}>
export const SubmitOutcome = Data.taggedEnum<SubmitOutcome>()

export interface EvidenceQuery {
  readonly address: Address
  /** The nonce of the prepared withdrawal (Hyperliquid ms, Aster µs). */
  readonly nonce: number
  readonly amountBaseUnits: bigint
  readonly destination: Address
  /**
   * Venue refs already attributed to the account's other (relayed) withdrawals on this venue: never this one's
   * evidence. Aster's history names no nonce, so two withdrawals of one amount within the hour are told apart only
   * this way (one account has at most one withdrawal in flight).
   */
  readonly claimedRefs?: ReadonlyArray<string>
}

/**
 * - Found: the venue's ledger shows the transfer (`venueRef`: Hyperliquid L1 hash, Aster withdraw id).
 * - NotFound: the venue answered and shows no such transfer as of `checkedAtMs`. It is final ("never applied")
 *   only once `checkedAtMs > replayableUntilMs`; before that the signed request could still land.
 * - Unavailable: the ledger could not be read.
 */
export type Evidence = Data.TaggedEnum<{
  Found: { readonly venueRef: string; readonly atMs: number }
  NotFound: { readonly checkedAtMs: number; readonly replayableUntilMs: number }
  Unavailable: { readonly reason: string }
}>
export const Evidence = Data.taggedEnum<Evidence>()

export interface AgentApprovalRequest {
  readonly user: Address
  readonly agent: Address
  /** Unix µs from the caller's Clock; the venue accepts it only within seconds. */
  readonly nowMicros: number
}

export interface PreparedAgentApproval {
  readonly typedData: TypedDataObject<"Message">
  /** The approval body (`msg`), what spec auth/challenge returns as `message`. */
  readonly message: string
  readonly nonce: number
  /** Agent expiry, Unix ms (the linked account's `expires_at`). */
  readonly expiresAtMs: number
}

/** The agent-approval capability; present only on the venue that uses agent approvals (Aster). */
export interface AgentApproval {
  readonly agentApprovalTypedData: (
    request: AgentApprovalRequest,
  ) => Effect.Effect<PreparedAgentApproval, WithdrawalRequestInvalid>
  /** `venueRef` of an acknowledgement is the agent address. */
  readonly registerAgent: (request: SubmitRequest) => Effect.Effect<SubmitOutcome, TypedDataRejected>
}

export interface VenueAdapter {
  readonly venueId: string
  readonly kind: VenueKind
  readonly withdrawable: (address: Address) => Effect.Effect<WithdrawableBalance, VenueUnavailable | AgentUnavailable>
  readonly buildWithdrawal: (
    request: WithdrawalRequest,
  ) => Effect.Effect<PreparedWithdrawal, WithdrawalRequestInvalid | VenueUnavailable | AgentUnavailable>
  readonly submitWithdrawal: (
    request: SubmitRequest,
  ) => Effect.Effect<SubmitOutcome, TypedDataRejected | AgentUnavailable>
  readonly findEvidence: (query: EvidenceQuery) => Effect.Effect<Evidence>
  readonly agentApproval: AgentApproval | undefined
}
