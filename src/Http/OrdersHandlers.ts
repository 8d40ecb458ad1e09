import { HttpApiBuilder } from "@effect/platform"
import { Clock, Effect, Option } from "effect"
import { type Address, encodeFunctionData, getAddress, type Hex, hexToNumber, slice, verifyTypedData } from "viem"
import { settlementEscrowAbi } from "../Chain/artifacts/index.ts"
import { ChainClients } from "../Chain/ChainClients.ts"
import { readPermitContext } from "../Chain/TokenReads.ts"
import { AppConfig } from "../Config.ts"
import { fundOrderTypedData } from "../Domain/EscrowTypedData.ts"
import { permitTypedData } from "../Domain/Permit.ts"
import { checkSignatureShape } from "../Domain/Siwe.ts"
import { toWireTypedData } from "../Domain/WireTypedData.ts"
import { randomHex } from "../SecureRandom.ts"
import {
  findOrder,
  findOrderByClientId,
  insertOrder,
  markFunding,
  type OrderRow,
  orderTransactions,
} from "../Store/Orders.ts"
import { findQuoteIdentity } from "../Store/QuoteIdentities.ts"
import { insertRequest } from "../Store/Relayer.ts"
import { Api } from "./Api.ts"
import { apiError, ChainUnavailable, InvalidRequest, NotFound, SignatureInvalid, StateConflict } from "./Errors.ts"
import { requireAccess, requireSession } from "./Guards.ts"
import { shapeFailure } from "./SignatureFailure.ts"

/** A FundOrder (and its permit) stays signable for one hour. */
const FUND_VALIDITY_SECONDS = 3600n

interface SignItem {
  readonly kind: "fund_order" | "permit"
  readonly signer: string
  // biome-ignore lint/suspicious/noExplicitAny: wire typed data is JSON
  readonly typed_data: any
}

const orderView = (row: OrderRow) =>
  Effect.map(orderTransactions(row.id).pipe(Effect.orDie), (txs) => ({
    id: row.id,
    venue: row.venue,
    receive_venue: row.receive_venue,
    owner_address: row.owner_address,
    state: row.state,
    error: row.error,
    amount: row.amount,
    escrow_available: row.escrow_available,
    quotable: row.escrow_available,
    filled: "0",
    received: "0",
    last_sequence: null,
    quote_set: null,
    margin_move: null,
    transactions: txs.map((t) => ({ ...t, at: t.at.toISOString() })),
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
    client_order_id: row.client_order_id,
    quote_identity_id: row.quote_identity_id,
    quote_signer: row.quote_signer,
  }))

