import { Layer } from "effect"
import { JournalPublisherLive } from "./JournalPublisher.ts"
import { LeaseKeeperLive } from "./LeaseKeeper.ts"

/** Every actor this runner hosts. Each runner registers all of them; the cluster places them. */
export const ActorsLive = Layer.mergeAll(JournalPublisherLive, LeaseKeeperLive)
