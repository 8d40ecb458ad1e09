import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { type Address, bytesToHex, encodeFunctionData, getAddress, type Hex, hexToBytes, keccak256, toHex } from "viem"
import type { PrivateKeyAccount } from "viem/accounts"
import { mockUSDCAbi, settlementEscrowAbi } from "../../src/Chain/artifacts/index.ts"
import { readPermitContext } from "../../src/Chain/TokenReads.ts"
import { AppConfig } from "../../src/Config.ts"
import { type Fill, fillTypedData, fundOrderTypedData, quoteSetTypedData } from "../../src/Domain/EscrowTypedData.ts"
import { permitTypedData } from "../../src/Domain/Permit.ts"
import { toWireTypedData } from "../../src/Domain/WireTypedData.ts"
import { fillSecretKeyring, sealFillSecret } from "../../src/Settlement/FillSecrets.ts"
import { sendCalls, type TestChain } from "./ChainDevnet.ts"
import { rawRequest } from "./Http.ts"
import { post } from "./SignIn.ts"

/**
 * Drives takes for settlement tests on two devnet chains: a maker order funded on chain (operator = the
 * service's operator, so it can lock), a quote set signed by its quote signer, and a signed take — the taker's
 * Fill per fill and one permit for Σ amount_in — written as the takes routes store them (state `signed`).
 *
 * `takeOverHttp` drives a take as a browser app does (POST /v1/takes, the payer signs `to_sign`, POST
 * /v1/takes/{id}/signatures); `signedTake` writes the take as rows (real signatures, secrets sealed by src/Settlement/FillSecrets.ts), for tests
 * that need control over expiries or a bad permit.
 */

export interface MakerOrder {
  readonly orderId: Hex
  readonly master: string
  readonly identityId: string
  readonly owner: PrivateKeyAccount
  readonly signer: PrivateKeyAccount
  /** The maker's quote recipient on the taker chain (receives amount_in). */
  readonly payee: Address
  readonly sequence: bigint
  readonly quoteSize: bigint
  readonly validUntil: bigint
  readonly quote: {
    readonly chainId: bigint
    readonly token: Address
    readonly recipient: Address
    readonly supply: bigint
    readonly receive: bigint
    readonly minFill: bigint
  }
}

const uuid = () => crypto.randomUUID()
const now = () => new Date()

/** The on-chain fillId of a fill: its UUID as 16 bytes, left-padded to 32. */
export const fillKeyOf = (fillId: string): Hex => `0x${"0".repeat(32)}${fillId.replaceAll("-", "")}` as Hex

/**
 * A funded maker order on `maker` (its escrow, operated by `operator`), owned by `owner`, quotes signed by `signer`,
 * paying on `taker` to `payee` at supply:receive.
 */
export const makerOrder = (
  maker: TestChain,
  taker: TestChain,
  p: {
    readonly owner: PrivateKeyAccount
    readonly signer: PrivateKeyAccount
    readonly relayer: PrivateKeyAccount
    readonly operator: Address
    readonly payee: Address
    readonly amount: bigint
    readonly quoteSize?: bigint
    readonly supply?: bigint
    readonly receive?: bigint
    readonly makerVenue: string
    readonly takerVenue: string
  },
) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
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
      p.owner.signTypedData(fundOrderTypedData(maker.chain.id, maker.escrow, fund)),
    )
    yield* Effect.promise(() =>
      sendCalls(maker, p.owner, [
        {
          to: maker.token,
          data: encodeFunctionData({ abi: mockUSDCAbi, functionName: "approve", args: [maker.escrow, p.amount] }),
        },
      ]),
    )
    const noPermit = { value: 0n, deadline: 0n, v: 0, r: `0x${"0".repeat(64)}`, s: `0x${"0".repeat(64)}` } as const
    yield* Effect.promise(() =>
      sendCalls(maker, p.relayer, [
        {
          to: maker.escrow,
          data: encodeFunctionData({
            abi: settlementEscrowAbi,
            functionName: "fund",
            args: [fund, fundSig, noPermit],
          }),
        },
      ]),
    )
    yield* sql`insert into orders (id, master, venue, receive_venue, owner_address, state, amount, created_at,
        updated_at, client_order_id, quote_identity_id, quote_signer, fund_deadline, to_sign)
      values (${orderId}, ${master}, ${p.makerVenue}, ${p.takerVenue}, ${master}, 'funded', ${p.amount.toString()},
        now(), now(), ${`order-${orderId.slice(2, 14)}`}, ${identityId}, ${p.signer.address.toLowerCase()},
        ${fund.deadline.toString()}, '[]'::jsonb)`
    const quote = {
      chainId: BigInt(taker.chain.id),
      token: getAddress(taker.token),
      recipient: getAddress(p.payee),
      supply: p.supply ?? 1n,
      receive: p.receive ?? 1n,
      minFill: 1n,
    }
    const validUntil = block.timestamp + 3_600n
    const quoteSize = p.quoteSize ?? p.amount
    const set = { orderId, sequence: 1n, generation: 1n, quoteSize, validUntil, quotes: [quote] }
    const signature = yield* Effect.promise(() =>
      p.signer.signTypedData(quoteSetTypedData(maker.chain.id, maker.escrow, set)),
    )
    yield* sql`insert into quote_sets (id, order_id, quote_identity_id, identity_generation, cancel_epoch, sequence,
        valid_until, quote_size, quotes, signature, active, created_at)
      values (${uuid()}, ${orderId}, ${identityId}, 1, 0, 1, ${new Date(Number(validUntil) * 1000)},
        ${quoteSize.toString()},
        ${JSON.stringify([
          {
            venue: p.takerVenue,
            chain_id: taker.chain.id,
            token: quote.token.toLowerCase(),
            recipient: quote.recipient.toLowerCase(),
            supply: quote.supply.toString(),
            receive: quote.receive.toString(),
            min_fill: "1",
          },
        ])}::jsonb, ${signature}, true, now())`
    return {
      orderId,
      master,
      identityId,
      owner: p.owner,
      signer: p.signer,
      payee: p.payee,
      sequence: 1n,
      quoteSize,
      validUntil,
      quote,
    } satisfies MakerOrder
  })

