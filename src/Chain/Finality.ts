/**
 * The finalized head of a chain read without the `finalized` block tag (`watcher.confirmations` set, as on
 * devnets): `confirmations` blocks below the latest, and never below genesis. A chain younger than that has no
 * block so deep: 0 (a negative number would fail every read at it).
 */
export const finalizedByConfirmations = (latest: bigint, confirmations: number): bigint =>
  latest > BigInt(confirmations) ? latest - BigInt(confirmations) : 0n
