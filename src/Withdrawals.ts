/**
 * Withdrawals (spec POST /v1/withdrawals/prepare, POST /v1/withdrawals, GET /v1/withdrawals/{id}, GET
 * /v1/withdrawals/history): a transfer out of a linked venue account. Prepare builds and stores the venue's typed
 * data; submit checks the signed typed data against its preparation and hands a new intent to the account's
 * withdrawal desk (actors/WithdrawalDesk.ts), which queues it and relays it once. An identical repeat (the same
 * preparation submitted again) is answered from our tables before any message is sent, so only a new intent
 * becomes a persisted message. src/Withdrawals/Http.ts authenticates, checks access and serves these.
 */
import { SqlClient } from "@effect/sql"
import { Effect, Either, Layer, Option, Redacted } from "effect"
import type { AccessGate } from "./Access.ts"
import { VenueAdaptersLive } from "./Accounts/VenueAdaptersLive.ts"
import { callEntity } from "./Cluster/EntityCall.ts"
import { AppConfig } from "./Config.ts"
import { InvalidRequest, NotFound, SignatureInvalid } from "./Domain/Errors.ts"
import { toRfc3339 } from "./Domain/Primitives.ts"
import { eoaSignature } from "./Domain/SignatureFailure.ts"
import type { WithdrawalTarget } from "./Domain/Withdrawal.ts"
import { decodeHistoryCursor, encodeHistoryCursor, HISTORY_START, historyCursorKey } from "./Domain/WithdrawalCursor.ts"
import { digestOfUntrusted, recoverDigestSigner } from "./Domain/WithdrawalTypedData.ts"
import { randomUuid, SecureRandom } from "./SecureRandom.ts"
import { SqlTest } from "./Sql/TestDatabase.ts"
import { VenueAdapters } from "./Venues/VenueAdapters.ts"
import { WithdrawalDesk, withdrawalDeskId } from "./Withdrawals/Desk.ts"
import { linkedAccountOn, prepareWithdrawal } from "./Withdrawals/Prepare.ts"
import { findPreparationByDigest, findWithdrawal, historyPage, withdrawalOfPreparation } from "./Withdrawals/Repo.ts"
import { withdrawalView } from "./Withdrawals/View.ts"

const NOT_PREPARED =
  "typed_data is not a withdrawal prepared for this account: POST /v1/withdrawals/prepare and submit its typed_data unchanged"

export interface PrepareInput {
  readonly venue: string
  /** Base units. */
  readonly amount: bigint
  readonly to: WithdrawalTarget
}

export interface SubmitInput {
  readonly venue: string
  /** Base units. */
  readonly amount: bigint
  readonly to: WithdrawalTarget
  /** The typed data prepare returned, as the client sent it back (never trusted: only its digest is used). */
  readonly typedData: unknown
  /** 65 bytes r‖s‖v, hex. */
  readonly signature: string
}

export interface HistoryQuery {
  /** The opaque cursor of the previous page, if any. */
  readonly after: string | undefined
  readonly limit: number
}

