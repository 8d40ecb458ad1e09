import { type HttpApi, HttpApiBuilder, HttpApiSwagger, HttpMiddleware, HttpServer } from "@effect/platform"
import { NodeHttpServer } from "@effect/platform-node"
import { Config, Console, Effect, Layer, Option, Runtime } from "effect"
import { AccessHandlers } from "../Access/Http.ts"
import { Access } from "../Access.ts"
import { AccountHandlers } from "../Accounts/Http.ts"
import { VenueAdaptersLive } from "../Accounts/VenueAdaptersLive.ts"
import { AuthHandlers } from "../Auth/Http.ts"
import { ChainClients } from "../Chain/ChainClients.ts"
import { AppConfig, ConfigInvalid } from "../Config.ts"
import { CredentialsHandlers } from "../Credentials/Http.ts"
import { CredentialResolverLive } from "../Credentials/Resolver.ts"
import { EscrowHandlers } from "../Escrow/Http.ts"
import { HealthHandlers } from "../Health/Http.ts"
import { InfoHandlers } from "../Info/Http.ts"
import { makeRequestObserver, routeTemplates } from "../Observability/HttpObserver.ts"
import { LogOutput } from "../Observability/Log.ts"
import { Tracing } from "../Observability/Tracing.ts"
import { OrdersHandlers } from "../Orders/Http.ts"
import { QuoteIdentitiesHandlers } from "../QuoteIdentities/Http.ts"
import { SecureRandom } from "../SecureRandom.ts"
import { describeListenFailure } from "../StartupChecks.ts"
import { TakesHandlers } from "../Takes/Http.ts"
import { TradesHandlers } from "../Trades/Http.ts"
import { TransfersHandlers } from "../Transfers/Http.ts"
import { WithdrawalsHandlers } from "../Withdrawals/Http.ts"
import { Api } from "./Api.ts"
import { apiMiddleware } from "./ApiMiddleware.ts"
import { AsyncApiLive } from "./AsyncApiRoute.ts"
import { ClientIdentity } from "./ClientIdentity.ts"
import { globalMiddleware } from "./GlobalMiddleware.ts"
import { RAW_ROUTES, type Route, routesOf } from "./RouteTable.ts"
import { AuthenticationLive, DeferredAuthenticationLive } from "./Security.ts"
import { startingServer } from "./StartingServer.ts"
import { StreamLive } from "./StreamRoute.ts"

/**
 * Every group's handlers; tests add a probe group to the same API id on top of these. Each group provides its
 * concept's service; Access is provided here for every group, since every commitment route asks its gate
 * (src/Http/Guards.ts requireAccess).
 */
export const HandlersLive = Layer.mergeAll(
  HealthHandlers,
  InfoHandlers,
  AuthHandlers,
  AccountHandlers,
  AccessHandlers,
  QuoteIdentitiesHandlers,
  CredentialsHandlers,
  OrdersHandlers,
  WithdrawalsHandlers,
  EscrowHandlers,
  TakesHandlers,
  TransfersHandlers,
  TradesHandlers,
).pipe(
  Layer.provide(Access.Default),
  Layer.provide(AuthenticationLive),
  Layer.provide(DeferredAuthenticationLive),
  Layer.provide(ClientIdentity.Live),
  Layer.provide(VenueAdaptersLive),
  Layer.provide(CredentialResolverLive),
  Layer.provide(ChainClients.Live),
  Layer.provide(SecureRandom.Live),
)
export const ApiLive = HttpApiBuilder.api(Api).pipe(Layer.provide(HandlersLive))

export interface HttpOptions<R = never> {
  /** Listen port; 0 picks a free one (tests). */
  readonly port: number
  readonly host: string
  /** The API to serve and its routes; tests pass Api plus a probe group. */
  readonly api: { readonly layer: Layer.Layer<HttpApi.Api, never, R>; readonly routes: ReadonlyArray<Route> }
  /** false: no request metrics and no access line (test/bench/info.ts measures what they cost). Default true. */
  readonly observe?: boolean
}

