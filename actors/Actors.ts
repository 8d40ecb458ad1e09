import { Layer } from "effect"
import { CloseQueueLive } from "./CloseQueue.ts"
import { JournalPublisherLive } from "./JournalPublisher.ts"
import { LeaseKeeperLive } from "./LeaseKeeper.ts"
import { OrderFundingLive } from "./OrderFunding.ts"
import { SettlementLive } from "./Settlement.ts"
import { TransferDeskLive } from "./TransferDesk.ts"
import { TxRelayersLive } from "./TxRelayer.ts"
import { VenueWatchersLive } from "./VenueWatcher.ts"
import { WithdrawalDeskLive } from "./WithdrawalDesk.ts"

/** Every actor this runner hosts. Each runner registers all of them; the cluster places them. */
export const ActorsLive = Layer.mergeAll(
  JournalPublisherLive,
  LeaseKeeperLive,
  OrderFundingLive,
  VenueWatchersLive,
  TxRelayersLive,
  WithdrawalDeskLive,
  CloseQueueLive,
  SettlementLive,
  TransferDeskLive,
)
