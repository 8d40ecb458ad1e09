/**
 * PUT and DELETE /v1/orders/{id}/quotes: a maker publishes (or withdraws) the signed quote set of one order.
 *
 * A v1 order's set is the v1 QuoteSet (the venue's SettlementEscrow domain). A v2 order's set (orders.escrow_version
 * = 2, DESIGN §6 "Fills", §10.1) also signs its owner, `issuedAt`, the Merkle root and count of the maker's hashlocks,
 * and per quote the taker venue's v2 escrow; the maker publishes the hashlocks themselves (never a secret) so the
 * service can give each fill an index and its proof. What is checked here, each refusal changing nothing:
 * - the v2 fields are all present on a v2 order and none on a v1 order (400);
 * - the root of `hashlocks` (src/Domain/Hashlocks.ts) is `hashlock_root` and their number `hashlock_count`, no
 *   hashlock twice (a hashlock locks once, ever: a repeated one is an index that can never lock) (400);
 * - `issued_at` not ahead of our clock by more than ISSUED_AT_SKEW_SECONDS, before `valid_until`, and
 *   `valid_until - issued_at` ≤ settlement.max_quote_life_seconds (the escrow's MAX_QUOTE_LIFE) (400);
 * - each quote's `escrow` is its venue's configured v2 escrow (lock requires Fill.takerEscrow == quote.escrow) (400);
 * - the v2 QuoteSet signature by the order's quote signer in the order's v2 escrow domain (422).
 * The 64 KiB body limit bounds `hashlocks` to about 900 entries in practice (the maker bot caps them at 800) (MAX_HASHLOCK_COUNT is the schema's cap).
 */
import { Clock, Effect, Option } from "effect"
import { type Address, getAddress, type Hex, verifyTypedData } from "viem"
import type { DeploymentConfig } from "../Config.ts"
import {
  ChainUnavailable,
  Forbidden,
  InsufficientBalance,
  InvalidRequest,
  LeaseExpired,
  NotFound,
  QuoteStale,
  SignatureInvalid,
} from "../Domain/Errors.ts"
import { quoteSetTypedData } from "../Domain/EscrowTypedData.ts"
import { quoteSetV2TypedData } from "../Domain/EscrowTypedDataV2.ts"
import { hashlockTree } from "../Domain/Hashlocks.ts"
import { CurrentPrincipal } from "../Domain/Principal.ts"
import { shapeFailure } from "../Domain/SignatureFailure.ts"
import { checkSignatureShape } from "../Domain/Siwe.ts"
import { quoteFromWire, quoteV2FromWire } from "../Domain/WireQuote.ts"
import { randomUuid } from "../SecureRandom.ts"
import type { QuoteSetRequest } from "./Api.ts"
import { cancelQuoteSets, publishQuoteSet, type QuoteSetRow } from "./QuoteSets.ts"
import { findOrder, type OrderRow } from "./Repo.ts"

/** How far a maker's clock may run ahead of ours when it stamps `issued_at` (seconds). */
export const ISSUED_AT_SKEW_SECONDS = 30

/** The order view's `quote_set`; a v2 set adds issued_at and its hashlock root and count (not the hashlocks). */
export const quoteSetView = (q: QuoteSetRow) => ({
  sequence: Number(q.sequence),
  expires_at: q.valid_until.toISOString(),
  quotes: q.quotes,
  signature: q.signature,
  created_at: q.created_at.toISOString(),
  valid_until: q.valid_until.toISOString(),
  quote_size: q.quote_size,
  identity_generation: q.identity_generation,
  active: q.active,
  ...(q.hashlock_root === null
    ? {}
    : { issued_at: Number(q.issued_at), hashlock_root: q.hashlock_root, hashlock_count: q.hashlock_count! }),
})

/**
 * The order as a quoting principal may see it: the master's session, or a `quote` credential bound
 * to the order's own identity (never another identity's order).
 */
const quotableOrder = (id: string) =>
  Effect.gen(function* () {
    const principal = yield* CurrentPrincipal
    const order = yield* findOrder(id).pipe(Effect.orDie)
    if (Option.isNone(order)) return yield* new NotFound({ message: "no such order" })
    if (principal._tag === "Session") {
      return order.value.master === principal.master ? order.value : yield* new NotFound({ message: "no such order" })
    }
    if (order.value.quote_identity_id !== principal.quoteIdentityId)
      return yield* new NotFound({ message: "no such order" })
    if (!principal.scopes.includes("quote"))
      return yield* new Forbidden({ message: "this credential lacks the quote scope" })
    return order.value
  })

