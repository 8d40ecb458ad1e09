/**
 * Transfers (spec POST /v1/transfers, GET /v1/transfers, POST /v1/transfers/{id}/cancel, PUT
 * /v1/transfers/{id}/take/pay-key; DESIGN §10.3): a transfer intent is an optional venue withdrawal (`to: signer`)
 * that prefunds the payer's wallet on the `from` chain, then a take. The intent gets its take at creation when the
 * wallet already holds `amount_in` (v1), when the client gives its pay key (v2), or later from its TransferDesk
 * entity (actors/TransferDesk.ts, which calls payerBalance and takeForTransfer below). src/Transfers/Http.ts serves
 * the routes.
 *
 * Like src/Takes.ts this module reads the chain (the payer's balance; the take's permit context through createTake)
 * and passes the values to the repository functions of src/Transfers/*; it imports no SQL client itself (its calls
 * are bound to the database it was built with, bindSql of src/Sql/Bind.ts, with exactly the services it captured).
 */
import { Sharding } from "@effect/cluster"
import { Context, Effect, Layer, Option } from "effect"
import type { AccessGate } from "./Access.ts"
import { findLinkedAccount } from "./Accounts/LinkedAccounts.ts"
import { VenueAdaptersLive } from "./Accounts/VenueAdaptersLive.ts"
import { ChainClients } from "./Chain/ChainClients.ts"
import { readTokenBalance } from "./Chain/TokenReads.ts"
import { wakeIfClustered } from "./Cluster/KeyedWakes.ts"
import { AppConfig } from "./Config.ts"
import {
  ChainUnavailable,
  InvalidRequest,
  NotFound,
  PayerNotLinked,
  StateConflict,
  WithdrawalPending,
} from "./Domain/Errors.ts"
import { randomUuid, SecureRandom } from "./SecureRandom.ts"
import { Settlement } from "./Settlement.ts"
import { bindSql } from "./Sql/Bind.ts"
import { SqlTest } from "./Sql/TestDatabase.ts"
import { takeEscrowVersion } from "./Takes/Create.ts"
import { takeFailure } from "./Takes/Errors.ts"
import { type CreateTakeInput, createTake } from "./Takes.ts"
import { TransferDesk } from "./Transfers/Desk.ts"
import {
  attachTake,
  cancelTransfer,
  findTransfer,
  findTransferByClientId,
  givePayKey,
  insertTransfer,
  inTransaction,
  lockTransfer,
  type NewTransfer,
  type TransferRow,
  transfersPage,
} from "./Transfers/Repo.ts"
import { transferViews } from "./Transfers/View.ts"
import { VenueAdapters } from "./Venues/VenueAdapters.ts"
import { prepareWithdrawal } from "./Withdrawals/Prepare.ts"
import { openWithdrawalOf } from "./Withdrawals/Repo.ts"

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i
const ADDRESS = /^0x[0-9a-fA-F]{40}$/
const DEFAULT_PARTS = 8

/**
 * The payer's token balance on the `from` chain, in base units; None when the node did not answer (callers
 * answer CHAIN_UNAVAILABLE or try later, never assume a balance).
 */
export const payerBalance = (venueId: string, payer: string) =>
  Effect.gen(function* () {
    const { deployment } = yield* AppConfig
    const venue = deployment.venues.find((v) => v.id === venueId)
    const client = (yield* ChainClients).venue(venueId)
    if (venue === undefined || client === undefined) return Option.none<bigint>()
    return yield* readTokenBalance(client, venue.token, payer).pipe(Effect.option)
  })

/** The take a transfer asks for, under the transfer's own client take id (`transfer:<id>`). */
export const takeInputOf = (t: TransferRow): CreateTakeInput => ({
  master: t.master,
  clientTakeId: t.client_take_id,
  from: t.from_venue,
  to: t.to_venue,
  amountIn: BigInt(t.amount_in),
  minOut: BigInt(t.min_out),
  payer: t.payer,
  recipient: t.recipient,
  maxParts: t.max_parts,
  payKey: t.pay_key ?? undefined,
})

export type TakeOutcome =
  | { readonly _tag: "Created"; readonly takeId: string }
  /** Cancelled, or another desk or request recorded a take first: nothing done. */
  | { readonly _tag: "Skipped" }

/**
 * Creates and records the take of a waiting transfer: createTake (same routing, reservations and sign items as POST
 * /v1/takes) under the transfer's client take id, and attachTake, in one transaction with the transfer's row locked
 * from the start, so a transfer never points at a take that did not commit and never gets two, and a concurrent
 * cancel waits and then finds the take. Fails with createTake's refusals (nothing written then). A v2 transfer's
 * take names the pay key the client gave; without one createTake refuses it, so no Fill is reserved and no pay
 * window starts before the key is there.
 */
