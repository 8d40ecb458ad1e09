import { HttpApiBuilder } from "@effect/platform"
import { Clock, Effect, Either, Option } from "effect"
import { type Address, getAddress, type Hex, verifyTypedData } from "viem"
import { findLinkedAccount } from "../Accounts/LinkedAccounts.ts"
import { ChainClients } from "../Chain/ChainClients.ts"
import { type FundOrderWire, fundCall } from "../Chain/FundCall.ts"
import { fundOrderTypedDataOn, newOrderEscrowVersion, orderEscrow } from "../Chain/OrderEscrow.ts"
import { readPermitContext } from "../Chain/TokenReads.ts"
import { wakeIfClustered } from "../Cluster/KeyedWakes.ts"
import { AppConfig } from "../Config.ts"
import {
  ChainUnavailable,
  ChallengeExpired,
  InvalidRequest,
  NotFound,
  SignatureInvalid,
  StateConflict,
  WithdrawalPending,
} from "../Domain/Errors.ts"
import { permitTypedData } from "../Domain/Permit.ts"
import { canonicalSignature } from "../Domain/Signature.ts"
import { shapeFailure } from "../Domain/SignatureFailure.ts"
import { checkSignatureShape } from "../Domain/Siwe.ts"
import { toWireTypedData } from "../Domain/WireTypedData.ts"
import { digestOfUntrusted, recoverDigestSigner } from "../Domain/WithdrawalTypedData.ts"
import { Api } from "../Http/Api.ts"
import { requireAccess, requireSession } from "../Http/Guards.ts"
import { findQuoteIdentity } from "../QuoteIdentities/Repo.ts"
import { Relayer } from "../Relayer.ts"
import { randomHex, randomUuid } from "../SecureRandom.ts"
import { snapshotCursor } from "../Stream/SnapshotCursor.ts"
import { VenueAdapters } from "../Venues/VenueAdapters.ts"
import { WithdrawalDesk, withdrawalDeskId } from "../Withdrawals/Desk.ts"
import { prepareWithdrawal } from "../Withdrawals/Prepare.ts"
import { createWithdrawal, findPreparationByDigest } from "../Withdrawals/Repo.ts"
import { OrderFunding } from "./Funding.ts"
import { latestQuoteSet } from "./QuoteSets.ts"
import { quoteSetView, quotesHandlers } from "./QuotesHttp.ts"
import {
  findOrder,
  findOrderByClientId,
  insertOrder,
  markAwaitingMargin,
  markFunding,
  type OrderRow,
  orderTransactions,
} from "./Repo.ts"

/** A FundOrder (and its permit) stays signable for one hour. */
const FUND_VALIDITY_SECONDS = 3600n

interface SignItem {
  readonly kind: "venue_transfer" | "fund_order" | "permit"
  readonly signer: string
  // biome-ignore lint/suspicious/noExplicitAny: wire typed data is JSON
  readonly typed_data: any
}

const orderView = (row: OrderRow) =>
  Effect.zipWith(
    orderTransactions(row.id).pipe(Effect.orDie),
    latestQuoteSet(row.id).pipe(Effect.orDie),
    (txs, quoteSet) => ({
      id: row.id,
      venue: row.venue,
      receive_venue: row.receive_venue,
      owner_address: row.owner_address,
      state: row.state,
      error: row.error,
      amount: row.amount,
      escrow_available: row.escrow_available,
      quotable: row.escrow_available,
      filled: row.filled,
      received: row.received,
      last_sequence: Option.isSome(quoteSet) ? Number(quoteSet.value.sequence) : null,
      quote_set: Option.isSome(quoteSet) ? quoteSetView(quoteSet.value) : null,
      margin_move:
        row.venue_transfer_id === null
          ? null
          : {
              venue: row.venue,
              amount: row.vt_amount,
              // Absent until the venue acknowledged the transfer, as on the withdrawal itself.
              ...(row.vt_venue_ref === null ? {} : { venue_ref: row.vt_venue_ref }),
              state: row.vt_state,
              error: row.vt_error,
              at: row.vt_at?.toISOString() ?? null,
            },
      transactions: txs.map((t) => ({ ...t, at: t.at.toISOString() })),
      created_at: row.created_at.toISOString(),
      updated_at: row.updated_at.toISOString(),
      client_order_id: row.client_order_id,
      quote_identity_id: row.quote_identity_id,
      quote_signer: row.quote_signer,
    }),
  )

