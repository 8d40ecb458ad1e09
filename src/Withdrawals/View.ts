import { Schema } from "effect"
import { Timestamp } from "../Domain/Primitives.ts"
import type { WithdrawalRow } from "./Repo.ts"

export const WithdrawalTarget = Schema.Literal("wallet", "signer").annotations({
  identifier: "WithdrawalTarget",
  description: "signer: the linked address on the escrow chain; wallet: the account's venue wallet",
})

/** The wire shape of a withdrawal (the API's `Withdrawal` adds its name, description and examples). */
export const WithdrawalView = Schema.Struct({
  id: Schema.String,
  venue: Schema.String,
  /** The venue account (linked address) that signed it. */
  address: Schema.String,
  amount: Schema.String,
  to: Schema.NullOr(WithdrawalTarget),
  destination: Schema.String,
  state: Schema.Literal("queued", "submitting", "relayed", "failed", "unknown"),
  /** The venue's reference of the transfer: absent until the venue acknowledged it (spec types it string). */
  venue_ref: Schema.optional(Schema.String).annotations({
    description: "the venue's reference; absent until the venue acknowledged the transfer (never null)",
  }),
  error: Schema.String,
  created_at: Timestamp,
  updated_at: Timestamp,
  /** When the venue acknowledged it: absent until then (spec types it timestamp, never null). */
  relayed_at: Schema.optional(Timestamp).annotations({
    description: "when the venue acknowledged the transfer; absent until then (never null)",
  }),
  revision: Schema.String,
})

/**
 * A withdrawal on the wire. `venue_ref` and `relayed_at` are left out until the venue acknowledged the
 * transfer: the spec types them string and timestamp, so they are never null (absent when unknown).
 */
export const withdrawalView = (r: WithdrawalRow) => ({
  id: r.id,
  venue: r.venue,
  address: r.address,
  amount: r.amount,
  to: r.target,
  destination: r.destination,
  state: r.state,
  ...(r.venue_ref === null ? {} : { venue_ref: r.venue_ref }),
  error: r.error,
  created_at: r.created_at.toISOString(),
  updated_at: r.updated_at.toISOString(),
  ...(r.relayed_at === null ? {} : { relayed_at: r.relayed_at.toISOString() }),
  revision: r.revision,
})