export const takeForTransfer = (t: TransferRow) =>
  inTransaction(
    Effect.gen(function* () {
      const locked = yield* lockTransfer(t.id)
      if (Option.isNone(locked) || locked.value.take_id !== null || locked.value.cancelled_at !== null) {
        return { _tag: "Skipped" } as TakeOutcome
      }
      const created = yield* createTake(takeInputOf(t))
      const attached = yield* attachTake(t.id, created.take.id)
      if (!attached) return yield* Effect.dieMessage(`transfer ${t.id} changed under its row lock`)
      return { _tag: "Created", takeId: created.take.id } as TakeOutcome
    }),
  )

/** POST /v1/transfers: addresses any case, amounts in base units; `maxParts` omitted means 8 (capped by config). */
export interface TransferRequest {
  /** The client's id of the intent; omitted, the service assigns a UUID (a lost answer cannot be found by it). */
  readonly clientTransferId?: string | undefined
  readonly from: string
  readonly to: string
  readonly amountIn: bigint
  readonly minOut: bigint
  readonly payer: string
  readonly recipient: string
  readonly maxParts?: number | undefined
}

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

/** A list cursor as the route takes it (the last id of a previous page), or 400; undefined for the first page. */
export const parseTransfersCursor = (cursor: string | undefined) =>
  cursor === undefined || UUID.test(cursor)
    ? Effect.succeed(cursor?.toLowerCase())
    : Effect.fail(new InvalidRequest({ message: "cursor must be the next_cursor of a previous page" }))

