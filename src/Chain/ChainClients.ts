import { Context, Effect, Layer } from "effect"
import { createPublicClient, fallback, http, type PublicClient, type Transport } from "viem"
import { AppConfig, siweSettings, type VenueConfig } from "../Config.ts"
import { rpcFetch } from "./RpcFetch.ts"

/** Every service transport calls the node through rpcFetch (its body cap replaces viem's, which is off). */
const rpcHttp = { fetchFn: rpcFetch, maxResponseBodySize: false } as const

const transportFor = (urls: ReadonlyArray<string>) =>
  fallback(urls.map((url) => http(url, { timeout: 10_000, retryCount: 1, ...rpcHttp })))

/**
 * The transport of the watcher's and relayer's clients. No viem retries: those loops classify
 * failures and retry with their own backoff. Requests issued in the same tick share one HTTP
 * JSON-RPC batch. Tests replace the factory to inject faults (a viem `custom` transport).
 */
export type ChainTransportFactory = (venue: VenueConfig) => Transport

export const defaultChainTransport: ChainTransportFactory = (venue) =>
  fallback(
    venue.rpc_urls.map((url) =>
      http(url, { timeout: 8_000, retryCount: 0, batch: { batchSize: 200, wait: 0 }, ...rpcHttp }),
    ),
    { retryCount: 0 },
  )

/**
 * Read-only viem clients: one per venue chain, and one for the sign-in chain (smart-wallet
 * signature checks). Clients are cheap and hold no connection until used. `chain` clients are
 * uncached (cacheTime 0) so that a head read is never a stale copy.
 */
export class ChainClients extends Context.Tag("ChainClients")<
  ChainClients,
  {
    readonly venue: (venueId: string) => PublicClient | undefined
    readonly auth: PublicClient | undefined
    /** The watcher's and relayer's client of a venue chain. */
    readonly chain: (venueId: string) => PublicClient | undefined
  }
>() {
  static readonly layerWith = (chainTransport: ChainTransportFactory = defaultChainTransport) =>
    Layer.effect(
      ChainClients,
      Effect.map(AppConfig, ({ deployment }) => {
        const byVenue = new Map<string, PublicClient>(
          deployment.venues.map((v) => [v.id, createPublicClient({ transport: transportFor(v.rpc_urls) })]),
        )
        const chains = new Map<string, PublicClient>(
          deployment.venues.map((v) => [
            v.id,
            createPublicClient({ transport: chainTransport(v), cacheTime: 0, pollingInterval: 250 }),
          ]),
        )
        const { rpcUrls } = siweSettings(deployment)
        return ChainClients.of({
          venue: (id) => byVenue.get(id),
          auth: rpcUrls ? createPublicClient({ transport: transportFor(rpcUrls) }) : undefined,
          chain: (id) => chains.get(id),
        })
      }),
    )

  static readonly Live = ChainClients.layerWith()
}
