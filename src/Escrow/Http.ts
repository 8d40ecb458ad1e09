import { HttpApiBuilder } from "@effect/platform"
import { RpcClient } from "@effect/rpc"
import { Clock, Effect, Either, FiberRef, Option, Redacted } from "effect"
import { type Address, type Hex, recoverTypedDataAddress } from "viem"
import { findLinkedAccount, listLinkedAccounts } from "../Accounts/LinkedAccounts.ts"
import { ChainClients } from "../Chain/ChainClients.ts"
import { legacyDeployments, scanLegacyPage } from "../Chain/LegacyScan.ts"
import { closeOfferOn, closeWithSigCall, operatorCloseCall, orderEscrow, venueEscrows } from "../Chain/OrderEscrow.ts"
import { callEntity } from "../Cluster/EntityCall.ts"
import { REQUEST_ID_HEADER } from "../Cluster/Keyed.ts"
import { AppConfig, type VenueConfig } from "../Config.ts"
import {
  CLOSE_MINIMUM,
  CLOSE_VALIDITY_SECONDS,
  checkDestination,
  closeOffer,
  DEADLINE_SKEW_SECONDS,
  isZeroOrder,
  ZERO_ADDRESS,
} from "../Domain/Close.ts"
import {
  BelowMinimum,
  ChainUnavailable,
  ChallengeExpired,
  ClosePending,
  InvalidRequest,
  NotFound,
  OrderManaged,
  SignatureInvalid,
  SignatureMalleable,
  StateConflict,
} from "../Domain/Errors.ts"
import { decodeLegacyCursor, encodeLegacyCursor, legacyCursorKey } from "../Domain/LegacyCursor.ts"
import { CurrentRequestId } from "../Domain/RequestId.ts"
import { canonicalSignature } from "../Domain/Signature.ts"
import { shapeFailure } from "../Domain/SignatureFailure.ts"
import { checkSignatureShape } from "../Domain/Siwe.ts"
import { toWireTypedData } from "../Domain/WireTypedData.ts"
import { Api } from "../Http/Api.ts"
import { requireAccess, requireScope, requireSession } from "../Http/Guards.ts"
import { randomHex, randomUuid } from "../SecureRandom.ts"
import { snapshotCursor } from "../Stream/SnapshotCursor.ts"
import { type CloseIntent, CloseQueue, closeQueueId } from "./CloseQueue.ts"
import { type CloseRow, findCloseByDigest, pendingCloseOf } from "./Closes.ts"
import { type EscrowOrderRow, escrowOrderOf, escrowOrdersOf } from "./Repo.ts"

