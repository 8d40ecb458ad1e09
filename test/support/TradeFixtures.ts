/**
 * Settled trades as fixture rows with REAL signatures (viem accounts): the maker's QuoteSet, the payer's Fill, a
 * secret whose keccak256 is the hashlock, and the four escrow events the index would hold. Used until takes settle
 * end to end; `verifyTradeProofOffline` checks a proof with viem alone (what a third party would do).
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { type Address, type Hex, keccak256, verifyTypedData } from "viem"
import { generatePrivateKey, type PrivateKeyAccount, privateKeyToAccount } from "viem/accounts"
import { type Fill, fillTypedData, type QuoteSet, quoteSetTypedData } from "../../src/Domain/EscrowTypedData.ts"
import { toWireTypedData } from "../../src/Domain/WireTypedData.ts"

export interface FixtureVenue {
  readonly id: string
  readonly chain_id: number
  readonly token: string
  readonly escrow: string
}

export interface SignedTrade {
  readonly fillId: string
  readonly fillKey: Hex
  readonly orderId: Hex
  readonly quoteSet: QuoteSet
  readonly quoteSignature: Hex
  readonly fill: Fill
  readonly fillSignature: Hex
  readonly secret: Hex
  readonly quoteSigner: PrivateKeyAccount
  readonly payer: PrivateKeyAccount
  readonly maker: FixtureVenue
  readonly taker: FixtureVenue
}

const hex32 = (bytes: Uint8Array) => `0x${Buffer.from(bytes).toString("hex")}` as Hex
const randomBytes = (n: number) => crypto.getRandomValues(new Uint8Array(n))

/** The on-chain fillId of a fill UUID: its 16 bytes left-padded to 32 (migration 0011). */
export const fillKeyOf = (uuid: string) => `0x${uuid.replace(/-/g, "").padStart(64, "0")}` as Hex

/**
 * A trade: `amountIn` paid on `taker`, `amountOut` delivered on `maker`, priced on quote 0 of a set that supplies
 * `supply` for `receive` (amountIn × supply ≥ amountOut × receive when amountOut rounds down).
 */
export const signTrade = async (opts: {
  readonly maker: FixtureVenue
  readonly taker: FixtureVenue
  readonly amountIn: bigint
  readonly supply?: bigint
  readonly receive?: bigint
  readonly quoteSigner?: PrivateKeyAccount
  readonly payer?: PrivateKeyAccount
}): Promise<SignedTrade> => {
  const supply = opts.supply ?? 99n
  const receive = opts.receive ?? 100n
  const quoteSigner = opts.quoteSigner ?? privateKeyToAccount(generatePrivateKey())
  const payer = opts.payer ?? privateKeyToAccount(generatePrivateKey())
  const fillId = crypto.randomUUID()
  const orderId = hex32(randomBytes(32))
  const secret = hex32(randomBytes(32))
  const quoteSet: QuoteSet = {
    orderId,
    sequence: 1n + BigInt(randomBytes(1)[0]!),
    generation: 1n,
    quoteSize: 10n ** 12n,
    validUntil: 4_102_444_800n,
    quotes: [
      {
        chainId: BigInt(opts.taker.chain_id),
        token: opts.taker.token as Address,
        recipient: quoteSigner.address,
        supply,
        receive,
        minFill: 1n,
      },
    ],
  }
  const fill: Fill = {
    fillId: fillKeyOf(fillId),
    orderId,
    sequence: quoteSet.sequence,
    makerChainId: BigInt(opts.maker.chain_id),
    makerEscrow: opts.maker.escrow as Address,
    takerChainId: BigInt(opts.taker.chain_id),
    takerEscrow: opts.taker.escrow as Address,
    payer: payer.address,
    payee: quoteSigner.address,
    amountIn: opts.amountIn,
    recipient: payer.address,
    amountOut: (opts.amountIn * supply) / receive,
    dex: 0,
    toMargin: true,
    hashlock: keccak256(secret),
    makerExpiry: 4_102_444_800n,
    takerExpiry: 4_102_444_700n,
  }
  const quoteSignature = await quoteSigner.signTypedData(
    quoteSetTypedData(opts.maker.chain_id, opts.maker.escrow as Address, quoteSet),
  )
  const fillSignature = await payer.signTypedData(fillTypedData(fill))
  return {
    fillId,
    fillKey: fill.fillId,
    orderId,
    quoteSet,
    quoteSignature,
    fill,
    fillSignature,
    secret,
    quoteSigner,
    payer,
    maker: opts.maker,
    taker: opts.taker,
  }
}

