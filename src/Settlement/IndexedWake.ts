import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import type { Notification } from "../Sql/Journal.ts"

/**
 * Notified when a watcher page with escrow events commits, so a step the index shows final is acted on at once
 * rather than at the entity's next pass. Payload: the venue; or `<venue>:<digest>,…` when every event of the page
 * names a v2 Fill (locks and payments), and then only those fills' takes need a pass. Each runner wakes the
 * entities it holds: settlement, the takes named (else every take with a fill open on the venue); order funding,
 * the venue's pending orders either way.
 */
export const ESCROW_INDEXED_CHANNEL = "escrow_indexed"

/** A NOTIFY payload stays under 8,000 bytes: a page naming more fills (67 bytes each) wakes the whole venue. */
const MAX_NOTIFIED_FILLS = 100

/**
 * The page's notification, to send in its transaction (NOTIFY is delivered at commit) or after it commits (a
 * listener woken earlier could read the rows before they exist). `fillDigests`: given only when every event of the
 * page names one (lowercase, no repeats).
 */
export const escrowIndexedNotification = (venue: string, fillDigests?: ReadonlyArray<string>): Notification => ({
  channel: ESCROW_INDEXED_CHANNEL,
  payload: escrowIndexedPayload(venue, fillDigests),
})

/** Sends the page's notification on its own, after the page's transaction committed. */
export const notifyEscrowIndexed = (venue: string, fillDigests?: ReadonlyArray<string>) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) => {
    const { channel, payload } = escrowIndexedNotification(venue, fillDigests)
    return sql`select pg_notify(${channel}, ${payload})`
  })

/** The notification's payload: the fills named when there are some and not too many, else the venue alone. */
export const escrowIndexedPayload = (venue: string, fillDigests?: ReadonlyArray<string>) =>
  fillDigests !== undefined && fillDigests.length > 0 && fillDigests.length <= MAX_NOTIFIED_FILLS
    ? `${venue}:${fillDigests.join(",")}`
    : venue

/** A notification's venue and, when the page named them, its fills (a VenueId is a slug without `:`). */
export const parseEscrowIndexed = (
  payload: string,
): { readonly venue: string; readonly fillDigests: ReadonlyArray<string> | undefined } => {
  const colon = payload.indexOf(":")
  return colon < 0
    ? { venue: payload, fillDigests: undefined }
    : {
        venue: payload.slice(0, colon),
        fillDigests: payload
          .slice(colon + 1)
          .split(",")
          .filter((d) => d !== ""),
      }
}

/** The takes with a nonfinal fill among these digests on this venue (its maker or taker side). */
export const takesOfOpenFills = (venue: string, fillDigests: ReadonlyArray<string>) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    fillDigests.length === 0
      ? Effect.succeed<ReadonlyArray<string>>([])
      : sql<{ id: string }>`
          select distinct take_id::text as id from fills
          where fill_digest in ${sql.in(fillDigests.map((d) => d.toLowerCase()))} and not final
            and (maker_venue = ${venue} or taker_venue = ${venue})`.pipe(Effect.map((rows) => rows.map((r) => r.id))),
  )
