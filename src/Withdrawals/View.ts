import type { WithdrawalRow } from "./Repo.ts"

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
