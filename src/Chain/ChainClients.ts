import { Context, Effect, Layer } from "effect"
import { createPublicClient, fallback, http, type PublicClient } from "viem"
import { AppConfig, siweSettings } from "../Config.ts"

const transportFor = (urls: ReadonlyArray<string>) =>
  fallback(urls.map((url) => http(url, { timeout: 10_000, retryCount: 1 })))

/**
 * Read-only viem clients: one per venue chain, and one for the sign-in chain (smart-wallet
 * signature checks). Clients are cheap and hold no connection until used.
 */
export class ChainClients extends Context.Tag("ChainClients")<
  ChainClients,
  {
    readonly venue: (venueId: string) => PublicClient | undefined
    readonly auth: PublicClient | undefined
  }
>() {
  static readonly Live = Layer.effect(
    ChainClients,
    Effect.map(AppConfig, ({ deployment }) => {
      const byVenue = new Map<string, PublicClient>(
        deployment.venues.map((v) => [v.id, createPublicClient({ transport: transportFor(v.rpc_urls) })]),
      )
      const { rpcUrls } = siweSettings(deployment)
      return ChainClients.of({
        venue: (id) => byVenue.get(id),
        auth: rpcUrls ? createPublicClient({ transport: transportFor(rpcUrls) }) : undefined,
      })
    }),
  )
}