export interface TakeFill {
  readonly id: string
  readonly fillKey: Hex
  readonly secret: Hex
  readonly order: MakerOrder
  readonly amountIn: bigint
  readonly amountOut: bigint
  readonly fill: Fill
}

/**
 * A signed take of `taker` (payer on the taker chain) over `parts` (one fill per order), delivering to
 * `recipient` on the maker chain, as the takes routes store it after POST /v1/takes/{id}/signatures.
 * `permitValue` overrides the permit's value (a wrong one makes the payment revert).
 */
export const signedTake = (
  maker: TestChain,
  taker: TestChain,
  p: {
    readonly payer: PrivateKeyAccount
    readonly recipient: Address
    readonly parts: ReadonlyArray<{ readonly order: MakerOrder; readonly amountIn: bigint; readonly amountOut: bigint }>
    readonly makerVenue: string
    readonly takerVenue: string
    readonly makerTimeout?: bigint
    readonly takerTimeout?: bigint
    readonly toMargin?: boolean
    readonly permitValue?: bigint
    /** Stores secrets this way instead of sealing them (the test's opener must match, e.g. plainSeal/plainOpen). */
    readonly sealSecret?: (secret: Hex) => Uint8Array
  },
) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const { deployment } = yield* AppConfig
    const ring = fillSecretKeyring(deployment)
    const takeId = uuid()
    const master = p.payer.address.toLowerCase()
    const block = yield* Effect.promise(() => maker.pub.getBlock())
    const makerExpiry = block.timestamp + (p.makerTimeout ?? 1800n)
    const takerExpiry = makerExpiry + (p.takerTimeout ?? 1800n)
    const fills: Array<TakeFill> = []
    for (const part of p.parts) {
      const id = uuid()
      const secret = bytesToHex(crypto.getRandomValues(new Uint8Array(32)))
      const fill: Fill = {
        fillId: fillKeyOf(id),
        orderId: part.order.orderId,
        sequence: part.order.sequence,
        makerChainId: BigInt(maker.chain.id),
        makerEscrow: getAddress(maker.escrow),
        takerChainId: BigInt(taker.chain.id),
        takerEscrow: getAddress(taker.escrow),
        payer: p.payer.address,
        payee: getAddress(part.order.payee),
        amountIn: part.amountIn,
        recipient: getAddress(p.recipient),
        amountOut: part.amountOut,
        dex: 0,
        toMargin: p.toMargin ?? false,
        hashlock: keccak256(secret),
        makerExpiry,
        takerExpiry,
      }
      fills.push({ id, fillKey: fill.fillId, secret, ...part, fill })
    }
    const totalIn = fills.reduce((s, f) => s + f.amountIn, 0n)
    const totalOut = fills.reduce((s, f) => s + f.amountOut, 0n)
    const { domain, nonce } = yield* readPermitContext(taker.pub, taker.token, p.payer.address).pipe(Effect.orDie)
    const permit = permitTypedData(domain, {
      owner: p.payer.address,
      spender: taker.escrow,
      value: p.permitValue ?? totalIn,
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
        typed_data: toWireTypedData(fillTypedData(f.fill)),
      })),
    ]
    yield* sql`insert into accounts (master, access, created_at) values (${master}, 'granted', now())
      on conflict do nothing`
    yield* sql`insert into takes (id, master, client_take_id, from_venue, to_venue, amount_in, min_out, payer,
        recipient, max_parts, total_in, total_out, state, pay_deadline, to_sign, permit_signature, signed_at,
        created_at, updated_at)
      values (${takeId}, ${master}, ${`take-${takeId}`}, ${p.takerVenue}, ${p.makerVenue}, ${totalIn.toString()},
        ${totalOut.toString()}, ${master}, ${p.recipient.toLowerCase()}, ${fills.length}, ${totalIn.toString()},
        ${totalOut.toString()}, 'signed', now() + interval '2 minutes', ${JSON.stringify(toSign)}::jsonb,
        ${permitSignature}, now(), now(), now())`
    const stored = (f: TakeFill) =>
      p.sealSecret
        ? Buffer.from(p.sealSecret(f.secret))
        : sealFillSecret(
            ring,
            crypto.getRandomValues(new Uint8Array(12)),
            f.fillKey,
            f.fill.hashlock,
            hexToBytes(f.secret),
          )
    for (const f of fills) {
      const signature = yield* Effect.promise(() => p.payer.signTypedData(fillTypedData(f.fill)))
      yield* sql`insert into fills (id, take_id, order_id, taker_venue, payer, state, final, created_at, updated_at,
          fill_key, maker_venue, sequence, quote_index, quote_identity_id, amount_in, amount_out, payee, recipient,
          hashlock, secret_ciphertext, maker_expiry, taker_expiry, fill, signature)
        values (${f.id}, ${takeId}, ${f.order.orderId}, ${p.takerVenue}, ${master}, 'signed', false, ${now()}, now(),
          ${f.fillKey}, ${p.makerVenue}, ${f.order.sequence.toString()}, 0, ${f.order.identityId},
          ${f.amountIn.toString()}, ${f.amountOut.toString()}, ${f.order.payee.toLowerCase()},
          ${p.recipient.toLowerCase()}, ${f.fill.hashlock}, ${stored(f)},
          ${makerExpiry.toString()}, ${takerExpiry.toString()},
          ${JSON.stringify(toWireTypedData(lowercase(f.fill)))}::jsonb, ${signature})`
    }
    return { takeId, master, fills, totalIn, totalOut, makerExpiry, takerExpiry }
  })

