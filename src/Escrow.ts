/**
 * Escrow (spec GET /v1/escrow, POST /v1/escrow/close/prepare, POST /v1/escrow/close, POST /v1/closes, GET
 * /v1/escrow/legacy): the orders and zero-id balances a master's linked addresses hold in the venues' escrows (v1
 * and v2, from the chain indexes), their closes, and the scan of retired escrow deployments.
 *
 * A close (by the owner's signed CloseOffer, or by the operator for a managed order) is checked here and handed to
 * its (owner, chain) close queue entity (actors/CloseQueue.ts), which accepts it in one transaction with its
 * journal row and relayer request. An identical repeat (the same signed terms, or the same managed close while
 * pending) is answered from the closes table before any message is sent, so only a new intent becomes a persisted
 * message. src/Escrow/Http.ts authenticates and serves these.
 */

import { SqlClient } from "@effect/sql"
import { Clock, Effect, Either, Layer, Option, Redacted } from "effect"
import { type Address, type Hex, recoverTypedDataAddress } from "viem"
import type { AccessGate } from "./Access.ts"
import { findLinkedAccount, listLinkedAccounts } from "./Accounts/LinkedAccounts.ts"
import { closeOfferOn, closeWithSigCall, operatorCloseCall, orderEscrow, venueEscrows } from "./Chain/OrderEscrow.ts"
import { callEntity } from "./Cluster/EntityCall.ts"
import { AppConfig, type VenueConfig } from "./Config.ts"
import {
  CLOSE_VALIDITY_SECONDS,
  checkDestination,
  closeOffer,
  DEADLINE_SKEW_SECONDS,
  isZeroOrder,
  ZERO_ADDRESS,
} from "./Domain/Close.ts"
import {
  BelowMinimum,
  ChainUnavailable,
  ChallengeExpired,
  ClosePending,
  InvalidRequest,
  NotFound,
  SignatureMalleable,
  StateConflict,
} from "./Domain/Errors.ts"
import { decodeLegacyCursor, encodeLegacyCursor, legacyCursorKey } from "./Domain/LegacyCursor.ts"
import { canonicalSignature } from "./Domain/Signature.ts"
import { shapeFailure } from "./Domain/SignatureFailure.ts"
import { checkSignatureShape } from "./Domain/SiweSignature.ts"
import { toWireTypedData } from "./Domain/WireTypedData.ts"
import { makeEscrowChainReads } from "./Escrow/ChainReads.ts"
import { type CloseIntent, CloseQueue, closeQueueId } from "./Escrow/CloseQueue.ts"
import { closeable } from "./Escrow/CloseRules.ts"
import { type CloseRow, findCloseByDigest, pendingCloseOf } from "./Escrow/Closes.ts"
import { type EscrowOrderRow, escrowOrderOf, escrowOrdersOf } from "./Escrow/Repo.ts"
import { randomHex, randomUuid, SecureRandom } from "./SecureRandom.ts"
import { SqlTest } from "./Sql/TestDatabase.ts"

/** A close's terms as the client gives them; `toMargin` defaults to true, `dex` to 0 (spec). */
export interface CloseTerms {
  readonly venue: string
  readonly orderId: string
  readonly toMargin?: boolean | undefined
  readonly dex?: number | undefined
}

/** The signed CloseOffer's terms (from prepare) and the owner's signature of them. */
export interface SignedClose {
  readonly venue: string
  readonly orderId: string
  readonly toMargin?: boolean | undefined
  readonly dex: number
  readonly nonce: bigint
  /** Unix seconds. */
  readonly deadline: number
  /** 65 bytes r‖s‖v, hex. */
  readonly signature: string
}

