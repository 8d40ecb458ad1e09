/**
 * src/Http/StartingServer.ts: the API's node server answers a request that arrives before the app is attached with
 * the catalogue's retryable 503 (the one envelope, Retry-After, the request id) instead of leaving it unanswered, and
 * stops answering the moment the app's listener is attached, on a bare node server and under the platform's own
 * layers (which listen first and attach the app once the layers above are built).
 */
import type { Server } from "node:http"
import type { AddressInfo } from "node:net"
import { HttpServer, HttpServerResponse } from "@effect/platform"
import { NodeHttpServer } from "@effect/platform-node"
import { Deferred, Effect, Exit, Layer, Scope } from "effect"
import { afterEach, describe, expect, it } from "vitest"
import { startingServer } from "../../src/Http/StartingServer.ts"
import { pollUntil } from "../support/Poll.ts"

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/

const urlOf = (server: Server) => `http://127.0.0.1:${(server.address() as AddressInfo).port}`

const open: Array<Server> = []
afterEach(async () => {
  await Promise.all(open.splice(0).map((s) => new Promise((r) => s.close(r))))
})

describe("the API's server before the app is attached", () => {
  it("answers 503 SERVICE_UNAVAILABLE (retryable) with the envelope, then leaves every request to the app", async () => {
    const early: Array<[string, number, string]> = []
    const server = startingServer((method, status, id) => early.push([method, status, id]))()
    open.push(server)
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r))

    const before = await fetch(`${urlOf(server)}/v1/info`)
    expect(before.status).toBe(503)
    expect(before.headers.get("retry-after")).toBe("1")
    expect(before.headers.get("content-type")).toBe("application/json")
    expect(Number(before.headers.get("x-server-time"))).toBeGreaterThan(0)
    const body = (await before.json()) as { error: Record<string, unknown> }
    expect(body.error).toEqual({
      code: "SERVICE_UNAVAILABLE",
      message: "the service is starting; retry in a moment",
      request_id: before.headers.get("x-request-id"),
      retryable: true,
    })
    expect(body.error.request_id).toMatch(UUID)
    expect(early).toEqual([["GET", 503, body.error.request_id]])

    // A client's own well-formed request id is echoed; a POST's body is not waited for.
    const mine = "0b7c2f0e-6a4b-4c1d-9e2f-3a4b5c6d7e8f"
    const posted = await fetch(`${urlOf(server)}/v1/takes`, {
      method: "POST",
      headers: { "x-request-id": mine, "content-type": "application/json" },
      body: JSON.stringify({ amount: "1" }),
    })
    expect(posted.status).toBe(503)
    expect(((await posted.json()) as { error: { request_id: string } }).error.request_id).toBe(mine)
    expect(early.at(-1)).toEqual(["POST", 503, mine])

    // The spec's unversioned routes keep their shapes: /health's 503 is the health body, not the envelope.
    const health = await fetch(`${urlOf(server)}/health?verbose=1`)
    expect(health.status).toBe(503)
    expect(health.headers.get("retry-after")).toBe("1")
    const degraded = (await health.json()) as Record<string, unknown>
    expect(degraded).toMatchObject({
      status: "degraded",
      ready: false,
      chains: [],
      pending_transactions: 0,
      journal_unpublished: 0,
      journal_oldest_unpublished_seconds: 0,
    })
    expect(Date.parse(degraded.server_time as string)).toBeGreaterThan(0)
    expect(degraded).not.toHaveProperty("error")
    const live = await fetch(`${urlOf(server)}/health/live`)
    expect(live.status).toBe(200)
    expect(live.headers.get("retry-after")).toBeNull()
    expect(await live.json()).toEqual({ status: "live" })
    expect(early.slice(-2).map(([m, s]) => [m, s])).toEqual([
      ["GET", 503],
      ["GET", 200],
    ])

    server.on("request", (_req, res) => res.end("app"))
    expect(server.listenerCount("request")).toBe(1)
    const after = await fetch(`${urlOf(server)}/v1/info`)
    expect(after.status).toBe(200)
    expect(await after.text()).toBe("app")
    expect(early).toHaveLength(4)
  })

  it("under the platform's layers: 503 while the layers above the server build, the app's answer once served", async () => {
    let node: Server | undefined
    const make = startingServer()
    const program = Effect.gen(function* () {
      const gate = yield* Deferred.make<void>()
      // The app is served only once `gate` opens: the platform has listened by then (its server layer is built first).
      const served = Layer.unwrapEffect(
        Deferred.await(gate).pipe(Effect.as(HttpServer.serve(HttpServerResponse.text("app")))),
      ).pipe(
        Layer.provide(
          NodeHttpServer.layer(
            () => {
              node = make()
              return node
            },
            { port: 0, host: "127.0.0.1" },
          ),
        ),
      )
      const scope = yield* Scope.make()
      const building = yield* Effect.fork(Layer.buildWithScope(served, scope))
      yield* pollUntil(
        Effect.sync(() => node?.listening === true),
        (listening) => listening,
        { every: "10 millis", within: "10 seconds" },
      )
      const url = urlOf(node!)
      const before = yield* Effect.promise(() => fetch(`${url}/v1/info`))
      expect(before.status).toBe(503)
      expect(((yield* Effect.promise(() => before.json())) as { error: { code: string } }).error.code).toBe(
        "SERVICE_UNAVAILABLE",
      )
      yield* Deferred.succeed(gate, undefined)
      yield* building.await
      const after = yield* Effect.promise(() => fetch(`${url}/v1/info`))
      expect(after.status).toBe(200)
      expect(yield* Effect.promise(() => after.text())).toBe("app")
      yield* Scope.close(scope, Exit.void)
    })
    await Effect.runPromise(program)
  })
})