/** The wire form keeps addresses lowercase (migrations/0011). */
const lowercase = (f: Fill) => ({
  ...f,
  makerEscrow: f.makerEscrow.toLowerCase(),
  takerEscrow: f.takerEscrow.toLowerCase(),
  payer: f.payer.toLowerCase(),
  payee: f.payee.toLowerCase(),
  recipient: f.recipient.toLowerCase(),
})

/** Test sealing: the secret's bytes as they are (the matching opener is `plainOpen`). */
export const plainSeal = (secret: Hex) => hexToBytes(secret)
export const plainOpen = (ciphertext: Uint8Array) => bytesToHex(new Uint8Array(ciphertext))

// ------------------------------------------------------------------ the HTTP flow (as a browser app drives a take)

export interface HttpSignItem {
  readonly kind: string
  readonly signer: string
  // biome-ignore lint/suspicious/noExplicitAny: wire typed data
  readonly typed_data: any
  readonly fill_id?: string
}

export interface HttpTake {
  readonly id: string
  readonly state: string
  readonly total_in: string
  readonly total_out: string
  readonly fills: ReadonlyArray<{ readonly fill_id: string; readonly state: string; readonly final: boolean }>
}

/**
 * POST /v1/takes with `body`, the payer's wallet signs `to_sign` exactly as returned (the permit, then each fill's
 * `margin_move`), POST /v1/takes/{id}/signatures. Returns the signed take (or the failed response to inspect).
 */
export const takeOverHttp = (
  base: string,
  token: string,
  payer: PrivateKeyAccount,
  body: {
    readonly client_take_id: string
    readonly from: string
    readonly to: string
    readonly amount_in: string
    readonly min_out: string
    readonly payer: string
    readonly recipient: string
    readonly max_parts: number
  },
) =>
  Effect.gen(function* () {
    const auth = { authorization: `Bearer ${token}` }
    const created = yield* post(`${base}/v1/takes`, body, auth)
    if (created.status !== 200) return { ok: false as const, response: created }
    const { take, to_sign } = created.json as { take: HttpTake; to_sign: ReadonlyArray<HttpSignItem> }
    const permit = yield* Effect.promise(() =>
      payer.signTypedData(to_sign.find((i) => i.kind === "permit")!.typed_data),
    )
    const fills: Array<{ fill_id: string; signature: Hex }> = []
    for (const item of to_sign.filter((i) => i.kind === "margin_move")) {
      fills.push({
        fill_id: item.fill_id!,
        signature: yield* Effect.promise(() => payer.signTypedData(item.typed_data)),
      })
    }
    const signed = yield* post(`${base}/v1/takes/${take.id}/signatures`, { permit, fills }, auth)
    if (signed.status !== 200) return { ok: false as const, response: signed }
    return { ok: true as const, take: (signed.json as { take: HttpTake }).take }
  })

/** GET /v1/takes/{id} as the payer's session sees it. */
export const getTake = (base: string, token: string, id: string) =>
  Effect.map(
    rawRequest(`${base}/v1/takes/${id}`, { headers: { authorization: `Bearer ${token}` } }),
    (r) => (r.json as { take: HttpTake }).take,
  )