/** The wire form of a Fill message, as the takes store keeps it (`fills.fill`). */
export const wireFill = (fill: Fill) => {
  const wire = toWireTypedData(fill) as Record<string, unknown>
  return Object.fromEntries(
    Object.entries(wire).map(([k, v]) => [k, typeof v === "string" && v.startsWith("0x") ? v.toLowerCase() : v]),
  )
}

let block = 10_000_000

/**
 * Inserts a settled trade: accounts, the maker's identity and order, the quote set, the take (of `takerMaster`),
 * the fill (settled at `settledAt`, a SQL timestamp expression), the escrow lock with its revealed secret and the
 * four settlement events. Returns the fill id.
 */
export const insertTrade = (
  t: SignedTrade,
  opts: { readonly makerMaster: string; readonly takerMaster: string; readonly settledAt?: string },
) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const makerMaster = opts.makerMaster.toLowerCase()
    const takerMaster = opts.takerMaster.toLowerCase()
    const settledAt = opts.settledAt ?? "now()"
    const identityId = crypto.randomUUID()
    const takeId = crypto.randomUUID()
    const signer = t.quoteSigner.address.toLowerCase()
    const payer = t.payer.address.toLowerCase()
    const q = t.quoteSet.quotes[0]!
    yield* sql`insert into accounts (master, access, created_at) values (${makerMaster}, 'granted', now()),
      (${takerMaster}, 'granted', now()) on conflict do nothing`
    yield* sql`insert into quote_identities (id, master, signer, kind, generation, lease_expires_at, created_at)
      values (${identityId}, ${makerMaster}, ${signer}, 'credential', 1, now(), now())`
    yield* sql`insert into orders (id, master, venue, receive_venue, owner_address, state, amount, created_at, updated_at,
        client_order_id, quote_identity_id, quote_signer)
      values (${t.orderId}, ${makerMaster}, ${t.maker.id}, ${t.taker.id}, ${makerMaster}, 'funded', 1000000000000,
        now(), now(), ${`fixture-${t.fillId}`}, ${identityId}, ${signer})`
    yield* sql`insert into quote_sets (id, order_id, quote_identity_id, identity_generation, cancel_epoch, sequence,
        valid_until, quote_size, quotes, signature, active, created_at)
      values (${crypto.randomUUID()}, ${t.orderId}, ${identityId}, ${t.quoteSet.generation.toString()}, 0,
        ${t.quoteSet.sequence.toString()}, to_timestamp(${Number(t.quoteSet.validUntil)}),
        ${t.quoteSet.quoteSize.toString()},
        ${JSON.stringify([
          {
            venue: t.taker.id,
            chain_id: Number(q.chainId),
            token: q.token.toLowerCase(),
            recipient: q.recipient.toLowerCase(),
            supply: q.supply.toString(),
            receive: q.receive.toString(),
            min_fill: q.minFill.toString(),
          },
        ])}::jsonb, ${t.quoteSignature}, false, now())`
    yield* sql`insert into takes (id, master, client_take_id, from_venue, to_venue, amount_in, min_out, payer, recipient,
        max_parts, total_in, total_out, state, pay_deadline, to_sign, created_at, updated_at)
      values (${takeId}, ${takerMaster}, ${`fixture-${t.fillId}`}, ${t.taker.id}, ${t.maker.id},
        ${t.fill.amountIn.toString()}, 0, ${payer}, ${payer}, 1, ${t.fill.amountIn.toString()},
        ${t.fill.amountOut.toString()}, 'settled', now(), '[]'::jsonb, now(), now())`
    yield* sql`insert into fills (id, take_id, order_id, taker_venue, payer, state, final, created_at, updated_at,
        fill_key, maker_venue, sequence, quote_index, quote_identity_id, amount_in, amount_out, payee, recipient,
        hashlock, secret_ciphertext, maker_expiry, taker_expiry, fill, signature, settled_at)
      values (${t.fillId}, ${takeId}, ${t.orderId}, ${t.taker.id}, ${payer}, 'settled', true, now(), now(),
        ${t.fillKey}, ${t.maker.id}, ${t.quoteSet.sequence.toString()}, 0, ${identityId},
        ${t.fill.amountIn.toString()}, ${t.fill.amountOut.toString()}, ${t.fill.payee.toLowerCase()}, ${payer},
        ${t.fill.hashlock}, '\\x00'::bytea, ${t.fill.makerExpiry.toString()}, ${t.fill.takerExpiry.toString()},
        ${JSON.stringify(wireFill(t.fill))}::jsonb, ${t.fillSignature}, ${sql.unsafe(settledAt)})`
    const b = block
    block += 4
    yield* sql`insert into escrow_locks (venue, fill_id, order_id, payer, recipient, amount_out, hashlock, expiry, state,
        refused, secret, created_block, block_number, block_hash)
      values (${t.maker.id}, ${t.fillKey}, ${t.orderId}, ${payer}, ${payer}, ${t.fill.amountOut.toString()},
        ${t.fill.hashlock}, ${t.fill.makerExpiry.toString()}, 'claimed', false, ${t.secret}, ${b}, ${b + 2},
        ${`0x${"cc".repeat(32)}`})`
    const events: Array<[string, string, number]> = [
      ["Locked", t.maker.id, b],
      ["Paid", t.taker.id, b + 1],
      ["Claimed", t.maker.id, b + 2],
      ["PaymentClaimed", t.taker.id, b + 3],
    ]
    for (const [event, venue, n] of events) {
      yield* sql`insert into escrow_events (venue, block_number, log_index, block_hash, tx_hash, contract, event, args)
        values (${venue}, ${n}, 0, ${`0x${"bb".repeat(32)}`}, ${hex32(randomBytes(32))}, ${t.maker.escrow}, ${event},
          ${JSON.stringify({ fillId: t.fillKey })}::jsonb)`
    }
    return t.fillId
  })

