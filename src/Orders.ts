/**
 * Orders (spec /v1/orders): a maker's capital on one venue's escrow, quoted to takers on other venues. The service
 * prepares an order (what the owner signs to fund it: FundOrder, permit, and a venue transfer of the shortfall when
 * the wallet lacks the amount), takes the owner's signatures (relays `fund`, or queues the venue transfer first),
 * answers the owner's orders, and publishes or withdraws the quote set a maker signs for an order.
 * src/Orders/Http.ts authenticates (session, access, quoting principal) and serves it.
 *
 * Writes commit first, then the order's OrderFunding entity (and the account's WithdrawalDesk) is woken: a wake,
 * never a persisted intent, since a repeat is answered from the order's state (lookup by id or client id).
 */
import { Sharding } from "@effect/cluster"
import { SqlClient } from "@effect/sql"
import { Clock, Context, Effect, Layer, Option } from "effect"
import { type Address, getAddress, type Hex, verifyTypedData } from "viem"
import { findLinkedAccount } from "./Accounts/LinkedAccounts.ts"
import { VenueAdaptersLive } from "./Accounts/VenueAdaptersLive.ts"
import { ChainClients } from "./Chain/ChainClients.ts"
import { type FundOrderWire, fundCall } from "./Chain/FundCall.ts"
import { fundOrderTypedDataOn, newOrderEscrowVersion, orderEscrow } from "./Chain/OrderEscrow.ts"
import { readPermitContext } from "./Chain/TokenReads.ts"
import { wakeIfClustered } from "./Cluster/KeyedWakes.ts"
import { AppConfig } from "./Config.ts"
import {
  ChainUnavailable,
  Forbidden,
  InvalidRequest,
  LeaseExpired,
  NotFound,
  QuoteStale,
  SignatureInvalid,
  StateConflict,
} from "./Domain/Errors.ts"
import { permitTypedData } from "./Domain/Permit.ts"
import type { Principal } from "./Domain/Principal.ts"
import { shapeFailure } from "./Domain/SignatureFailure.ts"
import { checkSignatureShape } from "./Domain/SiweSignature.ts"
import { toWireTypedData } from "./Domain/WireTypedData.ts"
import { OrderFunding } from "./Orders/Funding.ts"
import { checkQuoteSet, type QuoteSetInput } from "./Orders/QuoteSetCheck.ts"
import { cancelQuoteSets, publishQuoteSet } from "./Orders/QuoteSets.ts"
import { findOrder, findOrderByClientId, insertOrder, markFunding, type OrderRow } from "./Orders/Repo.ts"
import { queueVenueTransfer } from "./Orders/VenueTransfer.ts"
import {
  type CredentialOrderView,
  credentialOrderView,
  type OrderPreparation,
  type OrderView,
  orderView,
  type SignItem,
} from "./Orders/View.ts"
import { findQuoteIdentity } from "./QuoteIdentities/Repo.ts"
import { Relayer } from "./Relayer.ts"
import { randomHex, randomUuid, SecureRandom } from "./SecureRandom.ts"
import { bindSql } from "./Sql/Bind.ts"
import { SqlTest } from "./Sql/TestDatabase.ts"
import { VenueAdapters } from "./Venues/VenueAdapters.ts"
import { WithdrawalDesk } from "./Withdrawals/Desk.ts"
import { prepareWithdrawal } from "./Withdrawals/Prepare.ts"

export type { QuoteSetInput } from "./Orders/QuoteSetCheck.ts"
export type { OrderPreparation, OrderView, SignItem } from "./Orders/View.ts"

/** A FundOrder (and its permit) stays signable for one hour. */
const FUND_VALIDITY_SECONDS = 3600n
/** Signatures are refused this close to the fund deadline: the fund must still be mined before it (ms). */
const SIGN_MARGIN_MS = 60_000

/** POST /v1/orders, decoded. */
export interface CreateOrderInput {
  readonly client_order_id: string
  readonly venue: string
  readonly receive_venue: string
  readonly owner_address: string
  readonly amount: string
  readonly quote_identity_id: string
}

/** POST /v1/orders/{id}/signatures, decoded: the owner's signature of each sign item. */
export interface OrderSignatures {
  readonly fund_order: string
  readonly permit: string
  readonly venue_transfer?: string | undefined
}

