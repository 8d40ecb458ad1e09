import { PgClient } from "@effect/sql-pg"
import { Effect, Ref, Stream } from "effect"
import { pollUntil } from "./Poll.ts"

/**
 * LISTENs on `channel` in a forked fiber (returned; a child of the caller) and returns once the LISTEN is live: a
 * probe notification of its own came back, instead of a fixed sleep that a loaded machine can outlast. Probes never
 * reach `onPayload`.
 */
export const listenLive = <R>(channel: string, onPayload: (payload: string) => Effect.Effect<void, never, R>) =>
  Effect.gen(function* () {
    const pg = yield* PgClient.PgClient
    const probe = `probe:${crypto.randomUUID()}`
    const live = yield* Ref.make(false)
    const fiber = yield* pg.listen(channel).pipe(
      Stream.runForEach((payload) => (payload === probe ? Ref.set(live, true) : onPayload(payload))),
      Effect.fork,
    )
    yield* pollUntil(Effect.zipRight(pg`select pg_notify(${channel}, ${probe})`, Ref.get(live)), (l) => l, {
      every: "50 millis",
      within: "10 seconds",
    })
    return fiber
  })