/** The session's own order, or 404 (another master's order is indistinguishable from none). */
const ownOrder = (id: string, master: string) =>
  Effect.flatMap(findOrder(id).pipe(Effect.orDie), (order) =>
    Option.isSome(order) && order.value.master === master
      ? Effect.succeed(order.value)
      : Effect.fail(new NotFound({ message: "no such order" })),
  )

const sameParameters = (
  row: OrderRow,
  p: { venue: string; receive_venue: string; owner_address: string; amount: string; quote_identity_id: string },
) =>
  row.venue === p.venue &&
  row.receive_venue === p.receive_venue &&
  row.owner_address === p.owner_address.toLowerCase() &&
  BigInt(row.amount) === BigInt(p.amount) &&
  row.quote_identity_id === p.quote_identity_id.toLowerCase()

export const OrdersHandlers = HttpApiBuilder.group(Api, "orders", (handlers) =>
  Effect.gen(function* () {
    const { deployment, operator } = yield* AppConfig
    const clients = yield* ChainClients
    const relayer = yield* Relayer
    const venueOf = (id: string) => deployment.venues.find((v) => v.id === id)
    const quotes = quotesHandlers(deployment, orderView)
    return handlers
      .handle("create", ({ payload }) =>
        Effect.gen(function* () {
          const session = yield* requireSession
          const venue = venueOf(payload.venue)
          if (!venue || !venueOf(payload.receive_venue)) return yield* new NotFound({ message: "unknown venue" })
          if (payload.venue === payload.receive_venue) {
            return yield* new InvalidRequest({ message: "receive_venue must differ from venue" })
          }
          if (BigInt(payload.amount) === 0n) return yield* new InvalidRequest({ message: "amount must be positive" })
          const existing = yield* findOrderByClientId(session.master, payload.client_order_id).pipe(Effect.orDie)
          if (Option.isSome(existing)) {
            if (!sameParameters(existing.value, payload)) {
              return yield* new StateConflict({ message: "client_order_id was used with other parameters" })
            }
            return {
              order: yield* orderView(existing.value),
              to_sign: existing.value.to_sign as ReadonlyArray<SignItem>,
            }
          }
          yield* requireAccess(session.master)
          const identity = yield* findQuoteIdentity(payload.quote_identity_id).pipe(Effect.orDie)
          if (Option.isNone(identity) || identity.value.master !== session.master || identity.value.revoked_at) {
            return yield* new NotFound({ message: "no live quote identity with this id" })
          }
          const owner = payload.owner_address.toLowerCase()
          const client = clients.venue(venue.id)
          if (!client) return yield* new ChainUnavailable({ message: "no node for this venue", retryable: true })
          const permit = yield* readPermitContext(client, venue.token, owner).pipe(
            Effect.catchAll((e) => Effect.fail(new ChainUnavailable({ message: e.message, retryable: true }))),
          )
          const amount = BigInt(payload.amount)
          // The wallet lacks the amount: the shortfall moves first from the owner's margin on this venue to
          // the owner's own address on the escrow chain (a withdrawal "to signer" from the linked account).
          // A deployment without API access to the venue offers wallet funding only: the owner tops the wallet
          // up by other means before signing (a fund without the amount reverts in simulation: order failed).
          const transfer =
            permit.balance >= amount || (yield* VenueAdapters).get(venue.id) === undefined
              ? undefined
              : yield* Effect.gen(function* () {
                  const link = yield* findLinkedAccount(session.master, venue.id).pipe(Effect.orDie)
                  if (Option.isNone(link) || link.value.address !== owner) {
                    return yield* new NotFound({ message: `owner_address is not your linked account on ${venue.id}` })
                  }
                  return yield* prepareWithdrawal({
                    master: session.master,
                    venue: venue.id,
                    amount: amount - permit.balance,
                    to: "signer",
                  })
                })
          const now = yield* Clock.currentTimeMillis
          const deadline = BigInt(Math.floor(now / 1000)) + FUND_VALIDITY_SECONDS
          const orderId = `0x${yield* randomHex(32)}` as Hex
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
          const outcome = yield* insertOrder({
            id: orderId,
            master: session.master,
            clientOrderId: payload.client_order_id,
            venue: venue.id,
            receiveVenue: payload.receive_venue,
            owner,
            amount,
            identityId: identity.value.id,
            quoteSigner: identity.value.signer,
            fundDeadline: deadline,
            toSign,
            escrowVersion: escrow.version,
            nowMs: now,
          }).pipe(Effect.orDie)
          if (outcome === "not-linked") {
            return yield* new NotFound({ message: `owner_address is not your linked account on ${venue.id}` })
          }
          // A concurrent create with the same client id won the race: answer as a retry would.
          const row = yield* findOrderByClientId(session.master, payload.client_order_id).pipe(Effect.orDie)
          if (Option.isNone(row)) return yield* Effect.dieMessage("order vanished after insert")
          if (outcome === "exists" && !sameParameters(row.value, payload)) {
            return yield* new StateConflict({ message: "client_order_id was used with other parameters" })
          }
          return { order: yield* orderView(row.value), to_sign: row.value.to_sign as ReadonlyArray<SignItem> }
        }),
      )
      .handle("sign", ({ path, payload }) =>
        Effect.gen(function* () {
          const session = yield* requireSession
          const order = yield* ownOrder(path.id, session.master)
          if (order.state !== "preparing") {
            if (order.state === "awaiting_margin" || order.state === "funding" || order.state === "funded") {
              return yield* orderView(order)
            }
            return yield* new StateConflict({ message: `the order is ${order.state}` })
          }
          const items = order.to_sign as ReadonlyArray<SignItem>
          const transfer = items.find((i) => i.kind === "venue_transfer")
          if (transfer === undefined && payload.venue_transfer !== undefined) {
            return yield* new InvalidRequest({ message: "this order has no venue_transfer item to sign" })
          }
          if (transfer !== undefined && payload.venue_transfer === undefined) {
            return yield* new SignatureInvalid({ message: "the order's venue_transfer must be signed by the owner" })
          }
          yield* checkSignatureShape(payload.fund_order).pipe(Effect.catchAll(shapeFailure))
          yield* checkSignatureShape(payload.permit).pipe(Effect.catchAll(shapeFailure))
          if (payload.venue_transfer !== undefined) {
            yield* checkSignatureShape(payload.venue_transfer).pipe(Effect.catchAll(shapeFailure))
          }
          const fund = items.find((i) => i.kind === "fund_order")!
          const permit = items.find((i) => i.kind === "permit")!
          for (const [item, signature] of [
            [fund, payload.fund_order],
            [permit, payload.permit],
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
          if (transfer !== undefined && payload.venue_transfer !== undefined) {
            return yield* queueVenueTransfer(order, transfer, payload.venue_transfer, {
              venue_transfer: payload.venue_transfer,
              fund_order: payload.fund_order,
              permit: payload.permit,
            })
          }
          const escrow = orderEscrow(venueOf(order.venue)!, order.escrow_version)
          // Only a config that dropped a venue's escrow_v2 while its orders exist: an operator error.
          if (escrow === undefined) return yield* Effect.dieMessage(`order ${order.id}: its escrow is not configured`)
          const calldata = fundCall(
            fund.typed_data.message as FundOrderWire,
            payload.fund_order as Hex,
            payload.permit as Hex,
            escrow.version,
          )
          const now = yield* Clock.currentTimeMillis
          yield* relayer
            .submit({
              idempotencyKey: `fund:${order.id}`,
              venue: escrow.venue,
              to: escrow.address,
              data: calldata,
              master: session.master,
            })
            .pipe(
              Effect.catchTags({
                IdempotencyConflict: () =>
                  Effect.fail(new StateConflict({ message: "this order is already being funded" })),
                RelayerRejected: (e) => Effect.dieMessage(`fund call not relayable: ${e.reason}`),
              }),
            )
          yield* markFunding(order.id, { fund_order: payload.fund_order, permit: payload.permit }, now).pipe(
            Effect.orDie,
          )
          // After the commit, a wake rather than a persisted intent: the rows are written and a repeat is answered
          // from the order's state (lookup by id); the order's entity then watches the fund call to funded/failed.
          yield* wakeIfClustered(OrderFunding, order.id)
          return yield* orderView(Option.getOrThrow(yield* findOrder(order.id).pipe(Effect.orDie)))
        }),
      )
      .handle("list", ({ urlParams }) =>
        Effect.gen(function* () {
          const session = yield* requireSession
          yield* snapshotCursor
          const row = yield* findOrderByClientId(session.master, urlParams.client_order_id).pipe(Effect.orDie)
          return { data: Option.isSome(row) ? [yield* orderView(row.value)] : [] }
        }),
      )
      .handle("get", ({ path }) =>
        Effect.flatMap(requireSession, (s) =>
          Effect.zipRight(snapshotCursor, Effect.flatMap(ownOrder(path.id, s.master), orderView)),
        ),
      )
      .handle("publishQuotes", quotes.publish)
      .handle("cancelQuotes", quotes.cancel)
      .handle("preparation", ({ path }) =>
        Effect.gen(function* () {
          const session = yield* requireSession
          yield* snapshotCursor
          const order = yield* ownOrder(path.id, session.master)
          return { order: yield* orderView(order), to_sign: order.to_sign as ReadonlyArray<SignItem> }
        }),
      )
  }),
)

/**
 * Verifies the owner's signature of the order's venue_transfer (the venue withdrawal prepared at creation,
 * found again by its digest), queues that withdrawal exactly as POST /v1/withdrawals does, and moves the
 * order to `awaiting_margin`. A retry after a lost response finds the same withdrawal (one per preparation).
 * The fund call is relayed later by the order's OrderFunding entity, once the withdrawal landed in the wallet.
 */
const queueVenueTransfer = (
  order: OrderRow,
  item: SignItem,
  signatureInput: string,
  signatures: Record<string, string>,
) =>
  Effect.gen(function* () {
    const digest = digestOfUntrusted(item.typed_data)
    if (Either.isLeft(digest)) return yield* Effect.dieMessage(`stored venue_transfer does not hash: ${digest.left}`)
    const signature = Either.getOrThrow(canonicalSignature(signatureInput as Hex))
    const signer = yield* recoverDigestSigner(digest.right, signature)
    if (signer !== order.owner_address) {
      return yield* new SignatureInvalid({ message: "the venue_transfer is not signed by the owner" })
    }
    const prep = yield* findPreparationByDigest(digest.right).pipe(Effect.orDie)
    if (Option.isNone(prep)) return yield* Effect.dieMessage("the order's venue_transfer preparation is missing")
    const now = yield* Clock.currentTimeMillis
    const outcome = yield* createWithdrawal({
      id: yield* randomUuid,
      preparation: prep.value,
      signature,
      nowMs: now,
      expired: prep.value.expires_at.getTime() <= now,
    }).pipe(Effect.orDie)
    switch (outcome._tag) {
      case "Expired":
        return yield* new ChallengeExpired({
          message: "the venue_transfer expired before it was signed; create a new order (new client_order_id)",
        })
      case "NotLinked":
        return yield* new NotFound({ message: `owner_address is no longer your linked account on ${order.venue}` })
      case "Pending":
        return yield* new WithdrawalPending({
          message: `withdrawal ${outcome.id} on ${order.venue} is still open; it must resolve first`,
        })
      case "Created":
      case "Existing":
        yield* markAwaitingMargin(order.id, signatures, outcome.row.id, now).pipe(Effect.orDie)
        // Committed: the order's OrderFunding entity relays fund once the withdrawal landed (a wake, as above).
        yield* wakeIfClustered(OrderFunding, order.id)
        // …and the account's withdrawal desk relays the venue transfer it queued.
        yield* wakeIfClustered(WithdrawalDesk, withdrawalDeskId(prep.value.venue, prep.value.address))
        return yield* orderView(Option.getOrThrow(yield* findOrder(order.id).pipe(Effect.orDie)))
    }
  })