/** Who may publish an order's quotes: the master's session, or a credential of the order's own identity. */
export type Quoter =
  | Pick<Extract<Principal, { _tag: "Session" }>, "_tag" | "master">
  | Pick<Extract<Principal, { _tag: "Credential" }>, "_tag" | "quoteIdentityId" | "scopes">

const sameParameters = (row: OrderRow, p: CreateOrderInput) =>
  row.venue === p.venue &&
  row.receive_venue === p.receive_venue &&
  row.owner_address === p.owner_address.toLowerCase() &&
  BigInt(row.amount) === BigInt(p.amount) &&
  row.quote_identity_id === p.quote_identity_id.toLowerCase()

export class Orders extends Effect.Service<Orders>()("Orders", {
  effect: Effect.gen(function* () {
    const config = yield* AppConfig
    const { deployment, operator } = config
    const clients = yield* ChainClients
    const relayer = yield* Relayer
    const adapters = yield* VenueAdapters
    const sharding = yield* Effect.serviceOption(Sharding.Sharding)
    const db = yield* bindSql
    /** The same client, for the one sign path whose two writes (order, relayer) share a transaction. */
    const sql = yield* SqlClient.SqlClient
    // Exactly these services (not the whole context of construction, which would shadow the caller's span).
    const context = Context.make(AppConfig, config).pipe(
      Context.add(VenueAdapters, adapters),
      Context.add(SecureRandom, yield* SecureRandom),
    )
    const venueOf = (id: string) => deployment.venues.find((v) => v.id === id)

    /** Repository calls (this concept's and others'), on the database, config and randomness it was built with. */
    const run = <A, E, R>(self: Effect.Effect<A, E, R>) => db(Effect.provide(self, context))
    /** A wake after a commit, on the cluster this service was built in (none in tests without one: a no-op). */
    const wake = (effect: Effect.Effect<void>) =>
      Option.isSome(sharding) ? Effect.provideService(effect, Sharding.Sharding, sharding.value) : effect
    const view = (row: OrderRow) => run(orderView(row))
    const reloaded = (id: string) =>
      Effect.flatMap(run(findOrder(id)).pipe(Effect.orDie), (row) => view(Option.getOrThrow(row)))

    /** The master's own order, or 404 (another master's order is indistinguishable from none). */
    const ownOrder = (id: string, master: string) =>
      Effect.flatMap(run(findOrder(id)).pipe(Effect.orDie), (order) =>
        Option.isSome(order) && order.value.master === master
          ? Effect.succeed(order.value)
          : Effect.fail(new NotFound({ message: "no such order" })),
      )

    /** A creation's own checks: two different configured venues and a positive amount. */
    const checkCreate = (input: CreateOrderInput) =>
      Effect.gen(function* () {
        const venue = venueOf(input.venue)
        if (!venue || !venueOf(input.receive_venue)) return yield* new NotFound({ message: "unknown venue" })
        if (input.venue === input.receive_venue) {
          return yield* new InvalidRequest({ message: "receive_venue must differ from venue" })
        }
        if (BigInt(input.amount) === 0n) return yield* new InvalidRequest({ message: "amount must be positive" })
        return venue
      })

    /** The order this client id already names, answered as the creation was (409 when other parameters). */
    const replay = (master: string, input: CreateOrderInput) =>
      Effect.gen(function* () {
        const existing = yield* run(findOrderByClientId(master, input.client_order_id)).pipe(Effect.orDie)
        if (Option.isNone(existing)) return Option.none<OrderPreparation>()
        if (!sameParameters(existing.value, input)) {
          return yield* new StateConflict({ message: "client_order_id was used with other parameters" })
        }
        return Option.some<OrderPreparation>({
          order: yield* view(existing.value),
          to_sign: existing.value.to_sign as ReadonlyArray<SignItem>,
        })
      })

    /**
     * The order `input.client_order_id` already created for the master, if any (a retry after a lost response);
     * checks the request first. A retry is answered whatever the account's access since: the caller checks access
     * only when this answers none, then calls `create`.
     */
    const findCreated = Effect.fn("Orders.findCreated")(function* (master: string, input: CreateOrderInput) {
      yield* checkCreate(input)
      return yield* replay(master, input)
    })

    /**
     * Creates the order (state preparing) and answers what the owner signs. The caller has checked the master's
     * access. The same client id with the same parameters answers the same order (also when a concurrent create
     * won the race); other parameters answer 409.
     */
    const create = Effect.fn("Orders.create")(function* (master: string, input: CreateOrderInput) {
      const venue = yield* checkCreate(input)
      const before = yield* replay(master, input)
      if (Option.isSome(before)) return before.value
      const identity = yield* run(findQuoteIdentity(input.quote_identity_id)).pipe(Effect.orDie)
      if (Option.isNone(identity) || identity.value.master !== master || identity.value.revoked_at) {
        return yield* new NotFound({ message: "no live quote identity with this id" })
      }
      const owner = input.owner_address.toLowerCase()
      const client = clients.venue(venue.id)
      if (!client) return yield* new ChainUnavailable({ message: "no node for this venue", retryable: true })
      const permit = yield* readPermitContext(client, venue.token, owner).pipe(
        Effect.catchAll((e) => Effect.fail(new ChainUnavailable({ message: e.message, retryable: true }))),
      )
      const amount = BigInt(input.amount)
      // The wallet lacks the amount: the shortfall moves first from the owner's margin on this venue to
      // the owner's own address on the escrow chain (a withdrawal "to signer" from the linked account).
      // A deployment without API access to the venue offers wallet funding only: the owner tops the wallet
      // up by other means before signing (a fund without the amount reverts in simulation: order failed).
      const transfer =
        permit.balance >= amount || adapters.get(venue.id) === undefined
          ? undefined
          : yield* run(
              Effect.gen(function* () {
                const link = yield* findLinkedAccount(master, venue.id).pipe(Effect.orDie)
                if (Option.isNone(link) || link.value.address !== owner) {
                  return yield* new NotFound({ message: `owner_address is not your linked account on ${venue.id}` })
                }
                // The whole shortfall must arrive: a fee the venue takes out of the amount goes on top.
                return yield* prepareWithdrawal({
                  master,
                  venue: venue.id,
                  amount: amount - permit.balance,
                  to: "signer",
                  feeOnTop: true,
                })
              }),
            )
      const now = yield* Clock.currentTimeMillis
      const deadline = BigInt(Math.floor(now / 1000)) + FUND_VALIDITY_SECONDS
      const orderId = `0x${yield* run(randomHex(32))}` as Hex
      // The escrow is fixed here for the order's life: the FundOrder's domain and the permit's spender name it.
      const escrow = orderEscrow(venue, newOrderEscrowVersion(deployment, venue))!
      const fund = fundOrderTypedDataOn(escrow, {
        orderId,
        owner: getAddress(owner),
        operator: getAddress(operator),
        quoteSigner: getAddress(identity.value.signer),
        amount,
        deadline,
      })
      const permitData = permitTypedData(permit.domain, {
        owner,
        spender: escrow.address,
        value: amount,
        nonce: permit.nonce,
        deadline,
      })
      const toSign: ReadonlyArray<SignItem> = [
        ...(transfer === undefined
          ? []
          : [{ kind: "venue_transfer" as const, signer: owner, typed_data: transfer.typedData }]),
        { kind: "fund_order", signer: owner, typed_data: toWireTypedData(fund) },
        { kind: "permit", signer: owner, typed_data: toWireTypedData(permitData) },
      ]
      const outcome = yield* run(
        insertOrder({
          id: orderId,
          master,
          clientOrderId: input.client_order_id,
          venue: venue.id,
          receiveVenue: input.receive_venue,
          owner,
          amount,
          identityId: identity.value.id,
          quoteSigner: identity.value.signer,
          fundDeadline: deadline,
          toSign,
          escrowVersion: escrow.version,
          nowMs: now,
        }),
      ).pipe(Effect.orDie)
      if (outcome === "not-linked") {
        return yield* new NotFound({ message: `owner_address is not your linked account on ${venue.id}` })
      }
      // A concurrent create with the same client id won the race: answer as a retry would.
      const row = yield* run(findOrderByClientId(master, input.client_order_id)).pipe(Effect.orDie)
      if (Option.isNone(row)) return yield* Effect.dieMessage("order vanished after insert")
      if (outcome === "exists" && !sameParameters(row.value, input)) {
        return yield* new StateConflict({ message: "client_order_id was used with other parameters" })
      }
      return { order: yield* view(row.value), to_sign: row.value.to_sign as ReadonlyArray<SignItem> }
    })

    /**
     * The owner's signatures of every sign item. Wallet funding: relays `fund` (key `fund:<order id>`) and the
     * order goes funding. With a venue_transfer item: queues that withdrawal and the order goes awaiting_margin.
     * An order already past preparing answers its view (a retry); a failed or closed one 409.
     */
    const sign = Effect.fn("Orders.sign")(function* (master: string, orderId: string, signatures: OrderSignatures) {
      const order = yield* ownOrder(orderId, master)
      if (order.state !== "preparing") {
        if (order.state === "awaiting_margin" || order.state === "funding" || order.state === "funded") {
          return yield* view(order)
        }
        return yield* new StateConflict({ message: `the order is ${order.state}` })
      }
      // A fund after its FundOrder's deadline reverts (and a venue transfer would move the owner's margin for
      // nothing): refuse before relaying anything, with time left for the fund to be mined.
      const deadlineMs = Number(order.fund_deadline) * 1000
      if ((yield* Clock.currentTimeMillis) > deadlineMs - SIGN_MARGIN_MS) {
        return yield* new StateConflict({
          message: "the order's fund deadline has passed; prepare a new order (POST /v1/orders)",
        })
      }
      const items = order.to_sign as ReadonlyArray<SignItem>
      const transfer = items.find((i) => i.kind === "venue_transfer")
      if (transfer === undefined && signatures.venue_transfer !== undefined) {
        return yield* new InvalidRequest({ message: "this order has no venue_transfer item to sign" })
      }
      if (transfer !== undefined && signatures.venue_transfer === undefined) {
        return yield* new SignatureInvalid({ message: "the order's venue_transfer must be signed by the owner" })
      }
      yield* checkSignatureShape(signatures.fund_order).pipe(Effect.catchAll(shapeFailure))
      yield* checkSignatureShape(signatures.permit).pipe(Effect.catchAll(shapeFailure))
      if (signatures.venue_transfer !== undefined) {
        yield* checkSignatureShape(signatures.venue_transfer).pipe(Effect.catchAll(shapeFailure))
      }
      const fund = items.find((i) => i.kind === "fund_order")!
      const permit = items.find((i) => i.kind === "permit")!
      for (const [item, signature] of [
        [fund, signatures.fund_order],
        [permit, signatures.permit],
      ] as const) {
        const valid = yield* Effect.promise(() =>
          verifyTypedData({
            ...item.typed_data,
            address: order.owner_address as Address,
            signature: signature as Hex,
          }).catch(() => false),
        )
        if (!valid) return yield* new SignatureInvalid({ message: `the ${item.kind} is not signed by the owner` })
      }
      if (transfer !== undefined && signatures.venue_transfer !== undefined) {
        const queued = yield* run(
          queueVenueTransfer(order, transfer, signatures.venue_transfer, {
            venue_transfer: signatures.venue_transfer,
            fund_order: signatures.fund_order,
            permit: signatures.permit,
          }),
        )
        // Committed: the order's OrderFunding entity relays fund once the withdrawal landed, and the account's
        // withdrawal desk relays the venue transfer it queued.
        yield* wake(wakeIfClustered(OrderFunding, order.id))
        yield* wake(wakeIfClustered(WithdrawalDesk, queued.desk))
        return yield* reloaded(order.id)
      }
      const escrow = orderEscrow(venueOf(order.venue)!, order.escrow_version)
      // Only a config that dropped a venue's escrow_v2 while its orders exist: an operator error.
      if (escrow === undefined) return yield* Effect.dieMessage(`order ${order.id}: its escrow is not configured`)
      const calldata = fundCall(
        fund.typed_data.message as FundOrderWire,
        signatures.fund_order as Hex,
        signatures.permit as Hex,
        escrow.version,
      )
      const now = yield* Clock.currentTimeMillis
      // The order's move and the relayer's row commit together (DESIGN §4): no stop can leave a fund call relayed
      // for an order still `preparing` (nothing sweeps those) or the other way round. The guarded move goes first and
      // holds the order's row: a concurrent sign waits, then finds it funding and relays nothing.
      yield* sql
        .withTransaction(
          Effect.gen(function* () {
            const moved = yield* run(
              markFunding(order.id, { fund_order: signatures.fund_order, permit: signatures.permit }, now),
            )
            if (!moved) return
            yield* relayer
              .submit({
                idempotencyKey: `fund:${order.id}`,
                venue: escrow.venue,
                to: escrow.address,
                data: calldata,
                master,
              })
              .pipe(
                Effect.catchTags({
                  IdempotencyConflict: () =>
                    Effect.fail(new StateConflict({ message: "this order is already being funded" })),
                  RelayerRejected: (e) => Effect.dieMessage(`fund call not relayable: ${e.reason}`),
                }),
              )
          }),
        )
        .pipe(Effect.catchTag("SqlError", Effect.die))
      // After the commit, the order's entity watches the fund call to funded/failed.
      yield* wake(wakeIfClustered(OrderFunding, order.id))
      return yield* reloaded(order.id)
    })

    /** The master's order, 404 for another master's or none. */
    const get = Effect.fn("Orders.get")(function* (master: string, orderId: string) {
      return yield* view(yield* ownOrder(orderId, master))
    })

    /** The master's order and its original sign items (recovery after a lost response; creates nothing). */
    const preparation = Effect.fn("Orders.preparation")(function* (master: string, orderId: string) {
      const order = yield* ownOrder(orderId, master)
      return { order: yield* view(order), to_sign: order.to_sign as ReadonlyArray<SignItem> } as OrderPreparation
    })

    /** The master's orders of this client id (none or one). */
    const byClientId = Effect.fn("Orders.byClientId")(function* (master: string, clientOrderId: string) {
      const row = yield* run(findOrderByClientId(master, clientOrderId)).pipe(Effect.orDie)
      return Option.isSome(row) ? [yield* view(row.value)] : ([] as Array<OrderView>)
    })

    /**
     * The order as a quoting principal may see it: the master's session, or a `quote` credential bound to the
     * order's own identity (another identity's order is indistinguishable from none).
     */
    const quotableOrder = (by: Quoter, id: string) =>
      Effect.gen(function* () {
        const order = yield* run(findOrder(id)).pipe(Effect.orDie)
        if (Option.isNone(order)) return yield* new NotFound({ message: "no such order" })
        if (by._tag === "Session") {
          return order.value.master === by.master ? order.value : yield* new NotFound({ message: "no such order" })
        }
        if (order.value.quote_identity_id !== by.quoteIdentityId)
          return yield* new NotFound({ message: "no such order" })
        if (!by.scopes.includes("quote"))
          return yield* new Forbidden({ message: "this credential lacks the quote scope" })
        return order.value
      })

    /** The master's session sees the whole order; a credential not its balances or margin move. */
    const quoterView = (by: Quoter, order: OrderRow) =>
      Effect.map(view(order), (v): OrderView | CredentialOrderView =>
        by._tag === "Session" ? v : credentialOrderView(v),
      )

    /**
     * Publishes a quote set for the order (src/Orders/QuoteSetCheck.ts says what is checked): admitted only while the
     * identity's lease is live at the set's generation and its sequence exceeds every earlier one; it supersedes the
     * order's active set.
     */
    const publishQuotes = Effect.fn("Orders.publishQuotes")(function* (
      by: Quoter,
      orderId: string,
      input: QuoteSetInput,
    ) {
      const order = yield* quotableOrder(by, orderId)
      const set = yield* checkQuoteSet(deployment, order, input, yield* Clock.currentTimeMillis)
      const outcome = yield* run(Effect.flatMap(randomUuid, (id) => publishQuoteSet({ id, ...set }))).pipe(Effect.orDie)
      if (outcome._tag === "Stale") return yield* new QuoteStale({ message: `sequence must exceed ${outcome.last}` })
      if (outcome._tag !== "Published") {
        return yield* new LeaseExpired({
          message: "the identity's lease is not live at this generation; renew and re-sign",
        })
      }
      return yield* quoterView(by, order)
    })

    /** Deactivates the order's quote set (journaled once when one was active). */
    const cancelQuotes = Effect.fn("Orders.cancelQuotes")(function* (by: Quoter, orderId: string) {
      const order = yield* quotableOrder(by, orderId)
      yield* run(cancelQuoteSets(order.id, order.master, order.quote_identity_id)).pipe(Effect.orDie)
      return yield* quoterView(by, order)
    })

    return { findCreated, create, sign, get, preparation, byClientId, publishQuotes, cancelQuotes } as const
  }),
  dependencies: [VenueAdaptersLive],
}) {
  /** The service on a throw-away database (SqlTest); the test gives AppConfig, the chain clients, the Relayer,
   * SecureRandom and the venue adapters. */
  static readonly Test = Orders.DefaultWithoutDependencies.pipe(Layer.provideMerge(SqlTest))
}
