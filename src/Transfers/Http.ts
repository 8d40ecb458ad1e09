import { HttpApiBuilder, HttpApp, HttpServerResponse } from "@effect/platform"
import { SqlClient } from "@effect/sql"
import { Effect, Option } from "effect"
import { findLinkedAccount } from "../Accounts/LinkedAccounts.ts"
import { wakeIfClustered } from "../Cluster/KeyedWakes.ts"
import { AppConfig } from "../Config.ts"
import {
  ChainUnavailable,
  InvalidRequest,
  NotFound,
  PayerNotLinked,
  StateConflict,
  WithdrawalPending,
} from "../Domain/Errors.ts"
import { Api } from "../Http/Api.ts"
import { requireAccess, requireSession } from "../Http/Guards.ts"
import { randomUuid } from "../SecureRandom.ts"
import { Settlement } from "../Settlement/Entity.ts"
import { snapshotCursor } from "../Stream/SnapshotCursor.ts"
import { takeEscrowVersion } from "../Takes/Create.ts"
import { takeFailure } from "../Takes/Errors.ts"
import { prepareWithdrawal } from "../Withdrawals/Prepare.ts"
import { openWithdrawalOf } from "../Withdrawals/Repo.ts"
import { TRANSFERS_PAGE } from "./Api.ts"
import { TransferDesk } from "./Desk.ts"
import {
  cancelTransfer,
  findTransfer,
  findTransferByClientId,
  givePayKey,
  insertTransfer,
  type NewTransfer,
  type TransferRow,
  transfersPage,
} from "./Repo.ts"
import { payerBalance, takeForTransfer } from "./TransferTake.ts"
import { transferViews } from "./View.ts"

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i
const DEFAULT_PARTS = 8

/** The request's parameters as stored; an identical repeat must match every one. */
interface Parameters {
  readonly from: string
  readonly to: string
  readonly amountIn: bigint
  readonly minOut: bigint
  readonly maxParts: number
  readonly payer: string
  readonly recipient: string
}

const sameParameters = (row: TransferRow, p: Parameters) =>
  row.from_venue === p.from &&
  row.to_venue === p.to &&
  BigInt(row.amount_in) === p.amountIn &&
  BigInt(row.min_out) === p.minOut &&
  row.max_parts === p.maxParts &&
  row.payer === p.payer &&
  row.recipient === p.recipient

/** Answers 200 instead of the route's 201: an identical repeat created nothing. */
const answerRepeat = HttpApp.appendPreResponseHandler((_request, response) =>
  Effect.succeed(HttpServerResponse.setStatus(response, 200)),
)

/** After a commit: the transfer's desk entity (a take to create) or its take's Settlement entity (one created). */
const wakeTransfer = (row: TransferRow) =>
  row.take_id === null ? wakeIfClustered(TransferDesk, row.id) : wakeIfClustered(Settlement, row.take_id)

