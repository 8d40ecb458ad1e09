import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { type Address, encodeFunctionData, getAddress, type Hex, keccak256, toHex } from "viem"
import type { PrivateKeyAccount } from "viem/accounts"
import { mockUSDCAbi, settlementEscrowV2Abi } from "../../src/Chain/artifacts/index.ts"
import { readPermitContext } from "../../src/Chain/TokenReads.ts"
import {
  type FillV2,
  fillDigest,
  fillV2TypedData,
  fundOrderV2TypedData,
  payTakeTypedData,
  type QuoteSetV2,
  quoteSetV2TypedData,
} from "../../src/Domain/EscrowTypedDataV2.ts"
import { deriveHashlockSet, type HashlockSet, secretKeyOf } from "../../src/Domain/Hashlocks.ts"
import { permitTypedData } from "../../src/Domain/Permit.ts"
import { toWireTypedData } from "../../src/Domain/WireTypedData.ts"
import { sendCalls, type TestChain } from "./ChainDevnet.ts"

/**
 * Settlement-v2 rows for settlement tests on two devnet chains, written as the v2 takes and quotes routes will
 * store them (until those routes land): a maker order funded on the maker chain's SettlementEscrowV2 (operator =
 * the service's operator), a v2 quote set with real hashlocks derived from the quote signer's key
 * (src/Domain/Hashlocks.ts; the maker keeps the secrets, the rows never hold one), and a signed v2 take — one Fill
 * per part signed by the payer, one permit for Σ amount_in, a pay key named in every Fill.
 */

const uuid = () => crypto.randomUUID()

export interface MakerOrderV2 {
  readonly orderId: Hex
  readonly master: string
  readonly identityId: string
  readonly owner: PrivateKeyAccount
  readonly signerKey: Hex
  readonly payee: Address
  readonly set: QuoteSetV2
  readonly hashlocks: HashlockSet
}

export const makerOrderV2 = (
  maker: TestChain,
  taker: TestChain,
  p: {
    readonly owner: PrivateKeyAccount
    readonly signerKey: Hex
    readonly signer: PrivateKeyAccount
    readonly relayer: PrivateKeyAccount
    readonly operator: Address
    readonly payee: Address
    readonly amount: bigint
    readonly makerVenue: string
    readonly takerVenue: string
  },
) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const escrow = maker.escrowV2!
    const orderId = keccak256(toHex(uuid()))
    const master = p.owner.address.toLowerCase()
    yield* sql`insert into accounts (master, access, created_at) values (${master}, 'granted', now())
      on conflict do nothing`
    const identityId = uuid()
    yield* sql`insert into quote_identities (id, master, signer, kind, generation, lease_expires_at, created_at)
      values (${identityId}, ${master}, ${p.signer.address.toLowerCase()}, 'credential', 1,
        now() + interval '1 hour', now())`
    const block = yield* Effect.promise(() => maker.pub.getBlock())
    const fund = {
      orderId,
      owner: p.owner.address,
      operator: p.operator,
      quoteSigner: p.signer.address,
      amount: p.amount,
      deadline: block.timestamp + 86_400n,
    }
    const fundSig = yield* Effect.promise(() =>
      p.owner.signTypedData(fundOrderV2TypedData(maker.chain.id, escrow, fund)),
    )
    const approve = encodeFunctionData({ abi: mockUSDCAbi, functionName: "approve", args: [escrow, p.amount] })
    yield* Effect.promise(() => sendCalls(maker, p.owner, [{ to: maker.token, data: approve }]))
    const noPermit = { value: 0n, deadline: 0n, v: 0, r: `0x${"0".repeat(64)}`, s: `0x${"0".repeat(64)}` } as const
    const data = encodeFunctionData({
      abi: settlementEscrowV2Abi,
      functionName: "fund",
      args: [fund, fundSig, noPermit],
    })
    yield* Effect.promise(() => sendCalls(maker, p.relayer, [{ to: escrow, data }]))
    yield* sql`insert into orders (id, master, venue, receive_venue, owner_address, state, amount, created_at,
        updated_at, client_order_id, quote_identity_id, quote_signer, fund_deadline, to_sign, escrow_version)
      values (${orderId}, ${master}, ${p.makerVenue}, ${p.takerVenue}, ${master}, 'funded', ${p.amount.toString()},
        now(), now(), ${`order-${orderId.slice(2, 14)}`}, ${identityId}, ${p.signer.address.toLowerCase()},
        ${fund.deadline.toString()}, '[]'::jsonb, 2)`
    const sequence = 1n
    const hashlocks = deriveHashlockSet(
      secretKeyOf(p.signerKey),
      { chainId: BigInt(maker.chain.id), makerEscrow: escrow, owner: p.owner.address, orderId, sequence },
      8,
    )
    const quote = {
      chainId: BigInt(taker.chain.id),
      token: getAddress(taker.token),
      escrow: getAddress(taker.escrowV2!),
      recipient: getAddress(p.payee),
      supply: 1n,
      receive: 1n,
      minFill: 1n,
    }
    const set: QuoteSetV2 = {
      owner: p.owner.address,
      orderId,
      sequence,
      generation: 1n,
      quoteSize: p.amount,
      issuedAt: block.timestamp,
      validUntil: block.timestamp + 300n,
      hashlockRoot: hashlocks.root,
      hashlockCount: hashlocks.count,
      quotes: [quote],
    }
    const signature = yield* Effect.promise(() =>
      p.signer.signTypedData(quoteSetV2TypedData(maker.chain.id, escrow, set)),
    )
    yield* sql`insert into quote_sets (id, order_id, quote_identity_id, identity_generation, cancel_epoch, sequence,
        valid_until, quote_size, quotes, signature, active, created_at, issued_at, hashlock_root, hashlock_count,
        hashlocks)
      values (${uuid()}, ${orderId}, ${identityId}, 1, 0, 1, ${new Date(Number(set.validUntil) * 1000)},
        ${p.amount.toString()},
        ${JSON.stringify([
          {
            venue: p.takerVenue,
            chain_id: taker.chain.id,
            token: quote.token.toLowerCase(),
            escrow: quote.escrow.toLowerCase(),
            recipient: quote.recipient.toLowerCase(),
            supply: "1",
            receive: "1",
            min_fill: "1",
          },
        ])}::jsonb, ${signature}, true, now(), ${set.issuedAt.toString()}, ${hashlocks.root}, ${hashlocks.count},
        ${JSON.stringify(hashlocks.hashlocks)}::jsonb)`
    return { orderId, master, identityId, owner: p.owner, signerKey: p.signerKey, payee: p.payee, set, hashlocks }
  })