/** The one start-up line saying where the service listens. */
const announce = Layer.effectDiscard(
  HttpServer.addressFormattedWith((address) => Console.log(`settlement service listening on ${address}`)),
)

/** The exposed headers of every response (CORS). */
const EXPOSED_HEADERS = ["x-request-id", "x-server-time", "retry-after", "x-event-cursor"]

export const httpLayer = <R = never>(options: HttpOptions<R>) =>
  Layer.unwrapEffect(
    Effect.gen(function* () {
      const config = yield* AppConfig
      // Request metrics always; the access line where the service's log is installed (src/Observability/Log.ts).
      const observe =
        options.observe === false
          ? undefined
          : makeRequestObserver(
              [...options.api.routes, ...RAW_ROUTES],
              Option.getOrUndefined(yield* Effect.serviceOption(LogOutput)),
            )
      // A server span per request only when traces are exported (src/Observability/Tracing.ts).
      const tracing = (yield* Effect.serviceOption(Tracing)).pipe(Option.exists((t) => t.enabled))
      const traceRoute = tracing ? routeTemplates([...options.api.routes, ...RAW_ROUTES]) : undefined
      // A request before the app is attached is answered 503 (src/Http/StartingServer.ts), with a log line of its own.
      const runFork = Runtime.runFork(yield* Effect.runtime<never>())
      const early = (method: string, status: number, requestId: string) =>
        void runFork(
          Effect.logInfo("request before the API was ready").pipe(
            Effect.annotateLogs({ method, status, request_id: requestId }),
          ),
        )
      const refused = (requestId: string, reason: string) =>
        void runFork(
          Effect.logWarning("request refused by the HTTP parser").pipe(
            Effect.annotateLogs({ status: 400, reason, request_id: requestId }),
          ),
        )
      const serving = HttpApiBuilder.serve(
        globalMiddleware({
          origins: config.deployment.app_origins,
          exposedHeaders: EXPOSED_HEADERS,
          ...(observe === undefined ? {} : { observe }),
          ...(traceRoute === undefined ? {} : { traceRoute }),
        }),
      ).pipe(
        Layer.provide(HttpApiSwagger.layer({ path: "/v1/docs" })),
        Layer.provide(HttpApiBuilder.middlewareOpenApi({ path: "/v1/openapi.json" })),
        Layer.provide(StreamLive),
        Layer.provide(AsyncApiLive),
        // Its error path authenticates a deferred mk_ bearer (DeferredAuthentication) as the middleware would.
        Layer.provide(
          apiMiddleware([...options.api.routes, ...RAW_ROUTES]).pipe(Layer.provide(CredentialResolverLive)),
        ),
        Layer.provide(options.api.layer),
        // The platform's span per request costs a stack capture (with source maps under tsx, most of the
        // request's CPU time) and records the full URL: the global middleware makes its own when tracing.
        HttpMiddleware.withTracerDisabledWhen(() => true),
        Layer.provideMerge(
          NodeHttpServer.layer(startingServer(early, refused), { port: options.port, host: options.host }),
        ),
      )
      // Announced only once the app is attached: the socket listens as soon as the server is built, and a
      // request that arrives before the app is served is only answered 503 (StartingServer.ts).
      return announce.pipe(Layer.provideMerge(serving))
    }),
  )

/** PORT (default 8080) from the config; HTTP_HOST defaults to loopback. */
export const HttpLive = Layer.unwrapEffect(
  Effect.gen(function* () {
    const config = yield* AppConfig
    const host = yield* Config.string("HTTP_HOST").pipe(Config.withDefault("127.0.0.1"))
    // The API's socket not opening (PORT taken, HTTP_HOST not local) stops the start with one line (main.ts).
    return httpLayer({ port: config.port, host, api: { layer: ApiLive, routes: routesOf(Api) } }).pipe(
      Layer.catchAll((e) =>
        Layer.fail(
          e._tag === "ServeError"
            ? new ConfigInvalid({
                message: describeListenFailure(
                  { port: "PORT", host: "HTTP_HOST" },
                  { host, port: config.port },
                  e.cause,
                ),
              })
            : e,
        ),
      ),
    )
  }),
)
