import { Layer } from "effect"
import { CloseQueueLive } from "./CloseQueue.ts"
import { JournalPublisherLive } from "./JournalPublisher.ts"
import { OrderFundingLive } from "./OrderFunding.ts"
import { QuoteIdentityLeaseLive } from "./QuoteIdentityLease.ts"
import { SettlementLive } from "./Settlement.ts"
import { TransferDeskLive } from "./TransferDesk.ts"
import { TxRelayersLive } from "./TxRelayer.ts"
import { VenueWatchersLive } from "./VenueWatcher.ts"
import { WithdrawalDeskLive } from "./WithdrawalDesk.ts"

/**
 * Every actor this runner hosts; each runner registers all of them (DESIGN §4).
 * - Singletons (src/Cluster/Supervision.ts `supervisedSingleton`: placed on one runner, restarted there with backoff
 *   when they fail): a watcher and a relayer per venue chain, and the journal publisher.
 * - Keyed entities (an instance per key on the runner owning its shard): the lease per quote identity
 *   (QuoteIdentityLease), and on the shared loop of actors/Keyed.ts the close queue per (owner, chain), the
 *   withdrawal desk per venue account, order funding per order, settlement per take and the transfer desk
 *   per transfer. HTTP handlers message them; the database stays the truth.
 */
export const ActorsLive = Layer.mergeAll(
  JournalPublisherLive,
  QuoteIdentityLeaseLive,
  OrderFundingLive,
  VenueWatchersLive,
  TxRelayersLive,
  WithdrawalDeskLive,
  CloseQueueLive,
  SettlementLive,
  TransferDeskLive,
)
