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
 * Every actor this runner hosts. Each runner registers all of them; the cluster places each singleton
 * on one runner, and its supervisor (src/Supervision.ts, records from src/Cluster.ts) restarts it
 * there when it fails. The singletons (9 with one venue): a watcher and a relayer per venue chain, the
 * journal publisher, and six shared sweeps (lease-keeper, close-queue, settlement, withdrawal-desk,
 * order-funding, transfer-desk) that issue 22 turns into keyed entities.
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
