/**
 * What a maker's quote set must satisfy before it is stored (PUT /v1/orders/{id}/quotes; the Orders service's
 * publishQuotes). Nothing here writes: a refusal changes nothing.
 *
 * A v1 order's set is the v1 QuoteSet (the venue's SettlementEscrow domain). A v2 order's set (orders.escrow_version
 * = 2, DESIGN §6 "Fills", §10.1) also signs its owner, `issuedAt`, the Merkle root and count of the maker's hashlocks,
 * and per quote the taker venue's v2 escrow; the maker publishes the hashlocks themselves (never a secret) so the
 * service can give each fill an index and its proof. Checked, in this order:
 * - `valid_until` more than the lock cutoff and at most quote_validity_seconds_max ahead (400);
 * - the v2 fields are all present on a v2 order and none on a v1 order (400);
 * - each quote names a configured venue, chain and token, pays on another venue, has positive amounts and
 *   min_fill ≤ supply, and (v2) its `escrow` is that venue's configured v2 escrow (lock requires
 *   Fill.takerEscrow == quote.escrow) (400);
 * - the root of `hashlocks` (src/Domain/Hashlocks.ts) is `hashlock_root` and their number `hashlock_count`, no
 *   hashlock twice (a hashlock locks once, ever: a repeated one is an index that can never lock) (400);
 * - `issued_at` not ahead of our clock by more than ISSUED_AT_SKEW_SECONDS, before `valid_until`, and
 *   `valid_until - issued_at` ≤ settlement.max_quote_life_seconds (the escrow's MAX_QUOTE_LIFE) (400);
 * - `quote_size` positive and within the order's quotable (422);
 * - the signature's shape (422), then the QuoteSet signature by the order's quote signer in the order's escrow
 *   domain (422).
 * The 64 KiB body limit bounds `hashlocks` to about 900 entries in practice (the maker bot caps them at 800)
 * (MAX_HASHLOCK_COUNT is the schema's cap).
 */
import { Effect } from "effect"
import { type Address, getAddress, type Hex, verifyTypedData } from "viem"
import type { DeploymentConfig } from "../Config.ts"
import { ChainUnavailable, InsufficientBalance, InvalidRequest, SignatureInvalid } from "../Domain/Errors.ts"
import { quoteSetTypedData } from "../Domain/EscrowTypedData.ts"
import { quoteSetV2TypedData } from "../Domain/EscrowTypedDataV2.ts"
import { hashlockTree } from "../Domain/Hashlocks.ts"
import { shapeFailure } from "../Domain/SignatureFailure.ts"
import { checkSignatureShape } from "../Domain/SiweSignature.ts"
import { quoteFromWire, quoteV2FromWire } from "../Domain/WireQuote.ts"
import type { NewQuoteSet } from "./QuoteSets.ts"
import type { OrderRow } from "./Repo.ts"

/** How far a maker's clock may run ahead of ours when it stamps `issued_at` (seconds). */
export const ISSUED_AT_SKEW_SECONDS = 30

/** A quote set as the maker sends it (the QuoteSetRequest body, decoded). */
export interface QuoteSetInput {
  readonly sequence: number
  readonly valid_until: number
  readonly quote_size: string
  readonly identity_generation: string
  readonly quotes: ReadonlyArray<{
    readonly venue: string
    readonly chain_id: number
    readonly token: string
    readonly recipient: string
    readonly supply: string
    readonly receive: string
    readonly min_fill: string
    /** v2 orders only, required there: the taker venue's SettlementEscrowV2. */
    readonly escrow?: string | undefined
  }>
  readonly signature: string
  readonly issued_at?: number | undefined
  readonly hashlock_root?: string | undefined
  readonly hashlock_count?: number | undefined
  readonly hashlocks?: ReadonlyArray<string> | undefined
}

/** The v2 part of a set once checked: what is signed and stored beyond a v1 set. */
interface CheckedV2 {
  readonly issuedAt: bigint
  readonly hashlockRoot: Hex
  readonly hashlockCount: number
  readonly hashlocks: ReadonlyArray<Hex>
}

const verifies = (typed: Parameters<typeof verifyTypedData>[0]) =>
  Effect.promise(() => verifyTypedData(typed).catch(() => false))