export interface TakeFillV2 {
  readonly id: string
  readonly fill: FillV2
  readonly digest: Hex
  readonly order: MakerOrderV2
  readonly index: number
}

/**
 * A signed v2 take of `payer` over `parts` (one fill per part, hashlock index `index` of its order's set), payBy
 * 120 s after the maker chain's latest block (PAY_BY_MAX), takerExpiry TAKER_TIMEOUT_MIN (900 s) after it,
 * makerExpiry CLAIM_WINDOW (600 s) after that: the devnet's v2 immutables.
 */
export const signedTakeV2 = (
  maker: TestChain,
  taker: TestChain,
  p: {
    readonly payer: PrivateKeyAccount
    readonly payKey: Address
    readonly recipient: Address
    readonly parts: ReadonlyArray<{
      readonly order: MakerOrderV2
      readonly amountIn: bigint
      readonly amountOut: bigint
      readonly index: number
    }>
    readonly makerVenue: string
    readonly takerVenue: string
  },
) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const takeId = uuid()
    const master = p.payer.address.toLowerCase()
    const block = yield* Effect.promise(() => maker.pub.getBlock())
    const payBy = block.timestamp + 120n
    const takerExpiry = payBy + 900n
    const makerExpiry = takerExpiry + 600n
    const fills: Array<TakeFillV2> = p.parts.map((part) => {
      const id = uuid()
      const fill: FillV2 = {
        fillId: keccak256(toHex(id)),
        owner: part.order.owner.address,
        orderId: part.order.orderId,
        sequence: part.order.set.sequence,
        makerChainId: BigInt(maker.chain.id),
        makerEscrow: getAddress(maker.escrowV2!),
        takerChainId: BigInt(taker.chain.id),
        takerEscrow: getAddress(taker.escrowV2!),
        payer: p.payer.address,
        payee: getAddress(part.order.payee),
        amountIn: part.amountIn,
        recipient: getAddress(p.recipient),
        amountOut: part.amountOut,
        dex: 0,
        toMargin: false,
        hashlock: part.order.hashlocks.hashlocks[part.index]!,
        hashlockIndex: part.index,
        payKey: getAddress(p.payKey),
        payBy,
        makerExpiry,
        takerExpiry,
      }
      return { id, fill, digest: fillDigest(fill), order: part.order, index: part.index }
    })
    const totalIn = fills.reduce((s, f) => s + f.fill.amountIn, 0n)
    const totalOut = fills.reduce((s, f) => s + f.fill.amountOut, 0n)
    const { domain, nonce } = yield* readPermitContext(taker.pub, taker.token, p.payer.address).pipe(Effect.orDie)
    const permit = permitTypedData(domain, {
      owner: p.payer.address,
      spender: taker.escrowV2!,
      value: totalIn,
      nonce,
      deadline: takerExpiry,
    })
    const permitSignature = yield* Effect.promise(() => p.payer.signTypedData(permit))
    const toSign = [
      { kind: "permit", signer: master, typed_data: toWireTypedData(permit) },
      ...fills.map((f) => ({
        kind: "margin_move",
        signer: master,
        fill_id: f.id,
        typed_data: toWireTypedData(fillV2TypedData(f.fill)),
        digest: f.digest,
      })),
    ]
    yield* sql`insert into accounts (master, access, created_at) values (${master}, 'granted', now())
      on conflict do nothing`
    yield* sql`insert into takes (id, master, client_take_id, from_venue, to_venue, amount_in, min_out, payer,
        recipient, max_parts, total_in, total_out, state, pay_deadline, to_sign, permit_signature, signed_at,
        created_at, updated_at, escrow_version, pay_key_address, pay_by)
      values (${takeId}, ${master}, ${`take-${takeId}`}, ${p.takerVenue}, ${p.makerVenue}, ${totalIn.toString()},
        ${totalOut.toString()}, ${master}, ${p.recipient.toLowerCase()}, ${fills.length}, ${totalIn.toString()},
        ${totalOut.toString()}, 'signed', now() + interval '2 minutes', ${JSON.stringify(toSign)}::jsonb,
        ${permitSignature}, now(), now(), now(), 2, ${p.payKey.toLowerCase()}, ${payBy.toString()})`
    for (const f of fills) {
      const signature = yield* Effect.promise(() => p.payer.signTypedData(fillV2TypedData(f.fill)))
      const wire = (toWireTypedData(fillV2TypedData(f.fill)) as { message: unknown }).message
      yield* sql`insert into fills (id, take_id, order_id, taker_venue, payer, state, final, created_at, updated_at,
          fill_key, maker_venue, sequence, quote_index, quote_identity_id, amount_in, amount_out, payee, recipient,
          hashlock, secret_ciphertext, maker_expiry, taker_expiry, fill, signature, fill_digest, hashlock_index,
          hashlock_proof, pay_by)
        values (${f.id}, ${takeId}, ${f.order.orderId}, ${p.takerVenue}, ${master}, 'signed', false, now(), now(),
          ${f.fill.fillId}, ${p.makerVenue}, ${f.fill.sequence.toString()}, 0, ${f.order.identityId},
          ${f.fill.amountIn.toString()}, ${f.fill.amountOut.toString()}, ${f.order.payee.toLowerCase()},
          ${p.recipient.toLowerCase()}, ${f.fill.hashlock}, null, ${makerExpiry.toString()},
          ${takerExpiry.toString()}, ${JSON.stringify(wire)}::jsonb, ${signature}, ${f.digest}, ${f.index},
          ${JSON.stringify(f.order.hashlocks.proof(f.index))}::jsonb, ${payBy.toString()})`
    }
    return { takeId, master, fills, totalIn, totalOut, payBy, takerExpiry, makerExpiry }
  })

/** The pay key's PayTake over the take's digests in to_sign order, stored as C's signatures route would. */
export const authorizePayment = (
  taker: TestChain,
  take: { readonly takeId: string; readonly fills: ReadonlyArray<TakeFillV2> },
  payKey: PrivateKeyAccount,
) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const signature = yield* Effect.promise(() =>
      payKey.signTypedData(
        payTakeTypedData(
          taker.chain.id,
          taker.escrowV2!,
          take.fills.map((f) => f.digest),
        ),
      ),
    )
    yield* sql`update takes set pay_authorization = ${signature}, pay_authorized_at = now()
      where id = ${take.takeId}::uuid`
  })