const verifies = (typed: Parameters<typeof verifyTypedData>[0]) =>
  Effect.promise(() => verifyTypedData(typed).catch(() => false))

type Payload = typeof QuoteSetRequest.Type

/** The v2 part of a set once checked: what is signed and stored beyond a v1 set. */
interface CheckedV2 {
  readonly issuedAt: bigint
  readonly hashlockRoot: Hex
  readonly hashlockCount: number
  readonly hashlocks: ReadonlyArray<Hex>
}

/** The v2 fields' own checks (not the signature): present, consistent, within the quote life. */
const checkV2Fields = (payload: Payload, nowSeconds: number, maxQuoteLife: number) =>
  Effect.gen(function* () {
    const { issued_at, hashlock_root, hashlock_count, hashlocks } = payload
    if (
      issued_at === undefined ||
      hashlock_root === undefined ||
      hashlock_count === undefined ||
      hashlocks === undefined ||
      payload.quotes.some((q) => q.escrow === undefined)
    ) {
      return yield* new InvalidRequest({
        message:
          "this order is on the v2 escrow: issued_at, hashlock_root, hashlock_count, hashlocks and each quote's escrow are required",
      })
    }
    if (issued_at > nowSeconds + ISSUED_AT_SKEW_SECONDS) {
      return yield* new InvalidRequest({ message: `issued_at is more than ${ISSUED_AT_SKEW_SECONDS} s in the future` })
    }
    if (issued_at >= payload.valid_until || payload.valid_until - issued_at > maxQuoteLife) {
      return yield* new InvalidRequest({
        message: `valid_until must be after issued_at and at most ${maxQuoteLife} s (max_quote_life_seconds) after it`,
      })
    }
    if (hashlocks.length !== hashlock_count) {
      return yield* new InvalidRequest({
        message: `hashlocks has ${hashlocks.length} entries, hashlock_count says ${hashlock_count}`,
      })
    }
    const lower = hashlocks.map((h) => h.toLowerCase() as Hex)
    if (new Set(lower).size !== lower.length) return yield* new InvalidRequest({ message: "a hashlock appears twice" })
    if (hashlockTree(lower).root !== hashlock_root.toLowerCase()) {
      return yield* new InvalidRequest({ message: "hashlock_root is not the Merkle root of hashlocks" })
    }
    return {
      issuedAt: BigInt(issued_at),
      hashlockRoot: hashlock_root.toLowerCase() as Hex,
      hashlockCount: hashlock_count,
      hashlocks: lower,
    } satisfies CheckedV2
  })

/**
 * The two handlers, given the deployment and the order view (OrdersHandlers renders the order the same way for
 * every route of the group).
 */