export class Transfers extends Effect.Service<Transfers>()("Transfers", {
  effect: Effect.gen(function* () {
    const config = yield* AppConfig
    const { deployment } = config
    const settlement = yield* Settlement
    const sharding = yield* Effect.serviceOption(Sharding.Sharding)
    const db = yield* bindSql
    // Exactly these services (not the whole context of construction, which would shadow the caller's span).
    const context = Context.make(AppConfig, config).pipe(
      Context.add(ChainClients, yield* ChainClients),
      Context.add(SecureRandom, yield* SecureRandom),
      Context.add(VenueAdapters, yield* VenueAdapters),
    )
    const venueOf = (id: string) => deployment.venues.find((v) => v.id === id)

    /** Repository calls, chain reads and preparations, on what the service was built with. */
    const run = <A, E, R>(effect: Effect.Effect<A, E, R>) => db(Effect.provide(effect, context))

    /**
     * After a commit: the transfer's desk entity (a take still to create) or its take's Settlement entity (one
     * created). Woken, not sent as a persisted message: the spec's 201/200/409 come from the lookup by client id,
     * and the rows (the intent and maybe its take) are already written. On the cluster this service was built in
     * (none in a service test: the entities' own cadence covers the rows).
     */
    const wake = (row: TransferRow) => {
      if (row.take_id !== null) return settlement.wake(row.take_id)
      const send = wakeIfClustered(TransferDesk, row.id)
      return Option.isSome(sharding) ? Effect.provideService(send, Sharding.Sharding, sharding.value) : send
    }

    const view = (row: TransferRow) => Effect.map(run(transferViews([row])), (views) => views[0]!)

    const parametersOf = (r: TransferRequest): Parameters => ({
      from: r.from,
      to: r.to,
      amountIn: r.amountIn,
      minOut: r.minOut,
      maxParts: r.maxParts ?? Math.min(DEFAULT_PARTS, deployment.limits.take_parts_max),
      payer: r.payer.toLowerCase(),
      recipient: r.recipient.toLowerCase(),
    })

    /** The existing intent of a client id: the same one for the same parameters, else STATE_CONFLICT. */
    const repeatOf = (row: TransferRow, p: Parameters) =>
      sameParameters(row, p)
        ? view(row)
        : Effect.fail(new StateConflict({ message: "client_transfer_id was used with other parameters" }))

    /**
     * The spec's answer to a repeat of `clientTransferId`, before anything else is checked: the existing intent
     * (an identical repeat: 200, whatever the account's access since), STATE_CONFLICT (other parameters), or None
     * (no such intent yet: create it).
     */
    const findRepeat = Effect.fn("Transfers.findRepeat")(function* (master: string, request: TransferRequest) {
      if (request.clientTransferId === undefined) return Option.none()
      const existing = yield* run(findTransferByClientId(master, request.clientTransferId)).pipe(Effect.orDie)
      if (Option.isNone(existing)) return Option.none()
      return Option.some(yield* repeatOf(existing.value, parametersOf(request)))
    })

    /**
     * Creates the intent (`created: true`; the route answers 201) or answers an identical repeat (`created: false`,
     * 200). Checks in order: the repeat, the venues, amount and parts, the payer's link on `from`, no unknown
     * withdrawal of the payer's account (WITHDRAWAL_PENDING), the payer's wallet balance (CHAIN_UNAVAILABLE when
     * the node does not answer). A shortfall gets a venue withdrawal preparation of it (to: signer); a v1 intent
     * whose wallet covers amount_in gets its take in the same transaction as its insert (a refusal such as
     * NO_LIQUIDITY leaves no intent behind). Beta access is the caller's check, after findRepeat.
     */
    const create = Effect.fn("Transfers.create")(function* (master: string, request: TransferRequest) {
      const repeat = yield* findRepeat(master, request)
      if (Option.isSome(repeat)) return { created: false, transfer: repeat.value }
      const params = parametersOf(request)
      const from = venueOf(params.from)
      const to = venueOf(params.to)
      if (!from) return yield* new NotFound({ message: `unknown venue ${params.from}; see GET /v1/venues` })
      if (!to) return yield* new NotFound({ message: `unknown venue ${params.to}; see GET /v1/venues` })
      if (from.id === to.id) return yield* new InvalidRequest({ message: "from and to must be different venues" })
      // The route's schema admits only non-negative amounts and addresses; other callers are held to the same.
      if (params.amountIn <= 0n) return yield* new InvalidRequest({ message: "amount_in must be positive" })
      if (params.minOut < 0n) return yield* new InvalidRequest({ message: "min_out must not be negative" })
      if (params.maxParts > deployment.limits.take_parts_max) {
        return yield* new InvalidRequest({ message: `max_parts is at most ${deployment.limits.take_parts_max}` })
      }
      if (!Number.isInteger(params.maxParts) || params.maxParts < 1) {
        return yield* new InvalidRequest({ message: "max_parts must be a positive integer" })
      }
      if (!ADDRESS.test(params.payer) || !ADDRESS.test(params.recipient)) {
        return yield* new InvalidRequest({ message: "payer and recipient must be addresses" })
      }
      if (BigInt(params.recipient) === 0n) return yield* new InvalidRequest({ message: "recipient must not be zero" })
      const link = yield* run(findLinkedAccount(master, from.id)).pipe(Effect.orDie)
      if (Option.isNone(link) || link.value.address !== params.payer) {
        return yield* new PayerNotLinked({ message: `payer is not your linked account on ${from.id}` })
      }
      // Spec Recovery: nothing is created around an unknown withdrawal of the payer's account.
      const open = yield* run(openWithdrawalOf(from.id, params.payer)).pipe(Effect.orDie)
      if (Option.isSome(open) && open.value.state === "unknown") {
        return yield* new WithdrawalPending({
          message: `withdrawal ${open.value.id} on ${from.id} is unknown; it must resolve before a new transfer`,
        })
      }
      const balance = yield* run(payerBalance(from.id, params.payer))
      if (Option.isNone(balance)) {
        return yield* new ChainUnavailable({
          message: `could not read the payer's balance on ${from.id}`,
          retryable: true,
        })
      }
      const shortfall = params.amountIn > balance.value ? params.amountIn - balance.value : 0n
      // A preparation is only typed data until the client signs it: one made by a create that then loses the race
      // for its client id is never answered, so it is never signed.
      const preparation =
        shortfall === 0n
          ? undefined
          : // What arrives must cover the shortfall: the venue's fee (Aster's, taken out of the signed amount) goes on top.
            yield* run(prepareWithdrawal({ master, venue: from.id, amount: shortfall, to: "signer", feeOnTop: true }))
      const transfer: NewTransfer = {
        id: yield* run(randomUuid),
        master,
        clientTransferId: request.clientTransferId ?? (yield* run(randomUuid)),
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
      // The insert and, when the wallet covers amount_in, the take commit together: a NO_LIQUIDITY (or any refusal)
      // leaves no intent behind, and a concurrent identical create waits on the client id, then finds this one. A
      // v2 take waits for the client's pay key (givePayKey).
      const inserted = yield* run(
        inTransaction(
          Effect.gen(function* () {
            if (!(yield* insertTransfer(transfer))) return false
            if (preparation === undefined && transfer.takeVersion === 1) {
              const row = yield* findTransferByClientId(master, transfer.clientTransferId)
              yield* takeForTransfer(Option.getOrThrow(row))
            }
            return true
          }),
        ),
      ).pipe(Effect.catchTag("SqlError", Effect.die), Effect.catchAll(takeFailure))
      const row = yield* run(findTransferByClientId(master, transfer.clientTransferId)).pipe(Effect.orDie)
      if (Option.isNone(row)) return yield* Effect.dieMessage("the transfer vanished after its insert")
      if (!inserted) return { created: false, transfer: yield* repeatOf(row.value, params) }
      yield* wake(row.value)
      return { created: true, transfer: yield* view(row.value) }
    })

    /**
     * One page of the master's intents, newest first, at most `limit`, completed and cancelled included;
     * `next_cursor` is the page's last id while more follow. A cursor that is not one of the master's ids: 400.
     */
    const list = Effect.fn("Transfers.list")(function* (master: string, cursor: string | undefined, limit: number) {
      const after = yield* parseTransfersCursor(cursor)
      const page = yield* run(transfersPage(master, after, limit)).pipe(Effect.orDie)
      if (Option.isNone(page)) {
        return yield* new InvalidRequest({ message: "cursor is not one of your transfers; follow next_cursor" })
      }
      const last = page.value.rows[page.value.rows.length - 1]
      return {
        items: yield* run(transferViews(page.value.rows)),
        next_cursor: page.value.hasMore && last !== undefined ? last.id : null,
      }
    })

    /**
     * Settlement v2: the client's pay key for the transfer's take, set once (the same key again answers the intent
     * unchanged, another STATE_CONFLICT; cancelled: STATE_CONFLICT; a v1 intent: INVALID_REQUEST). When the wallet
     * covered amount_in at creation the take is created with it, in the same transaction: a refused take stores no
     * key either. Otherwise the desk creates the take once the funding withdrawal is relayed. `access` gates a new
     * key only: the same key again is answered whatever the account's access since.
     */
    const givePayKeyOf = Effect.fn("Transfers.givePayKey")(function* <R>(
      master: string,
      id: string,
      payKey: string,
      access: AccessGate<R>,
    ) {
      if (!UUID.test(id)) return yield* new NotFound({ message: "no such transfer" })
      if (!ADDRESS.test(payKey)) return yield* new InvalidRequest({ message: "pay_key must be an address" })
      if (BigInt(payKey) === 0n) return yield* new InvalidRequest({ message: "pay_key must not be zero" })
      const outcome = yield* run(
        inTransaction(
          Effect.gen(function* () {
            const given = yield* givePayKey(master, id, payKey, access)
            if (given._tag !== "Given" || !given.changed) return given
            const row = Option.getOrThrow(yield* findTransfer(id))
            if (row.preparation_id === null) yield* takeForTransfer(row)
            return given
          }),
        ),
      ).pipe(
        Effect.catchTag("SqlError", Effect.die),
        Effect.catchIf((e) => e._tag !== "AccessRequired", takeFailure),
      )
      switch (outcome._tag) {
        case "NotFound":
          return yield* new NotFound({ message: "no such transfer" })
        case "NotV2":
          return yield* new InvalidRequest({ message: "this transfer's take is on settlement v1: it names no pay key" })
        case "Cancelled":
          return yield* new StateConflict({ message: "the transfer is cancelled" })
        case "OtherKey":
          return yield* new StateConflict({ message: "another pay key was already given for this transfer's take" })
      }
      const row = Option.getOrThrow(yield* run(findTransfer(id)).pipe(Effect.orDie))
      yield* wake(row)
      return yield* view(row)
    })

    /**
     * Cancels the intent while it has no take (cancelled_at set; the desk then skips it); a repeat answers the
     * cancelled intent again; once the take exists, STATE_CONFLICT. Another master's intent: 404.
     */
    const cancel = Effect.fn("Transfers.cancel")(function* (master: string, id: string) {
      if (!UUID.test(id)) return yield* new NotFound({ message: "no such transfer" })
      const outcome = yield* run(cancelTransfer(master, id)).pipe(Effect.orDie)
      switch (outcome._tag) {
        case "NotFound":
          return yield* new NotFound({ message: "no such transfer" })
        case "TakeCommitted":
          return yield* new StateConflict({
            message: `the transfer's take ${outcome.takeId} is already created; it can no longer be cancelled`,
          })
        case "Cancelled":
          return yield* view(outcome.row)
      }
    })

    return { findRepeat, create, list, givePayKey: givePayKeyOf, cancel } as const
  }),
  dependencies: [VenueAdaptersLive, Settlement.Default],
}) {
  /**
   * The service on a throw-away database (SqlTest), without its venue adapters and Settlement: the test gives them
   * (real adapters against venue simulators for a shortfall's preparation) with the AppConfig, ChainClients and
   * SecureRandom.
   */
  static readonly Test = Transfers.DefaultWithoutDependencies.pipe(Layer.provideMerge(SqlTest))
}
