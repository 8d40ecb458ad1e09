import { TestRunner } from "@effect/cluster"
import { HttpApiBuilder, HttpApiEndpoint, HttpApiGroup, HttpServer } from "@effect/platform"
import { Effect, Layer, Schema } from "effect"
import { CloseQueueLive } from "../../actors/CloseQueue.ts"
import { QuoteIdentityLeaseLive } from "../../actors/QuoteIdentityLease.ts"
import { WithdrawalDeskLive } from "../../actors/WithdrawalDesk.ts"
import { Supervision } from "../../src/Cluster/Supervision.ts"
import { CATALOGUE } from "../../src/Domain/Errors.ts"
import { ChainStatusBoard } from "../../src/Health/ChainStatusBoard.ts"
import { Api } from "../../src/Http/Api.ts"
import { ALL_ERRORS } from "../../src/Http/Errors.ts"
import { RequestBody } from "../../src/Http/RequestBody.ts"
import { routesOf } from "../../src/Http/RouteTable.ts"
import { HandlersLive, httpLayer } from "../../src/Http/Server.ts"
import { Relayer } from "../../src/Relayer.ts"
import { JournalFeed } from "../../src/Sql/Journal.ts"

/**
 * A probe group added to the real API (same id, same middleware, same handlers): a strict body
 * with nested objects and arrays, and a route that dies, so the envelope rules can be proven on
 * routes that production does not have yet.
 */
export class ProbeApi extends HttpApiGroup.make("probe")
  .add(
    HttpApiEndpoint.post("echo", "/v1/probe/echo")
      .setPayload(
        RequestBody("Echo", {
          name: Schema.String,
          nested: Schema.Struct({ n: Schema.Int }),
          items: Schema.optional(Schema.Array(Schema.Struct({ v: Schema.String }))),
        }),
      )
      .addSuccess(Schema.Struct({ name: Schema.String })),
  )
  .add(HttpApiEndpoint.get("defect", "/v1/probe/defect").addSuccess(Schema.String))
  .add(
    HttpApiEndpoint.get("error", "/v1/probe/error/:tag")
      .setPath(Schema.Struct({ tag: Schema.String }))
      .addSuccess(Schema.String)
      .addError(Schema.Union(...ALL_ERRORS)),
  ) {}

export const TestApi = Api.add(ProbeApi)

const ProbeHandlers = HttpApiBuilder.group(TestApi, "probe", (h) =>
  h
    .handle("echo", ({ payload }) => Effect.succeed({ name: payload.name }))
    .handle("defect", () => Effect.die(new Error("secret internal detail at /srv/app.ts:42")))
    // Fails with the catalogue error whose tag the path names (every code through the one encoder).
    .handle("error", ({ path }) => {
      const Class = CATALOGUE.find((C) => C._tag === path.tag)
      return Class === undefined ? Effect.succeed("no such error") : Effect.fail(new Class({ message: "probe" }))
    }),
)

const TestApiLive = HttpApiBuilder.api(TestApi).pipe(Layer.provide(Layer.mergeAll(HandlersLive, ProbeHandlers)))

/**
 * The real HTTP stack on a free loopback port, plus the probe routes, on the cluster runner the test provides
 * (Sharding): the entities the handlers call (the quote identity lease, the close queues, the withdrawal desks)
 * are registered on it. Needs AppConfig, SqlClient and Sharding.
 */
export const TestHttpOnClusterLive = httpLayer({
  port: 0,
  host: "127.0.0.1",
  api: { layer: TestApiLive, routes: routesOf(TestApi) },
}).pipe(
  Layer.provideMerge(Layer.merge(CloseQueueLive, WithdrawalDeskLive)),
  Layer.provideMerge(Layer.mergeAll(ChainStatusBoard.Live, Relayer.Live)),
  Layer.provideMerge(QuoteIdentityLeaseLive),
  // As main.ts: the stream's tail takes what a journal publisher run with this layer's output publishes.
  Layer.provideMerge(JournalFeed.Live),
)

/**
 * TestHttpOnClusterLive on its own in-memory cluster runner (`TestRunner.layer`: one runner, every shard, messages
 * in memory; with the Supervision board keyed actors record into), which it also provides to the test: register
 * more entities on it by providing their layers with this one's output, not with a second runner. Needs AppConfig
 * and SqlClient.
 */
export const TestHttpLive = TestHttpOnClusterLive.pipe(
  Layer.provideMerge(Layer.merge(TestRunner.layer, Supervision.Live)),
)

export const baseUrl = Effect.map(HttpServer.HttpServer, (server) =>
  server.address._tag === "TcpAddress" ? `http://127.0.0.1:${server.address.port}` : "",
)