export class Withdrawals extends Effect.Service<Withdrawals>()("Withdrawals", {
  effect: Effect.gen(function* () {
    const config = yield* AppConfig
    const sql = yield* SqlClient.SqlClient
    const adapters = yield* VenueAdapters
    const random = yield* SecureRandom
    const desks = yield* WithdrawalDesk.client
    const cursorKey = historyCursorKey(Buffer.from(Redacted.value(config.deployment.operator_key).slice(2), "hex"))

    /** A repository or preparation step on the service's database, config, venue adapters and randomness. */
    const run = <A, E>(effect: Effect.Effect<A, E, SqlClient.SqlClient | AppConfig | VenueAdapters | SecureRandom>) =>
      effect.pipe(
        Effect.provideService(SqlClient.SqlClient, sql),
        Effect.provideService(AppConfig, config),
        Effect.provideService(VenueAdapters, adapters),
        Effect.provideService(SecureRandom, random),
      )

    /**
     * The venue's typed data for a transfer of `amount` base units out of the master's linked account on `venue`
     * (spec prepare rules: the linked address signs, an open withdrawal blocks another, the amount fits the fresh
     * withdrawable balance less what the venue acknowledged since), stored as a preparation until it expires.
     */
    const prepare = Effect.fn("Withdrawals.prepare")(function* (master: string, input: PrepareInput) {
      const prepared = yield* run(prepareWithdrawal({ master, venue: input.venue, amount: input.amount, to: input.to }))
      return {
        venue: prepared.venue,
        amount: prepared.amount.toString(),
        to: prepared.to,
        destination: prepared.destination,
        typed_data: prepared.typedData,
        expires_at: toRfc3339(prepared.expiresMs),
      }
    })

    /**
     * Queues a signed preparation of the master's: the typed data must be one prepared for this account (found
     * by its digest), for these venue, amount and target, signed by the linked address with a low-s signature.
     * The same preparation again answers the withdrawal it made, whatever happened since (access too: a repeat is
     * no new commitment), without a message; otherwise `access` runs, and a
     * new one is the desk's persisted `Submit`, which queues it in one transaction and answers (or refuses:
     * expired, unlinked, another withdrawal open). A desk that does not answer in time is a retryable 503.
     */
    const submit = Effect.fn("Withdrawals.submit")(function* <R>(
      master: string,
      input: SubmitInput,
      access: AccessGate<R>,
    ) {
      yield* run(linkedAccountOn(master, input.venue))
      // Shape first (65 bytes, v, low s): nothing is looked up for a signature no venue would accept.
      const signature = yield* eoaSignature(
        input.signature,
        "the withdrawal must be the linked address's own 65-byte signature: the venue accepts no contract signature",
      )
      const digest = digestOfUntrusted(input.typedData)
      if (Either.isLeft(digest)) return yield* new InvalidRequest({ message: `${NOT_PREPARED} (${digest.left})` })
      const found = yield* run(findPreparationByDigest(digest.right)).pipe(Effect.orDie)
      if (Option.isNone(found) || found.value.master !== master) {
        return yield* new InvalidRequest({ message: NOT_PREPARED })
      }
      const prep = found.value
      if (prep.venue !== input.venue || BigInt(prep.amount) !== input.amount || prep.target !== input.to) {
        return yield* new InvalidRequest({
          message: "venue, amount and to must be those the typed data was prepared for",
        })
      }
      const signer = yield* recoverDigestSigner(digest.right, signature)
      if (signer !== prep.address) {
        return yield* new SignatureInvalid({
          message: `the typed data must be signed by the linked address ${prep.address}`,
        })
      }
      // The same preparation submitted again (a lost response): the withdrawal it made, whatever happened since.
      const made = yield* run(withdrawalOfPreparation(prep.id)).pipe(Effect.orDie)
      if (Option.isSome(made)) return withdrawalView(made.value)
      yield* access
      // A new intent: the account's desk queues it in one transaction and answers with the row it wrote.
      return yield* callEntity(
        desks(withdrawalDeskId(prep.venue, prep.address)).Submit({
          id: yield* run(randomUuid),
          digest: digest.right,
          signature,
        }),
        { what: "withdrawal" },
      )
    })

    /** One withdrawal of the master's, in its current state; NOT_FOUND for another master's. */
    const get = Effect.fn("Withdrawals.get")(function* (master: string, id: string) {
      const row = yield* run(findWithdrawal(id)).pipe(Effect.orDie)
      if (Option.isNone(row) || row.value.master !== master) {
        return yield* new NotFound({ message: "no such withdrawal" })
      }
      return withdrawalView(row.value)
    })

    /**
     * One page of the master's withdrawals, newest first by (created_at, id), after the cursor's position. The
     * cursor is checked first; `snapshot` runs after that and before the page is read (the route's x-event-cursor:
     * every change journaled at or below it is in the page).
     */
    const history = Effect.fn("Withdrawals.history")(function* <R>(
      master: string,
      query: HistoryQuery,
      snapshot: Effect.Effect<unknown, never, R>,
    ) {
      let after: Parameters<typeof historyPage>[1]
      if (query.after !== undefined) {
        const decoded = decodeHistoryCursor(cursorKey, master, query.after)
        if (Either.isLeft(decoded)) return yield* new InvalidRequest({ message: decoded.left })
        after = decoded.right
      }
      yield* snapshot
      const page = yield* run(historyPage(master, after, query.limit)).pipe(Effect.orDie)
      const last = page.rows[page.rows.length - 1]
      // Always a cursor (the spec types it a string, not nullable): after this page's last row, else where the
      // page began (`after`, or before every row). Followed once has_more is false, it answers an empty page.
      const position =
        last !== undefined ? { createdMicros: BigInt(last.created_us), id: last.id } : (after ?? HISTORY_START)
      return {
        data: page.rows.map(withdrawalView),
        next_cursor: encodeHistoryCursor(cursorKey, master, position),
        has_more: page.hasMore,
      }
    })

    return { prepare, submit, get, history } as const
  }),
  dependencies: [VenueAdaptersLive],
}) {
  /**
   * The service on a throw-away database (SqlTest). The test gives AppConfig, SecureRandom, the venue adapters
   * (VenueAdaptersLive against venue simulators) and a cluster runner with the WithdrawalDesk entity registered.
   */
  static readonly Test = Withdrawals.DefaultWithoutDependencies.pipe(Layer.provideMerge(SqlTest))
}
