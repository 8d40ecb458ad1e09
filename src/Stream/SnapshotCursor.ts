import { HttpApp, HttpServerResponse } from "@effect/platform"
import { Effect } from "effect"
import { journalHead } from "./JournalReader.ts"

/** The response header carrying the journal cursor a private snapshot was taken at. */
export const EVENT_CURSOR_HEADER = "x-event-cursor"

/**
 * Snapshot + replay (spec Events 4, DESIGN §9): call this in a private GET handler BEFORE it reads
 * its snapshot. It reads the journal head (`select coalesce(max(cursor), 0)`) and answers it as
 * `x-event-cursor`. Every change with a cursor at or below it committed before the snapshot was read,
 * so it is in the snapshot; the client then subscribes to `/v1/stream` with `cursor` set to this value
 * and replays every later event. Events just after the cursor may already be reflected in the
 * snapshot (they committed between the two reads): apply events idempotently.
 *
 *   .handle("me", () => Effect.gen(function* () {
 *     const session = yield* requireSession
 *     yield* snapshotCursor          // first, then read the snapshot
 *     ...
 *   }))
 *
 * Returns the cursor (decimal string) for handlers that also want it in the body.
 */
export const snapshotCursor = Effect.gen(function* () {
  const cursor = (yield* journalHead.pipe(Effect.orDie)).toString()
  yield* HttpApp.appendPreResponseHandler((_request, response) =>
    Effect.succeed(HttpServerResponse.setHeader(response, EVENT_CURSOR_HEADER, cursor)),
  )
  return cursor
})