export const EscrowHandlers = HttpApiBuilder.group(Api, "escrow", (handlers) =>
  Effect.gen(function* () {
    const { deployment, operator } = yield* AppConfig
    const clients = yield* ChainClients
    const closeQueues = yield* CloseQueue.client
    const legacy = legacyDeployments(deployment)
    const cursorKey = legacyCursorKey(Buffer.from(Redacted.value(deployment.operator_key).slice(2), "hex"))
    const venueOf = (id: string) => deployment.venues.find((v) => v.id === id)
    const venueIds = deployment.venues.map((v) => v.id)
    const isManaged = (orderOperator: string) => orderOperator.toLowerCase() === operator

    const view = (row: EscrowOrderRow) => ({
      venue: row.venue,
      order_id: row.order_id,
      owner: row.owner,
      available: row.available,
      operator: row.operator,
      managed: !isZeroOrder(row.order_id) && isManaged(row.operator),
      closing: row.closing,
    })

    /** The escrow order as GET /v1/escrow shows it (also once it holds nothing any more). */
    const currentView = (close: Pick<CloseRow, "venue" | "escrow_version" | "order_id" | "owner" | "state">) =>
      Effect.map(
        escrowOrderOf(close.venue, close.order_id, close.owner, close.escrow_version).pipe(Effect.orDie),
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
        const link = yield* findLinkedAccount(master, venueId).pipe(Effect.orDie)
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
          const row = yield* escrowOrderOf(venue.id, orderId, owner, escrow.version).pipe(Effect.orDie)
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

    /**
     * The close rules on the order's amounts (spec: close prepare rule 4), managed orders aside.
     * A v2 order (not the zero id) is always closeable by its owner's signature, managed or not and whatever it
     * holds: v2's close is sticky — `closeWithSig` records closeRequested (no lock can be added any more, and each
     * lock that ends later pays the owner) even with nothing available, and succeeds on chain. It is the owner's
     * only way to stop a v2 order (v2's operatorClose releases what is available but sets nothing), so the API
     * never refuses it as nothing-to-close.
     */
    const closeable = (venue: VenueConfig, row: EscrowOrderRow, toMargin: boolean) =>
      Effect.gen(function* () {
        if (row.escrow_version === 2 && !isZeroOrder(row.order_id)) return
        const available = BigInt(row.available)
        if (isZeroOrder(row.order_id)) {
          if (available === 0n)
            return yield* new BelowMinimum({ message: "the available balance is 0: nothing to close" })
          const minimum = BigInt(venue.release_minimum)
          if (toMargin && available < minimum) {
            return yield* new BelowMinimum({
              message:
                `a release of the available balance into margin needs at least ${minimum} base units on ${venue.id}; ` +
                "close it to the wallet (to_margin false) instead",
            })
          }
          return
        }
        if (isManaged(row.operator)) {
          return yield* new OrderManaged({ message: "this service operates the order: close it with POST /v1/closes" })
        }
        if (available < CLOSE_MINIMUM) {
          return yield* new BelowMinimum({
            message: `the order holds ${available} base units available; a close needs at least ${CLOSE_MINIMUM}`,
          })
        }
      })

    /**
     * Hands a close to its (owner, chain) queue's entity (actors/CloseQueue.ts), which accepts it in one
     * transaction with its journal row and relayer request, and answers the escrow order, or the refusal
     * (CLOSE_PENDING, CLOSE_LIMIT, STATE_CONFLICT); a queue that does not answer in time is a retryable 503.
     */
    const accept = (intent: CloseIntent) =>
      Effect.flatMap(FiberRef.get(CurrentRequestId), (requestId) =>
        callEntity(
          closeQueues(closeQueueId(intent.owner, intent.chainId))
            .Enqueue(intent)
            .pipe(RpcClient.withHeaders({ [REQUEST_ID_HEADER]: requestId })),
          { what: "close" },
        ),
      ).pipe(Effect.flatMap(currentView))

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
        yield* verifyOwner(venue, offer.typedData, signature, owner)
        return offer
      })

    /**
     * The signature is the owner's: recovered locally (EOA); otherwise, when the owner is a contract, by the
     * chain (ERC-1271), where a node failure is CHAIN_UNAVAILABLE, never "valid".
     */
    const verifyOwner = (
      venue: VenueConfig,
      typedData: ReturnType<typeof closeOfferOn>["typedData"],
      signature: Hex,
      owner: string,
    ) =>
      Effect.gen(function* () {
        const recovered = yield* Effect.tryPromise(() => recoverTypedDataAddress({ ...typedData, signature })).pipe(
          Effect.orElseSucceed(() => undefined),
        )
        if (recovered?.toLowerCase() === owner) return
        const client = clients.venue(venue.id)
        const unavailable = () =>
          Effect.fail(
            new ChainUnavailable({ message: "the chain node failed checking a contract signature", retryable: true }),
          )
        if (client === undefined)
          return yield* new SignatureInvalid({ message: "the CloseOffer is not signed by the owner" })
        const code = yield* Effect.tryPromise(() => client.getCode({ address: owner as Address })).pipe(
          Effect.catchAll(unavailable),
        )
        if (code === undefined || code === "0x") {
          return yield* new SignatureInvalid({ message: "the CloseOffer is not signed by the order's owner" })
        }
        const valid = yield* Effect.tryPromise(() =>
          client.verifyTypedData({ ...typedData, address: owner as Address, signature }),
        ).pipe(Effect.catchAll(unavailable))
        if (!valid) return yield* new SignatureInvalid({ message: "the CloseOffer is not signed by the order's owner" })
      })

    return handlers
      .handle("list", () =>
        Effect.gen(function* () {
          const session = yield* requireSession
          yield* snapshotCursor
          const rows = yield* escrowOrdersOf(session.master, venueIds).pipe(Effect.orDie)
          return { data: rows.map(view) }
        }),
      )
      .handle("legacy", ({ urlParams }) =>
        Effect.gen(function* () {
          const principal = yield* requireScope("read")
          const master = principal.master
          let position: Parameters<typeof scanLegacyPage>[3]
          if (urlParams.cursor !== undefined) {
            const decoded = decodeLegacyCursor(cursorKey, master, urlParams.cursor)
            if (Either.isLeft(decoded)) return yield* new InvalidRequest({ message: decoded.left })
            position = decoded.right
          }
          const linked = yield* listLinkedAccounts(master).pipe(Effect.orDie)
          const owners = [master, ...linked.map((a) => a.address.toLowerCase())]
          const page = yield* scanLegacyPage(
            legacy,
            // The watcher's client: no viem-level retries (retryRpc retries briefly; a dead node fails fast).
            (id) => clients.chain(id),
            owners,
            position,
            BigInt(deployment.limits.legacy_page_blocks),
          ).pipe(
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
          return {
            data: page.data,
            next_cursor: encodeLegacyCursor(cursorKey, master, page.next),
            has_more: page.hasMore,
          }
        }),
      )
      .handle("prepare", ({ payload }) =>
        Effect.gen(function* () {
          const session = yield* requireSession
          const { venue, owner } = yield* linkedOwner(session.master, payload.venue)
          const toMargin = payload.to_margin ?? true
          const dex = payload.dex ?? 0
          yield* destination(venue, dex, toMargin)
          yield* requireAccess(session.master)
          const row = yield* ownedOrder(venue, payload.order_id, owner)
          yield* closeable(venue, row, toMargin)
          if (row.closing) return yield* new ClosePending({ message: "a close of this order is pending" })
          const escrow = yield* escrowOfRow(venue, row)
          const now = yield* Clock.currentTimeMillis
          const deadline = BigInt(Math.floor(now / 1000) + CLOSE_VALIDITY_SECONDS)
          const nonce = BigInt(`0x${yield* randomHex(32)}`)
          // The CloseOffer in the domain of the escrow holding the order (v1 or v2).
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
        }),
      )
      .handle("close", ({ payload }) =>
        Effect.gen(function* () {
          const session = yield* requireSession
          const { venue, owner } = yield* linkedOwner(session.master, payload.venue)
          const toMargin = payload.to_margin ?? true
          yield* destination(venue, payload.dex, toMargin)
          yield* checkSignatureShape(payload.signature).pipe(Effect.catchAll(shapeFailure))
          const signature = canonicalSignature(payload.signature as Hex)
          if (Either.isLeft(signature)) return yield* new SignatureMalleable({ message: signature.left.message })
          const deadline = BigInt(payload.deadline)
          const { message } = closeOffer(venue.chain_id, venue.escrow, {
            orderId: payload.order_id,
            owner,
            dex: payload.dex,
            toMargin,
            nonce: BigInt(payload.nonce),
            deadline,
          })
          // The domain the owner signed names the escrow (v1 or v2) the close goes to.
          const offer = yield* signedOffer(venue, message, signature.right, owner)
          // The same terms again (a lost response): the same close, whatever happened since.
          const existing = yield* findCloseByDigest(offer.digest).pipe(Effect.orDie)
          if (Option.isSome(existing)) return yield* currentView(existing.value)
          yield* requireAccess(session.master)
          const nowSeconds = BigInt(Math.floor((yield* Clock.currentTimeMillis) / 1000))
          if (deadline <= nowSeconds) {
            return yield* new ChallengeExpired({
              message: "the CloseOffer's deadline has passed; prepare and sign again",
            })
          }
          if (deadline > nowSeconds + BigInt(CLOSE_VALIDITY_SECONDS + DEADLINE_SKEW_SECONDS)) {
            return yield* new InvalidRequest({ message: `deadline must be at most ${CLOSE_VALIDITY_SECONDS} s ahead` })
          }
          const row = yield* ownedOrder(venue, payload.order_id, owner, offer.escrow.version)
          yield* closeable(venue, row, toMargin)
          const relayKey = `close:${offer.digest}`
          const data = closeWithSigCall(offer.escrow, offer.message, signature.right)
          return yield* accept({
            id: yield* randomUuid,
            kind: "signed",
            master: session.master,
            venue: venue.id,
            chainId: venue.chain_id,
            escrow: offer.escrow.address,
            escrowVersion: offer.escrow.version,
            orderId: row.order_id,
            owner,
            amount: BigInt(row.available),
            dex: payload.dex,
            toMargin,
            nonce: offer.message.nonce,
            deadline,
            digest: offer.digest,
            signature: signature.right,
            relayKey,
            data,
          })
        }),
      )
      .handle("managedClose", ({ payload }) =>
        Effect.gen(function* () {
          const session = yield* requireSession
          const { venue, owner } = yield* linkedOwner(session.master, payload.venue)
          const toMargin = payload.to_margin ?? true
          const dex = payload.dex ?? 0
          yield* destination(venue, dex, toMargin)
          if (isZeroOrder(payload.order_id)) {
            return yield* new InvalidRequest({
              message: "the zero-id balance has no operator: close it by signature (POST /v1/escrow/close/prepare)",
            })
          }
          const row = yield* ownedOrder(venue, payload.order_id, owner)
          if (!isManaged(row.operator)) {
            return yield* new StateConflict({
              message: "this service does not operate the order: close it by signature (POST /v1/escrow/close/prepare)",
            })
          }
          const escrow = yield* escrowOfRow(venue, row)
          const pending = yield* pendingCloseOf(venue.id, row.order_id, owner, escrow.version).pipe(Effect.orDie)
          if (Option.isSome(pending)) {
            const p = pending.value
            // The same managed close again (a lost response): the same close.
            if (p.kind === "managed" && Number(p.dex) === dex && p.to_margin === toMargin) return yield* currentView(p)
            return yield* new ClosePending({ message: `close ${p.id} of this order is pending` })
          }
          yield* requireAccess(session.master)
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
          const id = yield* randomUuid
          const relayKey = `close:managed:${id}`
          const data = operatorCloseCall(escrow, owner as Address, row.order_id as Hex, dex, toMargin)
          return yield* accept({
            id,
            kind: "managed",
            master: session.master,
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
            relayKey,
            data,
          })
        }),
      )
  }),
)