export const quotesHandlers = <V, R>(
  deployment: DeploymentConfig,
  orderView: (row: OrderRow) => Effect.Effect<V, never, R>,
) => {
  const venueOf = (id: string) => deployment.venues.find((v) => v.id === id)

  const publish = ({ path, payload }: { readonly path: { readonly id: string }; readonly payload: Payload }) =>
    Effect.gen(function* () {
      const order = yield* quotableOrder(path.id)
      const venue = venueOf(order.venue)!
      const v2 = order.escrow_version === 2
      const now = yield* Clock.currentTimeMillis
      const nowSeconds = Math.floor(now / 1000)
      const maxValidity = deployment.limits.quote_validity_seconds_max
      // A set must outlive the lock cutoff, or no fill could ever be locked against it.
      const cutoff = deployment.settlement.lock_cutoff_seconds
      if (payload.valid_until <= nowSeconds + cutoff || payload.valid_until > nowSeconds + maxValidity) {
        return yield* new InvalidRequest({
          message: `valid_until must be more than ${cutoff} s and at most ${maxValidity} s ahead`,
        })
      }
      if (
        !v2 &&
        (payload.issued_at !== undefined ||
          payload.hashlock_root !== undefined ||
          payload.hashlock_count !== undefined ||
          payload.hashlocks !== undefined ||
          payload.quotes.some((q) => q.escrow !== undefined))
      ) {
        return yield* new InvalidRequest({
          message:
            "this order is on the v1 escrow: issued_at, hashlock_root, hashlock_count, hashlocks and quote escrow are for v2 orders",
        })
      }
      for (const q of payload.quotes) {
        const target = venueOf(q.venue)
        if (!target || target.chain_id !== q.chain_id || target.token.toLowerCase() !== q.token.toLowerCase()) {
          return yield* new InvalidRequest({ message: `quote for ${q.venue}: unknown venue, chain id or token` })
        }
        if (q.venue === order.venue) return yield* new InvalidRequest({ message: "a quote must pay on another venue" })
        if (BigInt(q.supply) === 0n || BigInt(q.receive) === 0n || BigInt(q.min_fill) > BigInt(q.supply)) {
          return yield* new InvalidRequest({
            message: "supply and receive must be positive and min_fill at most supply",
          })
        }
        if (
          v2 &&
          q.escrow !== undefined &&
          (target.escrow_v2 === undefined || target.escrow_v2.address.toLowerCase() !== q.escrow.toLowerCase())
        ) {
          return yield* new InvalidRequest({ message: `quote for ${q.venue}: escrow is not that venue's v2 escrow` })
        }
      }
      const checked = v2
        ? yield* checkV2Fields(payload, nowSeconds, deployment.settlement.max_quote_life_seconds)
        : undefined
      const quoteSize = BigInt(payload.quote_size)
      if (quoteSize === 0n || quoteSize > BigInt(order.escrow_available)) {
        return yield* new InsufficientBalance({
          message: `quote_size exceeds the order's quotable ${order.escrow_available}`,
        })
      }
      yield* checkSignatureShape(payload.signature).pipe(Effect.catchAll(shapeFailure))
      const generation = BigInt(payload.identity_generation)
      const sequence = BigInt(payload.sequence)
      const validUntil = BigInt(payload.valid_until)
      const signed = { address: order.quote_signer as Address, signature: payload.signature as Hex }
      let valid: boolean
      if (checked === undefined) {
        const typed = quoteSetTypedData(venue.chain_id, getAddress(venue.escrow), {
          orderId: order.id as Hex,
          sequence,
          generation,
          quoteSize,
          validUntil,
          quotes: payload.quotes.map(quoteFromWire),
        })
        valid = yield* verifies({ ...typed, ...signed })
      } else {
        // The order's escrow: its venue's v2 escrow (a config that dropped it while the order exists: unavailable).
        const escrow = venue.escrow_v2
        if (escrow === undefined)
          return yield* new ChainUnavailable({ message: "the order's v2 escrow is not configured", retryable: true })
        const typed = quoteSetV2TypedData(venue.chain_id, getAddress(escrow.address), {
          owner: getAddress(order.owner_address),
          orderId: order.id as Hex,
          sequence,
          generation,
          quoteSize,
          issuedAt: checked.issuedAt,
          validUntil,
          hashlockRoot: checked.hashlockRoot,
          hashlockCount: checked.hashlockCount,
          quotes: payload.quotes.map((q) => quoteV2FromWire({ ...q, escrow: q.escrow! })),
        })
        valid = yield* verifies({ ...typed, ...signed })
      }
      if (!valid)
        return yield* new SignatureInvalid({ message: "the quote set is not signed by the order's quote signer" })
      const outcome = yield* publishQuoteSet({
        id: yield* randomUuid,
        orderId: order.id,
        master: order.master,
        identityId: order.quote_identity_id,
        generation,
        sequence,
        validUntilSeconds: validUntil,
        quoteSize,
        quotes: payload.quotes.map((q) => ({
          ...q,
          token: q.token.toLowerCase(),
          recipient: q.recipient.toLowerCase(),
          ...(q.escrow === undefined ? {} : { escrow: q.escrow.toLowerCase() }),
        })),
        signature: payload.signature,
        ...(checked === undefined ? {} : { v2: checked }),
      }).pipe(Effect.orDie)
      if (outcome._tag === "Stale") return yield* new QuoteStale({ message: `sequence must exceed ${outcome.last}` })
      if (outcome._tag !== "Published") {
        return yield* new LeaseExpired({
          message: "the identity's lease is not live at this generation; renew and re-sign",
        })
      }
      return yield* orderView(order)
    })

  const cancel = ({ path }: { readonly path: { readonly id: string } }) =>
    Effect.gen(function* () {
      const order = yield* quotableOrder(path.id)
      yield* cancelQuoteSets(order.id, order.master, order.quote_identity_id).pipe(Effect.orDie)
      return yield* orderView(order)
    })

  return { publish, cancel }
}