/** The v2 fields' own checks (not the signature): present, consistent, within the quote life. */
const checkV2Fields = (input: QuoteSetInput, nowSeconds: number, maxQuoteLife: number) =>
  Effect.gen(function* () {
    const { issued_at, hashlock_root, hashlock_count, hashlocks } = input
    if (
      issued_at === undefined ||
      hashlock_root === undefined ||
      hashlock_count === undefined ||
      hashlocks === undefined ||
      input.quotes.some((q) => q.escrow === undefined)
    ) {
      return yield* new InvalidRequest({
        message:
          "this order is on the v2 escrow: issued_at, hashlock_root, hashlock_count, hashlocks and each quote's escrow are required",
      })
    }
    if (issued_at > nowSeconds + ISSUED_AT_SKEW_SECONDS) {
      return yield* new InvalidRequest({ message: `issued_at is more than ${ISSUED_AT_SKEW_SECONDS} s in the future` })
    }
    if (issued_at >= input.valid_until || input.valid_until - issued_at > maxQuoteLife) {
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
 * Checks `input` as a quote set of `order` at `nowMs` and answers the set to store (everything but its row id), or
 * the first refusal in the order the module's comment lists.
 */
export const checkQuoteSet = (deployment: DeploymentConfig, order: OrderRow, input: QuoteSetInput, nowMs: number) =>
  Effect.gen(function* () {
    const venueOf = (id: string) => deployment.venues.find((v) => v.id === id)
    const venue = venueOf(order.venue)!
    const v2 = order.escrow_version === 2
    const nowSeconds = Math.floor(nowMs / 1000)
    const maxValidity = deployment.limits.quote_validity_seconds_max
    // A set must outlive the lock cutoff, or no fill could ever be locked against it.
    const cutoff = deployment.settlement.lock_cutoff_seconds
    if (input.valid_until <= nowSeconds + cutoff || input.valid_until > nowSeconds + maxValidity) {
      return yield* new InvalidRequest({
        message: `valid_until must be more than ${cutoff} s and at most ${maxValidity} s ahead`,
      })
    }
    if (
      !v2 &&
      (input.issued_at !== undefined ||
        input.hashlock_root !== undefined ||
        input.hashlock_count !== undefined ||
        input.hashlocks !== undefined ||
        input.quotes.some((q) => q.escrow !== undefined))
    ) {
      return yield* new InvalidRequest({
        message:
          "this order is on the v1 escrow: issued_at, hashlock_root, hashlock_count, hashlocks and quote escrow are for v2 orders",
      })
    }
    for (const q of input.quotes) {
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
      ? yield* checkV2Fields(input, nowSeconds, deployment.settlement.max_quote_life_seconds)
      : undefined
    const quoteSize = BigInt(input.quote_size)
    yield* checkSignatureShape(input.signature).pipe(Effect.catchAll(shapeFailure))
    const generation = BigInt(input.identity_generation)
    const sequence = BigInt(input.sequence)
    const validUntil = BigInt(input.valid_until)
    const signed = { address: order.quote_signer as Address, signature: input.signature as Hex }
    let valid: boolean
    if (checked === undefined) {
      const typed = quoteSetTypedData(venue.chain_id, getAddress(venue.escrow), {
        orderId: order.id as Hex,
        sequence,
        generation,
        quoteSize,
        validUntil,
        quotes: input.quotes.map(quoteFromWire),
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
        quotes: input.quotes.map((q) => quoteV2FromWire({ ...q, escrow: q.escrow! })),
      })
      valid = yield* verifies({ ...typed, ...signed })
    }
    if (!valid)
      return yield* new SignatureInvalid({ message: "the quote set is not signed by the order's quote signer" })
    // After the signature, and without the amount: a `quote` credential never sees balances (spec, Authentication
    // 6), so an unsigned probe learns nothing and a signed one only that the size does not fit.
    if (quoteSize === 0n || quoteSize > BigInt(order.escrow_available)) {
      return yield* new InsufficientBalance({ message: "quote_size exceeds the order's quotable balance" })
    }
    return {
      orderId: order.id,
      master: order.master,
      identityId: order.quote_identity_id,
      generation,
      sequence,
      validUntilSeconds: validUntil,
      quoteSize,
      quotes: input.quotes.map((q) => ({
        ...q,
        token: q.token.toLowerCase(),
        recipient: q.recipient.toLowerCase(),
        ...(q.escrow === undefined ? {} : { escrow: q.escrow.toLowerCase() }),
      })),
      signature: input.signature,
      ...(checked === undefined ? {} : { v2: checked }),
    } satisfies Omit<NewQuoteSet, "id">
  })