/** The session's own order, or 404 (another master's order is indistinguishable from none). */
const ownOrder = (id: string, master: string) =>
  Effect.flatMap(findOrder(id).pipe(Effect.orDie), (order) =>
    Option.isSome(order) && order.value.master === master
      ? Effect.succeed(order.value)
      : apiError(NotFound, "no such order"),
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
    const venueOf = (id: string) => deployment.venues.find((v) => v.id === id)
    return handlers
      .handle("create", ({ payload }) =>
        Effect.gen(function* () {
          const session = yield* requireSession
          const venue = venueOf(payload.venue)
          if (!venue || !venueOf(payload.receive_venue)) return yield* apiError(NotFound, "unknown venue")
          if (payload.venue === payload.receive_venue) {
            return yield* apiError(InvalidRequest, "receive_venue must differ from venue")
          }
          if (BigInt(payload.amount) === 0n) return yield* apiError(InvalidRequest, "amount must be positive")
          const existing = yield* findOrderByClientId(session.master, payload.client_order_id).pipe(Effect.orDie)
          if (Option.isSome(existing)) {
            if (!sameParameters(existing.value, payload)) {
              return yield* apiError(StateConflict, "client_order_id was used with other parameters")
            }
            return {
              order: yield* orderView(existing.value),
              to_sign: existing.value.to_sign as ReadonlyArray<SignItem>,
            }
          }
          yield* requireAccess(session.master)
          const identity = yield* findQuoteIdentity(payload.quote_identity_id).pipe(Effect.orDie)
          if (Option.isNone(identity) || identity.value.master !== session.master || identity.value.revoked_at) {
            return yield* apiError(NotFound, "no live quote identity with this id")
          }
          const owner = payload.owner_address.toLowerCase()
          const client = clients.venue(venue.id)
          if (!client) return yield* apiError(ChainUnavailable, "no node for this venue", true)
          const permit = yield* readPermitContext(client, venue.token, owner).pipe(
            Effect.catchAll((e) => apiError(ChainUnavailable, e.message, true)),
          )
          const now = yield* Clock.currentTimeMillis
          const deadline = BigInt(Math.floor(now / 1000)) + FUND_VALIDITY_SECONDS
          const orderId = `0x${yield* randomHex(32)}` as Hex
          const amount = BigInt(payload.amount)
          const fund = fundOrderTypedData(venue.chain_id, getAddress(venue.escrow), {
            orderId,
            owner: getAddress(owner),
            operator: getAddress(operator),
            quoteSigner: getAddress(identity.value.signer),
            amount,
            deadline,
          })
          const permitData = permitTypedData(permit.domain, {
            owner,
            spender: venue.escrow,
            value: amount,
            nonce: permit.nonce,
            deadline,
          })
          const toSign: ReadonlyArray<SignItem> = [
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
            nowMs: now,
          }).pipe(Effect.orDie)
          if (outcome === "not-linked") {
            return yield* apiError(NotFound, `owner_address is not your linked account on ${venue.id}`)
          }
          // A concurrent create with the same client id won the race: answer as a retry would.
          const row = yield* findOrderByClientId(session.master, payload.client_order_id).pipe(Effect.orDie)
          if (Option.isNone(row)) return yield* Effect.dieMessage("order vanished after insert")
          if (outcome === "exists" && !sameParameters(row.value, payload)) {
            return yield* apiError(StateConflict, "client_order_id was used with other parameters")
          }
          return { order: yield* orderView(row.value), to_sign: row.value.to_sign as ReadonlyArray<SignItem> }
        }),
      )
      .handle("sign", ({ path, payload }) =>
        Effect.gen(function* () {
          const session = yield* requireSession
          const order = yield* ownOrder(path.id, session.master)
          if (order.state !== "preparing") {
            if (order.state === "funding" || order.state === "funded") return yield* orderView(order)
            return yield* apiError(StateConflict, `the order is ${order.state}`)
          }
          yield* checkSignatureShape(payload.fund_order).pipe(Effect.catchAll(shapeFailure))
          yield* checkSignatureShape(payload.permit).pipe(Effect.catchAll(shapeFailure))
          const items = order.to_sign as ReadonlyArray<SignItem>
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
            if (!valid) return yield* apiError(SignatureInvalid, `the ${item.kind} is not signed by the owner`)
          }
          const venue = venueOf(order.venue)!
          const m = fund.typed_data.message
          const sig = payload.permit as Hex
          const calldata = encodeFunctionData({
            abi: settlementEscrowAbi,
            functionName: "fund",
            args: [
              {
                orderId: m.orderId,
                owner: m.owner,
                operator: m.operator,
                quoteSigner: m.quoteSigner,
                amount: BigInt(m.amount),
                deadline: BigInt(m.deadline),
              },
              payload.fund_order as Hex,
              {
                value: BigInt(m.amount),
                deadline: BigInt(m.deadline),
                v: normalizeV(hexToNumber(slice(sig, 64, 65))),
                r: slice(sig, 0, 32),
                s: slice(sig, 32, 64),
              },
            ],
          })
          const now = yield* Clock.currentTimeMillis
          yield* insertRequest({
            idempotencyKey: `fund:${order.id}`,
            venue: venue.id,
            chainId: venue.chain_id,
            signer: operator,
            target: venue.escrow,
            functionName: "fund",
            calldata,
            value: 0n,
            master: session.master,
          }).pipe(Effect.orDie)
          yield* markFunding(order.id, { fund_order: payload.fund_order, permit: payload.permit }, now).pipe(
            Effect.orDie,
          )
          return yield* orderView(Option.getOrThrow(yield* findOrder(order.id).pipe(Effect.orDie)))
        }),
      )
      .handle("list", ({ urlParams }) =>
        Effect.gen(function* () {
          const session = yield* requireSession
          const row = yield* findOrderByClientId(session.master, urlParams.client_order_id).pipe(Effect.orDie)
          return { data: Option.isSome(row) ? [yield* orderView(row.value)] : [] }
        }),
      )
      .handle("get", ({ path }) =>
        Effect.flatMap(requireSession, (s) => Effect.flatMap(ownOrder(path.id, s.master), orderView)),
      )
      .handle("preparation", ({ path }) =>
        Effect.gen(function* () {
          const session = yield* requireSession
          const order = yield* ownOrder(path.id, session.master)
          return { order: yield* orderView(order), to_sign: order.to_sign as ReadonlyArray<SignItem> }
        }),
      )
  }),
)

/** The permit's v as the contract takes it (27/28). */
const normalizeV = (v: number) => (v < 27 ? v + 27 : v)