export const TransfersHandlers = HttpApiBuilder.group(Api, "transfers", (handlers) =>
  Effect.gen(function* () {
    const { deployment } = yield* AppConfig
    const venueOf = (id: string) => deployment.venues.find((v) => v.id === id)

    /** The existing intent of a client id: the same one (200) for the same parameters, else STATE_CONFLICT. */
    const repeat = (row: TransferRow, p: Parameters) =>
      Effect.gen(function* () {
        if (!sameParameters(row, p)) {
          return yield* new StateConflict({ message: "client_transfer_id was used with other parameters" })
        }
        yield* answerRepeat
        return (yield* transferViews([row]))[0]!
      })

    return handlers
      .handle("create", ({ payload }) =>
        Effect.gen(function* () {
          const session = yield* requireSession
          const params: Parameters = {
            from: payload.from,
            to: payload.to,
            amountIn: BigInt(payload.amount_in),
            minOut: BigInt(payload.min_out),
            maxParts: payload.max_parts ?? Math.min(DEFAULT_PARTS, deployment.limits.take_parts_max),
            payer: payload.payer.toLowerCase(),
            recipient: payload.recipient.toLowerCase(),
          }
          if (payload.client_transfer_id !== undefined) {
            const existing = yield* findTransferByClientId(session.master, payload.client_transfer_id).pipe(
              Effect.orDie,
            )
            if (Option.isSome(existing)) return yield* repeat(existing.value, params)
          }
          yield* requireAccess(session.master)
          const from = venueOf(params.from)
          const to = venueOf(params.to)
          if (!from) return yield* new NotFound({ message: `unknown venue ${params.from}; see GET /v1/venues` })
          if (!to) return yield* new NotFound({ message: `unknown venue ${params.to}; see GET /v1/venues` })
          if (from.id === to.id) return yield* new InvalidRequest({ message: "from and to must be different venues" })
          if (params.amountIn === 0n) return yield* new InvalidRequest({ message: "amount_in must be positive" })
          if (params.maxParts > deployment.limits.take_parts_max) {
            return yield* new InvalidRequest({ message: `max_parts is at most ${deployment.limits.take_parts_max}` })
          }
          if (BigInt(params.recipient) === 0n)
            return yield* new InvalidRequest({ message: "recipient must not be zero" })
          const link = yield* findLinkedAccount(session.master, from.id).pipe(Effect.orDie)
          if (Option.isNone(link) || link.value.address !== params.payer) {
            return yield* new PayerNotLinked({ message: `payer is not your linked account on ${from.id}` })
          }
          // Spec Recovery: nothing is created around an unknown withdrawal of the payer's account.
          const open = yield* openWithdrawalOf(from.id, params.payer).pipe(Effect.orDie)
          if (Option.isSome(open) && open.value.state === "unknown") {
            return yield* new WithdrawalPending({
              message: `withdrawal ${open.value.id} on ${from.id} is unknown; it must resolve before a new transfer`,
            })
          }
          const balance = yield* payerBalance(from.id, params.payer)
          if (Option.isNone(balance)) {
            return yield* new ChainUnavailable({
              message: `could not read the payer's balance on ${from.id}`,
              retryable: true,
            })
          }
          const shortfall = params.amountIn > balance.value ? params.amountIn - balance.value : 0n
          // A preparation is only typed data until the client signs it: one made by a create that then loses the
          // race for its client id is never answered, so it is never signed.
          const preparation =
            shortfall === 0n
              ? undefined
              : yield* prepareWithdrawal({ master: session.master, venue: from.id, amount: shortfall, to: "signer" })
          const transfer: NewTransfer = {
            id: yield* randomUuid,
            master: session.master,
            clientTransferId: payload.client_transfer_id ?? (yield* randomUuid),
            from: from.id,
            to: to.id,
            amountIn: params.amountIn,
            minOut: params.minOut,
            maxParts: params.maxParts,
            payer: params.payer,
            recipient: params.recipient,
            fromChainId: from.chain_id,
            toChainId: to.chain_id,
            shortfall: preparation === undefined ? null : shortfall,
            preparationId: preparation?.id ?? null,
            takeVersion: takeEscrowVersion(deployment, from, to),
          }
          const sql = yield* SqlClient.SqlClient
          // The insert and, when the wallet covers amount_in, the take commit together: a NO_LIQUIDITY (or any
          // refusal) leaves no intent behind, and a concurrent identical create waits on the client id, then
          // finds this one. A v2 take waits for the client's pay key (route payKey).
          const inserted = yield* sql
            .withTransaction(
              Effect.gen(function* () {
                if (!(yield* insertTransfer(transfer))) return false
                if (preparation === undefined && transfer.takeVersion === 1) {
                  const row = yield* findTransferByClientId(session.master, transfer.clientTransferId)
                  yield* takeForTransfer(Option.getOrThrow(row))
                }
                return true
              }),
            )
            .pipe(Effect.catchTag("SqlError", Effect.die), Effect.catchAll(takeFailure))
          const row = yield* findTransferByClientId(session.master, transfer.clientTransferId).pipe(Effect.orDie)
          if (Option.isNone(row)) return yield* Effect.dieMessage("the transfer vanished after its insert")
          if (!inserted) return yield* repeat(row.value, params)
          // Committed: the intent is woken, not sent as a persisted message: the spec's 201/200/409 come from the
          // lookup by client id above, and the rows (intent and maybe its take) are already written.
          yield* wakeTransfer(row.value)
          return (yield* transferViews([row.value]))[0]!
        }),
      )
      .handle("list", ({ urlParams }) =>
        Effect.gen(function* () {
          const session = yield* requireSession
          const cursor = urlParams.cursor
          if (cursor !== undefined && !UUID.test(cursor)) {
            return yield* new InvalidRequest({ message: "cursor must be the next_cursor of a previous page" })
          }
          yield* snapshotCursor
          const page = yield* transfersPage(session.master, cursor?.toLowerCase(), TRANSFERS_PAGE).pipe(Effect.orDie)
          if (Option.isNone(page)) {
            return yield* new InvalidRequest({ message: "cursor is not one of your transfers; follow next_cursor" })
          }
          const last = page.value.rows[page.value.rows.length - 1]
          return {
            items: yield* transferViews(page.value.rows),
            next_cursor: page.value.hasMore && last !== undefined ? last.id : null,
          }
        }),
      )
      .handle("payKey", ({ path, payload }) =>
        Effect.gen(function* () {
          const session = yield* requireSession
          yield* requireAccess(session.master)
          if (BigInt(payload.pay_key) === 0n) return yield* new InvalidRequest({ message: "pay_key must not be zero" })
          const sql = yield* SqlClient.SqlClient
          // Key and (wallet covered at creation) take commit together: a refused take stores no key either.
          const outcome = yield* sql
            .withTransaction(
              Effect.gen(function* () {
                const given = yield* givePayKey(session.master, path.id, payload.pay_key)
                if (given._tag !== "Given" || !given.changed) return given
                const row = Option.getOrThrow(yield* findTransfer(path.id))
                if (row.preparation_id === null) yield* takeForTransfer(row)
                return given
              }),
            )
            .pipe(Effect.catchTag("SqlError", Effect.die), Effect.catchAll(takeFailure))
          switch (outcome._tag) {
            case "NotFound":
              return yield* new NotFound({ message: "no such transfer" })
            case "NotV2":
              return yield* new InvalidRequest({
                message: "this transfer's take is on settlement v1: it names no pay key",
              })
            case "Cancelled":
              return yield* new StateConflict({ message: "the transfer is cancelled" })
            case "OtherKey":
              return yield* new StateConflict({ message: "another pay key was already given for this transfer's take" })
          }
          const row = Option.getOrThrow(yield* findTransfer(path.id).pipe(Effect.orDie))
          yield* wakeTransfer(row)
          return (yield* transferViews([row]))[0]!
        }),
      )
      .handle("cancel", ({ path }) =>
        Effect.gen(function* () {
          const session = yield* requireSession
          const outcome = yield* cancelTransfer(session.master, path.id).pipe(Effect.orDie)
          switch (outcome._tag) {
            case "NotFound":
              return yield* new NotFound({ message: "no such transfer" })
            case "TakeCommitted":
              return yield* new StateConflict({
                message: `the transfer's take ${outcome.takeId} is already created; it can no longer be cancelled`,
              })
            case "Cancelled":
              return (yield* transferViews([outcome.row]))[0]!
          }
        }),
      )
  }),
)