export class Escrow extends Effect.Service<Escrow>()("Escrow", {
  effect: Effect.gen(function* () {
    const config = yield* AppConfig
    const { deployment, operator } = config
    const sql = yield* SqlClient.SqlClient
    const random = yield* SecureRandom
    const chain = yield* makeEscrowChainReads(deployment)
    const closeQueues = yield* CloseQueue.client
    const cursorKey = legacyCursorKey(Buffer.from(Redacted.value(deployment.operator_key).slice(2), "hex"))
    const venueIds = deployment.venues.map((v) => v.id)
    const venueOf = (id: string) => deployment.venues.find((v) => v.id === id)
    const isManaged = (orderOperator: string) => orderOperator.toLowerCase() === operator

    /** A repository step on the service's database. */
    const db = <A, E>(effect: Effect.Effect<A, E, SqlClient.SqlClient>) =>
      Effect.provideService(effect, SqlClient.SqlClient, sql)
    const secure = <A>(effect: Effect.Effect<A, never, SecureRandom>) =>
      Effect.provideService(effect, SecureRandom, random)

    /** An escrow order as the API shows it (GET /v1/escrow, the close routes' answer). */
    const view = (row: EscrowOrderRow) => ({
      venue: row.venue,
      order_id: row.order_id,
      owner: row.owner,
      available: row.available,
      operator: row.operator,
      managed: !isZeroOrder(row.order_id) && isManaged(row.operator),
      closing: row.closing,
    })

    /** The escrow order of a close as GET /v1/escrow shows it (also once it holds nothing any more). */
    const currentView = (close: Pick<CloseRow, "venue" | "escrow_version" | "order_id" | "owner" | "state">) =>
      Effect.map(
        db(escrowOrderOf(close.venue, close.order_id, close.owner, close.escrow_version)).pipe(Effect.orDie),
        (row) =>
          Option.isSome(row)
            ? view(row.value)
            : view({
                venue: close.venue,
                escrow_version: close.escrow_version,
                order_id: close.order_id,
                owner: close.owner,
                available: "0",
                locked: "0",
                operator: ZERO_ADDRESS,
                closing: close.state === "pending",
              }),
      )

    /** A configured venue and the master's linked address on it (the only owner the master closes for there). */
    const linkedOwner = (master: string, venueId: string) =>
      Effect.gen(function* () {
        const venue = venueOf(venueId)
        if (venue === undefined) return yield* new NotFound({ message: `unknown venue ${venueId}; see GET /v1/venues` })
        const link = yield* db(findLinkedAccount(master, venueId)).pipe(Effect.orDie)
        if (Option.isNone(link)) {
          return yield* new NotFound({ message: `no account is linked on ${venueId}; POST /v1/accounts first` })
        }
        return { venue, owner: link.value.address.toLowerCase() }
      })

    const destination = (venue: VenueConfig, dex: number, toMargin: boolean) =>
      Either.match(checkDestination(venue.kind, dex, toMargin), {
        onLeft: (why) => Effect.fail(new InvalidRequest({ message: why })),
        onRight: () => Effect.void,
      })

    /**
     * The indexed order (or zero-id balance) of `owner`; NOT_FOUND when it is not the owner's. On escrow `version`
     * when given (a signed close names its escrow by its domain); otherwise on the venue's escrows, v2 first: the
     * first holding something available, else the first that has it at all (an owner's order id, and the zero id,
     * may exist on both).
     */
    const ownedOrder = (venue: VenueConfig, orderId: string, owner: string, version?: 1 | 2) =>
      Effect.gen(function* () {
        const found: Array<EscrowOrderRow> = []
        for (const escrow of venueEscrows(venue)) {
          if (version !== undefined && escrow.version !== version) continue
          const row = yield* db(escrowOrderOf(venue.id, orderId, owner, escrow.version)).pipe(Effect.orDie)
          if (Option.isSome(row) && row.value.owner === owner) found.push(row.value)
        }
        const row = Option.fromNullable(found.find((r) => BigInt(r.available) > 0n) ?? found[0])
        if (Option.isNone(row)) {
          return yield* new NotFound({
            message: isZeroOrder(orderId)
              ? `your linked address on ${venue.id} has no available balance in the escrow`
              : `no order ${orderId.toLowerCase()} of your linked address on ${venue.id} is indexed (finalized blocks)`,
          })
        }
        return row.value
      })

    /** The row's escrow (configured: ownedOrder reads only the venue's configured escrows). */
    const escrowOfRow = (venue: VenueConfig, row: EscrowOrderRow) => {
      const escrow = orderEscrow(venue, row.escrow_version)
      return escrow === undefined
        ? Effect.dieMessage(`venue ${venue.id}: escrow v${row.escrow_version} is not configured`)
        : Effect.succeed(escrow)
    }

    /**
     * Which escrow's domain the owner signed `message` in: the first of the venue's escrows whose CloseOffer
     * recovers to the owner locally. Otherwise (a contract owner, or not the owner's signature) the escrow holding
     * the order (v1 when none does), checked by verifyOwner — on chain for a contract, else SIGNATURE_INVALID.
     */
    const signedOffer = (
      venue: VenueConfig,
      message: ReturnType<typeof closeOffer>["message"],
      signature: Hex,
      owner: string,
    ) =>
      Effect.gen(function* () {
        const offers = venueEscrows(venue).map((escrow) => ({ escrow, ...closeOfferOn(escrow, message) }))
        for (const offer of offers) {
          const recovered = yield* Effect.tryPromise(() =>
            recoverTypedDataAddress({ ...offer.typedData, signature }),
          ).pipe(Effect.orElseSucceed(() => undefined))
          if (recovered?.toLowerCase() === owner) return offer
        }
        const held = yield* ownedOrder(venue, message.orderId, owner).pipe(
          Effect.map((row) => row.escrow_version),
          Effect.orElseSucceed(() => 1 as const),
        )
        const offer = offers.find((o) => o.escrow.version === held) ?? offers[offers.length - 1]!
        yield* chain.verifyOwner(venue, offer.typedData, signature, owner)
        return offer
      })

    /**
     * Hands a new close to its (owner, chain) queue's entity, which accepts it in one transaction with its journal
     * row and relayer request and answers the close, or the refusal (CLOSE_PENDING, CLOSE_LIMIT, STATE_CONFLICT);
     * a queue that does not answer in time is a retryable 503.
     */
    const accept = (intent: CloseIntent) =>
      callEntity(closeQueues(closeQueueId(intent.owner, intent.chainId)).Enqueue(intent), { what: "close" }).pipe(
        Effect.flatMap(currentView),
      )

    /** The master's escrow orders and non-zero balances on every venue (and those with a close pending). */
    const list = Effect.fn("Escrow.list")(function* (master: string) {
      const rows = yield* db(escrowOrdersOf(master, venueIds)).pipe(Effect.orDie)
      return rows.map(view)
    })

    /**
     * The terms of a close of the master's order and the CloseOffer its owner (the linked address) signs, in the
     * domain of the escrow holding it: a random nonce, a deadline CLOSE_VALIDITY_SECONDS ahead.
     */
    const prepareClose = Effect.fn("Escrow.prepareClose")(function* <R>(
      master: string,
      terms: CloseTerms,
      access: AccessGate<R>,
    ) {
      const { venue, owner } = yield* linkedOwner(master, terms.venue)
      const toMargin = terms.toMargin ?? true
      const dex = terms.dex ?? 0
      yield* destination(venue, dex, toMargin)
      yield* access
      const row = yield* ownedOrder(venue, terms.orderId, owner)
      yield* closeable(venue, row, toMargin, isManaged)
      if (row.closing) return yield* new ClosePending({ message: "a close of this order is pending" })
      const escrow = yield* escrowOfRow(venue, row)
      const now = yield* Clock.currentTimeMillis
      const deadline = BigInt(Math.floor(now / 1000) + CLOSE_VALIDITY_SECONDS)
      const nonce = BigInt(`0x${yield* secure(randomHex(32))}`)
      const offer = closeOfferOn(
        escrow,
        closeOffer(venue.chain_id, escrow.address, { orderId: row.order_id, owner, dex, toMargin, nonce, deadline })
          .message,
      )
      return {
        venue: venue.id,
        order_id: row.order_id,
        dex,
        nonce: nonce.toString(),
        deadline: Number(deadline),
        to_sign: [{ kind: "close_offer", signer: owner, typed_data: toWireTypedData(offer.typedData) }],
        to_margin: toMargin,
      }
    })

    /**
     * Relays the owner's signed CloseOffer through the escrow whose domain it is signed in, and answers the escrow
     * order (closing). The same signed terms again answer the same close, whatever happened since.
     */
    const closeBySignature = Effect.fn("Escrow.closeBySignature")(function* <R>(
      master: string,
      close: SignedClose,
      access: AccessGate<R>,
    ) {
      const { venue, owner } = yield* linkedOwner(master, close.venue)
      const toMargin = close.toMargin ?? true
      yield* destination(venue, close.dex, toMargin)
      yield* checkSignatureShape(close.signature).pipe(Effect.catchAll(shapeFailure))
      const signature = canonicalSignature(close.signature as Hex)
      if (Either.isLeft(signature)) return yield* new SignatureMalleable({ message: signature.left.message })
      const deadline = BigInt(close.deadline)
      const { message } = closeOffer(venue.chain_id, venue.escrow, {
        orderId: close.orderId,
        owner,
        dex: close.dex,
        toMargin,
        nonce: close.nonce,
        deadline,
      })
      // The domain the owner signed names the escrow (v1 or v2) the close goes to.
      const offer = yield* signedOffer(venue, message, signature.right, owner)
      // The same terms again (a lost response): the same close, whatever happened since; no message.
      const existing = yield* db(findCloseByDigest(offer.digest)).pipe(Effect.orDie)
      if (Option.isSome(existing)) return yield* currentView(existing.value)
      yield* access
      const nowSeconds = BigInt(Math.floor((yield* Clock.currentTimeMillis) / 1000))
      if (deadline <= nowSeconds) {
        return yield* new ChallengeExpired({ message: "the CloseOffer's deadline has passed; prepare and sign again" })
      }
      if (deadline > nowSeconds + BigInt(CLOSE_VALIDITY_SECONDS + DEADLINE_SKEW_SECONDS)) {
        return yield* new InvalidRequest({ message: `deadline must be at most ${CLOSE_VALIDITY_SECONDS} s ahead` })
      }
      const row = yield* ownedOrder(venue, close.orderId, owner, offer.escrow.version)
      yield* closeable(venue, row, toMargin, isManaged)
      return yield* accept({
        id: yield* secure(randomUuid),
        kind: "signed",
        master,
        venue: venue.id,
        chainId: venue.chain_id,
        escrow: offer.escrow.address,
        escrowVersion: offer.escrow.version,
        orderId: row.order_id,
        owner,
        amount: BigInt(row.available),
        dex: close.dex,
        toMargin,
        nonce: offer.message.nonce,
        deadline,
        digest: offer.digest,
        signature: signature.right,
        relayKey: `close:${offer.digest}`,
        data: closeWithSigCall(offer.escrow, offer.message, signature.right),
      })
    })

    /**
     * Closes a managed order (operated by this service) of the master's linked address through the escrow's
     * operatorClose; the funds go only to the owner. The same managed close again while it is pending answers it.
     */
    const managedClose = Effect.fn("Escrow.managedClose")(function* <R>(
      master: string,
      terms: CloseTerms,
      access: AccessGate<R>,
    ) {
      const { venue, owner } = yield* linkedOwner(master, terms.venue)
      const toMargin = terms.toMargin ?? true
      const dex = terms.dex ?? 0
      yield* destination(venue, dex, toMargin)
      if (isZeroOrder(terms.orderId)) {
        return yield* new InvalidRequest({
          message: "the zero-id balance has no operator: close it by signature (POST /v1/escrow/close/prepare)",
        })
      }
      const row = yield* ownedOrder(venue, terms.orderId, owner)
      if (!isManaged(row.operator)) {
        return yield* new StateConflict({
          message: "this service does not operate the order: close it by signature (POST /v1/escrow/close/prepare)",
        })
      }
      const escrow = yield* escrowOfRow(venue, row)
      const pending = yield* db(pendingCloseOf(venue.id, row.order_id, owner, escrow.version)).pipe(Effect.orDie)
      if (Option.isSome(pending)) {
        const p = pending.value
        // The same managed close again (a lost response): the same close; no message.
        if (p.kind === "managed" && Number(p.dex) === dex && p.to_margin === toMargin) return yield* currentView(p)
        return yield* new ClosePending({ message: `close ${p.id} of this order is pending` })
      }
      yield* access
      // operatorClose reverts with nothing available on both versions (on v2 only the owner's signed close is
      // sticky and accepted at 0).
      if (BigInt(row.available) === 0n) {
        return yield* new BelowMinimum({
          message:
            escrow.version === 2
              ? "the order's available amount is 0: nothing to close (to stop the order, close it by signature)"
              : "the order's available amount is 0: nothing to close",
        })
      }
      const id = yield* secure(randomUuid)
      return yield* accept({
        id,
        kind: "managed",
        master,
        venue: venue.id,
        chainId: venue.chain_id,
        escrow: escrow.address,
        escrowVersion: escrow.version,
        orderId: row.order_id,
        owner,
        amount: BigInt(row.available),
        dex,
        toMargin,
        nonce: null,
        deadline: null,
        digest: null,
        signature: null,
        relayKey: `close:managed:${id}`,
        data: operatorCloseCall(escrow, owner as Address, row.order_id as Hex, dex, toMargin),
      })
    })

    /**
     * One page of the scan of the retired escrow deployments for offers of the master and its linked addresses,
     * from the opaque cursor (the start when undefined). A node failure is CHAIN_UNAVAILABLE, never an empty page.
     */
    const legacyPage = Effect.fn("Escrow.legacyPage")(function* (master: string, cursor: string | undefined) {
      let position: Parameters<typeof chain.legacyPage>[1]
      if (cursor !== undefined) {
        const decoded = decodeLegacyCursor(cursorKey, master, cursor)
        if (Either.isLeft(decoded)) return yield* new InvalidRequest({ message: decoded.left })
        position = decoded.right
      }
      const linked = yield* db(listLinkedAccounts(master)).pipe(Effect.orDie)
      const owners = [master, ...linked.map((a) => a.address.toLowerCase())]
      const page = yield* chain.legacyPage(owners, position, BigInt(deployment.limits.legacy_page_blocks)).pipe(
        Effect.catchTags({
          RpcError: (e) =>
            Effect.zipRight(
              Effect.logWarning("legacy scan: node failure", { method: e.method, error: e.message }),
              Effect.fail(
                new ChainUnavailable({
                  message: "a chain node failed during the legacy scan; retry the same cursor",
                  retryable: true,
                }),
              ),
            ),
          UnknownDeployment: () =>
            Effect.fail(
              new InvalidRequest({ message: "cursor names a deployment this service does not scan (any more)" }),
            ),
        }),
      )
      return { data: page.data, next_cursor: encodeLegacyCursor(cursorKey, master, page.next), has_more: page.hasMore }
    })

    return { list, prepareClose, closeBySignature, managedClose, legacyPage } as const
  }),
}) {
  /**
   * The service on a throw-away database (SqlTest). The test gives AppConfig, SecureRandom, ChainClients and a
   * cluster runner with the CloseQueue entity registered (which needs the Relayer).
   */
  static readonly Test = Escrow.Default.pipe(Layer.provideMerge(SqlTest))
}
