import { HttpApiBuilder, HttpApiEndpoint, HttpApiGroup, HttpServer } from "@effect/platform"
import { Effect, Layer, Schema } from "effect"
import { ChainStatusBoard } from "../../src/Chain/ChainStatusBoard.ts"
import { Relayer } from "../../src/Chain/Relayer.ts"
import { Api } from "../../src/Http/Api.ts"
import { RequestBody } from "../../src/Http/RequestBody.ts"
import { routesOf } from "../../src/Http/RouteTable.ts"
import { HandlersLive, httpLayer } from "../../src/Http/Server.ts"

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
  .add(HttpApiEndpoint.get("defect", "/v1/probe/defect").addSuccess(Schema.String)) {}

export const TestApi = Api.add(ProbeApi)

const ProbeHandlers = HttpApiBuilder.group(TestApi, "probe", (h) =>
  h
    .handle("echo", ({ payload }) => Effect.succeed({ name: payload.name }))
    .handle("defect", () => Effect.die(new Error("secret internal detail at /srv/app.ts:42"))),
)

const TestApiLive = HttpApiBuilder.api(TestApi).pipe(Layer.provide(Layer.mergeAll(HandlersLive, ProbeHandlers)))

/** The real HTTP stack on a free loopback port, plus the probe routes. Needs AppConfig and SqlClient. */
export const TestHttpLive = httpLayer({
  port: 0,
  host: "127.0.0.1",
  api: { layer: TestApiLive, routes: routesOf(TestApi) },
}).pipe(Layer.provideMerge(Layer.mergeAll(ChainStatusBoard.Live, Relayer.Live)))

export const baseUrl = Effect.map(HttpServer.HttpServer, (server) =>
  server.address._tag === "TcpAddress" ? `http://127.0.0.1:${server.address.port}` : "",
)
