import { IncomingMessage } from "node:http"
import type { HttpServerRequest } from "@effect/platform"
import { NodeHttpServerRequest } from "@effect/platform-node"
import { Context, Effect, Layer, Option } from "effect"
import { AppConfig } from "../Config.ts"
import { type Client, resolveClient, trustedProxies } from "../Domain/ClientAddress.ts"

/**
 * The client of the current request, for per-client budgets: the one place HTTP handlers and the
 * stream's upgrade ask (src/Domain/ClientAddress.ts says how it is decided). The peer address is
 * the raw socket's, so no framework middleware that rewrites `remoteAddress` from a header can
 * change it; `X-Forwarded-For` counts only from the deployment's `trusted_proxies`.
 */
/**
 * The raw socket's peer address. A request the body limit rebuilt after buffering a chunked body
 * (src/Http/BodyLimit.ts) has no Node message behind it; it carries the original socket's address as its
 * `remoteAddress`, set there and nowhere else.
 */
const peerAddress = (request: HttpServerRequest.HttpServerRequest): string | undefined => {
  const source = NodeHttpServerRequest.toIncomingMessage(request)
  return source instanceof IncomingMessage ? source.socket.remoteAddress : Option.getOrUndefined(request.remoteAddress)
}

export class ClientIdentity extends Context.Tag("ClientIdentity")<
  ClientIdentity,
  { readonly of: (request: HttpServerRequest.HttpServerRequest) => Client }
>() {
  static readonly make = (proxies: ReadonlyArray<string>) => {
    const trusted = trustedProxies(proxies)
    return ClientIdentity.of({
      of: (request) => {
        const forwarded = request.headers["x-forwarded-for"]
        return resolveClient(peerAddress(request), trusted.configured ? forwarded : undefined, trusted)
      },
    })
  }

  static readonly Live = Layer.effect(
    ClientIdentity,
    Effect.map(AppConfig, ({ deployment }) => ClientIdentity.make(deployment.trusted_proxies)),
  )
}