interface WireTyped {
  readonly domain: Record<string, unknown>
  readonly types: Record<string, unknown>
  readonly primaryType: string
  readonly message: Record<string, unknown>
}

/** A history item's proof as the route answers it. */
export interface ProofJson {
  readonly quote_set: { typed_data: WireTyped; signature: Hex; signer: Address } | null
  readonly fill: { typed_data: WireTyped; signature: Hex | null; signer: Address; quote_index: number }
  readonly secret: Hex | null
  readonly transactions: ReadonlyArray<{ kind: string; chain_id: number; hash: string; block_number: number }>
}

/**
 * Checks a proof with viem alone, trusting nothing else from the service: both signatures against the named
 * signers, keccak256(secret) = hashlock, the fill names the set's order and sequence and the maker escrow of the
 * set's domain, and the price: amountIn × supply ≥ amountOut × receive on quotes[quote_index], which pays on the
 * fill's taker chain. Returns the list of failed checks (empty = valid).
 */
export const verifyTradeProofOffline = async (
  item: { amount_in: string; amount_out: string },
  proof: ProofJson,
): Promise<Array<string>> => {
  const failed: Array<string> = []
  if (proof.quote_set === null) return ["no quote set"]
  if (proof.fill.signature === null) return ["no fill signature"]
  // biome-ignore lint/suspicious/noExplicitAny: wire typed data straight into viem, as a third party would
  const qs = proof.quote_set.typed_data as any
  // biome-ignore lint/suspicious/noExplicitAny: idem
  const fill = proof.fill.typed_data as any
  const quoteOk = await verifyTypedData({
    ...qs,
    address: proof.quote_set.signer,
    signature: proof.quote_set.signature,
  }).catch(() => false)
  if (!quoteOk) failed.push("quote set signature")
  const fillOk = await verifyTypedData({ ...fill, address: proof.fill.signer, signature: proof.fill.signature }).catch(
    () => false,
  )
  if (!fillOk) failed.push("fill signature")
  const m = fill.message as Record<string, string>
  const s = qs.message as { orderId: string; sequence: string; quotes: Array<Record<string, string>> }
  if (proof.secret === null || keccak256(proof.secret) !== m.hashlock!.toLowerCase()) failed.push("secret")
  if (m.orderId!.toLowerCase() !== s.orderId.toLowerCase()) failed.push("order")
  if (String(m.sequence) !== String(s.sequence)) failed.push("sequence")
  if (String(m.makerChainId) !== String(qs.domain.chainId)) failed.push("maker chain")
  if (m.makerEscrow!.toLowerCase() !== String(qs.domain.verifyingContract).toLowerCase()) failed.push("maker escrow")
  if (m.payer!.toLowerCase() !== proof.fill.signer.toLowerCase()) failed.push("payer")
  const quote = s.quotes[proof.fill.quote_index]
  if (quote === undefined) failed.push("quote index")
  else {
    if (String(quote.chainId) !== String(m.takerChainId)) failed.push("quote chain")
    if (BigInt(m.amountIn!) * BigInt(quote.supply!) < BigInt(m.amountOut!) * BigInt(quote.receive!))
      failed.push("price")
  }
  if (m.amountIn !== item.amount_in || m.amountOut !== item.amount_out) failed.push("amounts")
  return failed
}
