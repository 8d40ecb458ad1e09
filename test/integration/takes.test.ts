/**
 * Takes: POST /v1/takes (routing, reservation, to_sign), POST /v1/takes/{id}/signatures, GET /v1/takes/{id}, the
 * reservation rules of the candidate query and the sweep of unsigned takes, on a real database and two devnet chains
 * (the Fill digests are compared with the deployed escrows' own `hashFill`).
 *
 * Makers are written as rows (funded order in the escrow index, a live identity, a quote set signed by its quote
 * signer): the funding path is tested elsewhere; what matters here is what the take routes do with them.
 */
import { SqlClient } from "@effect/sql"
import { expect, layer } from "@effect/vitest"
import { Deferred, Effect, Fiber } from "effect"
import { type Address, getAddress, type Hex, hashTypedData, keccak256, toHex } from "viem"
import { generatePrivateKey, type PrivateKeyAccount, privateKeyToAccount } from "viem/accounts"
import { settlementEscrowAbi } from "../../src/Chain/artifacts/index.ts"
import { readPermitContext } from "../../src/Chain/TokenReads.ts"
import { AppConfig } from "../../src/Config.ts"
import { quoteSetTypedData } from "../../src/Domain/EscrowTypedData.ts"
import { fillKeyOf } from "../../src/Domain/FillId.ts"
import { SECP256K1_N } from "../../src/Domain/Signature.ts"
import { fillSecretKeyring, openFillSecret } from "../../src/Settlement/FillSecrets.ts"
import { loadQuoteCandidates } from "../../src/Takes/QuoteCandidates.ts"
import { expireUnsignedTakes, signTake } from "../../src/Takes/Repo.ts"
import type { TestChain } from "../support/ChainDevnet.ts"
import { Chains, devnetStack } from "../support/DevnetStack.ts"
import { type RawResponse, rawRequest } from "../support/Http.ts"
import { bearer, post, signIn } from "../support/SignIn.ts"
import { baseUrl } from "../support/TestServer.ts"

const Live = devnetStack()

const code = (res: { json: unknown }) => (res.json as { error?: { code: string } } | undefined)?.error?.code

interface SignItem {
  kind: string
  signer: string
  // biome-ignore lint/suspicious/noExplicitAny: wire typed data
  typed_data: any
  fill_id?: string
}
interface TakeFill {
  fill_id: string
  order_id: string
  sequence: number
  quote_index: number
  amount_in: string
  amount_out: string
  payee: string
  hashlock: string
  maker_expiry: number
  taker_expiry: number
  state: string
  final: boolean
  transactions: Array<unknown>
}
interface Take {
  id: string
  client_take_id: string
  from: string
  to: string
  amount_in: string
  min_out: string
  payer: string
  recipient: string
  max_parts: number
  total_in: string
  total_out: string
  state: string
  final: boolean
  pay_deadline: string
  signed_at: string | null
  fills: Array<TakeFill>
}
interface TakeResponse {
  take: Take
  to_sign: Array<SignItem>
}

const ok = (res: RawResponse) => {
  expect(res.status, res.text).toBe(200)
  return res.json as TakeResponse
}

/**
 * A funded maker order on Hyperliquid quoting payment on Aster at supply:receive (both 6 decimals), min_fill 100 000,
 * its identity's lease live: written as the funding path and the quote route would leave it.
 */
const maker = (p: { available: bigint; quoteSize: bigint; supply: bigint; receive: bigint }) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const { hl, aster } = yield* Chains
    const owner = privateKeyToAccount(generatePrivateKey())
    const signer = privateKeyToAccount(generatePrivateKey())
    const master = owner.address.toLowerCase()
    const orderId = keccak256(toHex(`order-${master}`))
    const identityId = crypto.randomUUID()
    yield* sql`insert into accounts (master, access, created_at) values (${master}, 'granted', now())`
    yield* sql`insert into quote_identities (id, master, signer, kind, generation, lease_expires_at, created_at)
      values (${identityId}, ${master}, ${signer.address.toLowerCase()}, 'credential', 1,
        now() + interval '1 hour', now())`
    yield* sql`insert into orders (id, master, venue, receive_venue, owner_address, state, amount, created_at,
        updated_at, client_order_id, quote_identity_id, quote_signer, fund_deadline, to_sign)
      values (${orderId}, ${master}, 'hyperliquid', 'aster', ${master}, 'funded', ${p.available.toString()},
        now(), now(), 'o-1', ${identityId}, ${signer.address.toLowerCase()}, 0, '[]'::jsonb)`
    yield* sql`insert into escrow_orders (venue, order_id, owner, operator, quote_signer, available, locked,
        created_block, block_number, block_hash)
      values ('hyperliquid', ${orderId}, ${master}, ${hl.deployment.operator.toLowerCase()},
        ${signer.address.toLowerCase()}, ${p.available.toString()}, 0, 1, 1, ${`0x${"00".repeat(32)}`})`
    const payee = privateKeyToAccount(generatePrivateKey()).address.toLowerCase() as Address
    const validUntil = BigInt(Math.floor(Date.now() / 1000) + 600)
    const signature = yield* Effect.promise(() =>
      signer.signTypedData(
        quoteSetTypedData(999, hl.escrow, {
          orderId,
          sequence: 1n,
          generation: 1n,
          quoteSize: p.quoteSize,
          validUntil,
          quotes: [
            {
              chainId: 42161n,
              token: aster.token,
              recipient: payee,
              supply: p.supply,
              receive: p.receive,
              minFill: 100_000n,
            },
          ],
        }),
      ),
    )
    const quote = {
      venue: "aster",
      chain_id: 42161,
      token: aster.token.toLowerCase(),
      recipient: payee,
      supply: p.supply.toString(),
      receive: p.receive.toString(),
      min_fill: "100000",
    }
    yield* sql`insert into quote_sets (id, order_id, quote_identity_id, identity_generation, cancel_epoch, sequence,
        valid_until, quote_size, quotes, signature, active, created_at)
      values (${crypto.randomUUID()}, ${orderId}, ${identityId}, 1, 0, 1, ${new Date(Number(validUntil) * 1000)},
        ${p.quoteSize.toString()}, ${JSON.stringify([quote])}::jsonb, ${signature}, true, now())`
    return { orderId, payee, identityId }
  })

/** A taker: signed in through the API, its own address linked on Aster (the `from` venue). */
const taker = Effect.gen(function* () {
  const base = yield* baseUrl
  const sql = yield* SqlClient.SqlClient
  const account = privateKeyToAccount(generatePrivateKey())
  const token = yield* signIn(base, account)
  yield* sql`insert into linked_accounts (master, venue, address, linked_at)
    values (${account.address.toLowerCase()}, 'aster', ${account.address.toLowerCase()}, now())`
  return { account, token, master: account.address.toLowerCase() }
})

/** Only these makers' sets are live (tests share one database). */
const only = (orderIds: ReadonlyArray<string>) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql`update quote_sets set active = (order_id in ${sql.in(orderIds)})`.pipe(Effect.asVoid),
  )

const takeBody = (payer: string, over: Record<string, unknown> = {}) => ({
  client_take_id: `take-${crypto.randomUUID()}`,
  from: "aster",
  to: "hyperliquid",
  amount_in: "3000000",
  min_out: "1",
  payer,
  recipient: payer,
  max_parts: 8,
  ...over,
})

const candidatesNow = Effect.gen(function* () {
  const { aster } = yield* Chains
  const rows = yield* loadQuoteCandidates({
    from: { id: "aster", chainId: 42161, token: aster.token },
    to: "hyperliquid",
    lockCutoffSeconds: 60,
  })
  return Object.fromEntries(rows.map((r) => [r.order_id, [r.quotable, r.set_remaining]]))
})

/** Signs every item of `to_sign` with the payer's wallet (eth_signTypedData_v4 on the wire typed data). */
const signAll = (who: PrivateKeyAccount, items: ReadonlyArray<SignItem>) =>
  Effect.promise(async () => {
    const permit = await who.signTypedData(items[0]!.typed_data)
    const fills = []
    for (const item of items.slice(1))
      fills.push({ fill_id: item.fill_id!, signature: await who.signTypedData(item.typed_data) })
    return { permit, fills }
  })

/** The escrow's own EIP-712 digest of a wire Fill message. */
const onChainFillDigest = (chain: TestChain, m: Record<string, string | number | boolean>) =>
  Effect.promise(
    () =>
      chain.pub.readContract({
        address: chain.escrow,
        abi: settlementEscrowAbi,
        functionName: "hashFill",
        args: [
          {
            fillId: m.fillId as Hex,
            orderId: m.orderId as Hex,
            sequence: BigInt(m.sequence!),
            makerChainId: BigInt(m.makerChainId!),
            makerEscrow: m.makerEscrow as Address,
            takerChainId: BigInt(m.takerChainId!),
            takerEscrow: m.takerEscrow as Address,
            payer: m.payer as Address,
            payee: m.payee as Address,
            amountIn: BigInt(m.amountIn!),
            recipient: m.recipient as Address,
            amountOut: BigInt(m.amountOut!),
            dex: Number(m.dex),
            toMargin: m.toMargin as boolean,
            hashlock: m.hashlock as Hex,
            makerExpiry: BigInt(m.makerExpiry!),
            takerExpiry: BigInt(m.takerExpiry!),
          },
        ],
      }) as Promise<Hex>,
  )

layer(Live, { timeout: "240 seconds", excludeTestServices: true })("takes", (it) => {
  it.effect("create: route, reservation at once, to_sign with escrow-exact digests, repeat 200 / 409, release", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const sql = yield* SqlClient.SqlClient
      const { hl, aster } = yield* Chains
      const { deployment } = yield* AppConfig
      // A pays 1.00 (2e6 of its 3e6 quotable in this set), B 0.99.
      const A = yield* maker({ available: 3_000_000n, quoteSize: 2_000_000n, supply: 1_000_000n, receive: 1_000_000n })
      const B = yield* maker({ available: 5_000_000n, quoteSize: 5_000_000n, supply: 990_000n, receive: 1_000_000n })
      yield* only([A.orderId, B.orderId])
      const t = yield* taker
      const recipient = privateKeyToAccount(generatePrivateKey()).address
      const body = takeBody(t.account.address, { recipient, min_out: "2990000" })
      const preview = (yield* post(`${base}/v1/takes/preview`, {
        from: "aster",
        to: "hyperliquid",
        amount_in: "3000000",
      })).json as { fills: Array<{ order_id: string; amount_in: string; amount_out: string }>; total_out: string }

      const created = ok(yield* post(`${base}/v1/takes`, body, bearer(t.token)))
      const { take, to_sign } = created
      expect(take).toMatchObject({
        client_take_id: body.client_take_id,
        from: "aster",
        to: "hyperliquid",
        amount_in: "3000000",
        min_out: "2990000",
        payer: t.master,
        recipient: recipient.toLowerCase(),
        max_parts: 8,
        total_in: "3000000",
        total_out: "2990000",
        state: "reserved",
        final: false,
        signed_at: null,
      })
      // The same route the preview showed: best price first.
      expect(take.fills.map((f) => [f.order_id, f.amount_in, f.amount_out])).toEqual(
        preview.fills.map((f) => [f.order_id, f.amount_in, f.amount_out]),
      )
      expect(take.fills.map((f) => [f.order_id, f.state, f.final])).toEqual([
        [A.orderId, "reserved", false],
        [B.orderId, "reserved", false],
      ])
      const payDeadline = Date.parse(take.pay_deadline) / 1000
      expect(Math.abs(payDeadline - (Date.now() / 1000 + deployment.limits.pay_window_seconds))).toBeLessThan(10)

      // to_sign: the permit for Σ amount_in to the Aster escrow, then one Fill per fill.
      expect(to_sign.map((i) => [i.kind, i.signer, i.fill_id])).toEqual([
        ["permit", t.master, undefined],
        ...take.fills.map((f) => ["margin_move", t.master, f.fill_id]),
      ])
      const permitContext = yield* readPermitContext(aster.pub, aster.token, t.master)
      expect(to_sign[0]!.typed_data).toEqual({
        domain: { ...permitContext.domain },
        types: {
          Permit: [
            { name: "owner", type: "address" },
            { name: "spender", type: "address" },
            { name: "value", type: "uint256" },
            { name: "nonce", type: "uint256" },
            { name: "deadline", type: "uint256" },
          ],
        },
        primaryType: "Permit",
        message: {
          owner: getAddress(t.master),
          spender: getAddress(aster.escrow),
          value: "3000000",
          nonce: permitContext.nonce.toString(),
          deadline: String(take.fills[0]!.maker_expiry),
        },
      })
      const stored = yield* sql<{ id: string; secret_ciphertext: Buffer; hashlock: string; fill_key: string }>`
        select id::text as id, secret_ciphertext, hashlock, fill_key from fills where take_id = ${take.id}::uuid`
      for (const [i, f] of take.fills.entries()) {
        const item = to_sign[i + 1]!
        const m = item.typed_data.message
        const order = [A, B][i]!
        expect(item.typed_data.domain).toEqual({
          name: "SettlementEscrow",
          version: "1",
          chainId: 42161,
          verifyingContract: getAddress(aster.escrow),
        })
        expect(m).toEqual({
          fillId: fillKeyOf(f.fill_id),
          orderId: order.orderId,
          sequence: "1",
          makerChainId: "999",
          makerEscrow: hl.escrow.toLowerCase(),
          takerChainId: "42161",
          takerEscrow: aster.escrow.toLowerCase(),
          payer: t.master,
          payee: order.payee,
          amountIn: f.amount_in,
          recipient: recipient.toLowerCase(),
          amountOut: f.amount_out,
          dex: 0,
          toMargin: true,
          hashlock: f.hashlock,
          makerExpiry: String(f.maker_expiry),
          takerExpiry: String(f.taker_expiry),
        })
        expect(f.maker_expiry).toBe(payDeadline + deployment.settlement.maker_timeout_seconds)
        // The escrows require takerExpiry ≥ makerExpiry + REVEAL_WINDOW.
        const reveal = yield* Effect.promise(() =>
          aster.pub.readContract({ address: aster.escrow, abi: settlementEscrowAbi, functionName: "REVEAL_WINDOW" }),
        )
        expect(BigInt(f.taker_expiry - f.maker_expiry) >= reveal).toBe(true)
        // The digest the wallet signs is the one both escrows compute.
        const digest = hashTypedData(item.typed_data)
        expect(yield* onChainFillDigest(aster, m)).toBe(digest)
        expect(yield* onChainFillDigest(hl, m)).toBe(digest)
        // The secret is stored sealed and opens to the hashlock; it is nowhere in the answer.
        const row = stored.find((r) => r.id === f.fill_id)!
        expect(row.fill_key).toBe(fillKeyOf(f.fill_id))
        const secret = openFillSecret(fillSecretKeyring(deployment), row.fill_key, row.hashlock, row.secret_ciphertext)
        expect(secret).toBeDefined()
      }

      // Reserved at once: A's set is used up, B's quotable is down by its fill.
      const after = yield* candidatesNow
      expect(after[A.orderId]).toEqual(["1000000", "0"])
      expect(after[B.orderId]).toEqual(["4010000", "4010000"])
      const previewAfter = (yield* post(`${base}/v1/takes/preview`, {
        from: "aster",
        to: "hyperliquid",
        amount_in: "3000000",
      })).json as { fills: Array<{ order_id: string; amount_out: string }> }
      expect(previewAfter.fills.map((f) => [f.order_id, f.amount_out])).toEqual([[B.orderId, "2970000"]])

      // The same request again: the same take and to_sign; other parameters: 409, nothing new.
      const again = ok(yield* post(`${base}/v1/takes`, body, bearer(t.token)))
      expect(again).toEqual(created)
      for (const other of [{ amount_in: "3000001" }, { min_out: "1" }, { max_parts: 2 }, { recipient: t.master }]) {
        const res = yield* post(`${base}/v1/takes`, { ...body, ...other }, bearer(t.token))
        expect([res.status, code(res)], JSON.stringify(other)).toEqual([409, "STATE_CONFLICT"])
      }
      const count = yield* sql<{ n: number }>`select count(*)::int as n from takes where master = ${t.master}`
      expect(count[0]!.n).toBe(1)
      const journaled = yield* sql<{ payload: { take_id: string; total_out: string } }>`
        select payload from journal where kind = 'take.created' and master = ${t.master}`
      expect(journaled.map((j) => [j.payload.take_id, j.payload.total_out])).toEqual([[take.id, "2990000"]])

      // GET answers the same take with its to_sign, and the snapshot cursor.
      const got = yield* rawRequest(`${base}/v1/takes/${take.id}`, { headers: bearer(t.token) })
      expect(ok(got)).toEqual(created)
      expect(got.headers["x-event-cursor"]).toMatch(/^[0-9]+$/)

      // The pay window passes unsigned: the reservations release at once (before any sweep), the take reads
      // expired and can no longer be signed; the sweep then marks the rows.
      yield* sql`update takes set pay_deadline = now() - interval '1 second' where id = ${take.id}::uuid`
      const released = yield* candidatesNow
      expect(released[A.orderId]).toEqual(["3000000", "2000000"])
      expect(released[B.orderId]).toEqual(["5000000", "5000000"])
      const expired = ok(yield* rawRequest(`${base}/v1/takes/${take.id}`, { headers: bearer(t.token) }))
      expect([expired.take.state, expired.take.final, ...expired.take.fills.map((f) => f.state)]).toEqual([
        "expired",
        true,
        "expired",
        "expired",
      ])
      const late = yield* post(
        `${base}/v1/takes/${take.id}/signatures`,
        yield* signAll(t.account, to_sign),
        bearer(t.token),
      )
      expect([late.status, code(late)]).toEqual([409, "STATE_CONFLICT"])
      expect(yield* expireUnsignedTakes()).toBeGreaterThanOrEqual(1)
      const rows = yield* sql<{ state: string; final: boolean }>`
        select state, final from fills where take_id = ${take.id}::uuid`
      expect(rows).toEqual([
        { state: "expired", final: true },
        { state: "expired", final: true },
      ])
      const takeRow = yield* sql<{ state: string }>`select state from takes where id = ${take.id}::uuid`
      expect(takeRow[0]!.state).toBe("expired")
      expect(yield* expireUnsignedTakes()).toBe(0)
      const expiredEvents = yield* sql`select 1 from journal where kind = 'take.expired' and master = ${t.master}`
      expect(expiredEvents.length).toBe(1)
      // The same client id still answers the (expired) take: a new take needs a new client id.
      expect(ok(yield* post(`${base}/v1/takes`, body, bearer(t.token))).take.state).toBe("expired")
    }),
  )

  it.effect("signatures: verified against the payer, stored once, idempotent; owner only", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const sql = yield* SqlClient.SqlClient
      const A = yield* maker({ available: 3_000_000n, quoteSize: 3_000_000n, supply: 1_000_000n, receive: 1_000_000n })
      const B = yield* maker({ available: 3_000_000n, quoteSize: 3_000_000n, supply: 990_000n, receive: 1_000_000n })
      yield* only([A.orderId, B.orderId])
      const t = yield* taker
      const { take, to_sign } = ok(
        yield* post(`${base}/v1/takes`, takeBody(t.account.address, { amount_in: "4000000" }), bearer(t.token)),
      )
      expect(take.fills.length).toBe(2)
      const good = yield* signAll(t.account, to_sign)
      const url = `${base}/v1/takes/${take.id}/signatures`
      const stranger = privateKeyToAccount(generatePrivateKey())
      const byStranger = yield* signAll(stranger, to_sign)
      // A high-s twin of a valid signature: s' = n − s, v flipped.
      const highS = (sig: Hex): Hex => {
        const s = BigInt(`0x${sig.slice(66, 130)}`)
        const v = Number.parseInt(sig.slice(130), 16)
        return `${sig.slice(0, 66)}${(SECP256K1_N - s).toString(16).padStart(64, "0")}${(v === 27 ? 28 : 27).toString(16)}` as Hex
      }
      const [f0, f1] = good.fills as [{ fill_id: string; signature: Hex }, { fill_id: string; signature: Hex }]
      const refusals: Array<[unknown, number, string]> = [
        [{ ...good, permit: byStranger.permit }, 422, "SIGNATURE_INVALID"],
        [{ ...good, fills: [f0, byStranger.fills[1]] }, 422, "SIGNATURE_INVALID"],
        // The permit's signature for a Fill and vice versa.
        [{ ...good, permit: f0.signature }, 422, "SIGNATURE_INVALID"],
        [{ ...good, fills: [{ ...f0, signature: good.permit }, f1] }, 422, "SIGNATURE_INVALID"],
        [{ ...good, permit: highS(good.permit as Hex) }, 422, "SIGNATURE_MALLEABLE"],
        [{ ...good, permit: `0x${"11".repeat(64)}` }, 422, "SIGNATURE_MALFORMED"],
        [{ ...good, permit: `0x${"11".repeat(66)}` }, 422, "SIGNATURE_MALFORMED"],
        [{ ...good, fills: [f0] }, 400, "INVALID_REQUEST"],
        [{ ...good, fills: [f0, f0] }, 400, "INVALID_REQUEST"],
        [{ ...good, fills: [f0, { ...f1, fill_id: crypto.randomUUID() }] }, 400, "INVALID_REQUEST"],
        [{ ...good, fills: [] }, 400, "INVALID_REQUEST"],
        [{ ...good, extra: 1 }, 400, "INVALID_REQUEST"],
        [{ ...good, fills: [{ ...f0, extra: 1 }, f1] }, 400, "INVALID_REQUEST"],
        [{ permit: good.permit }, 400, "INVALID_REQUEST"],
        [{ ...good, permit: "0x12" }, 422, "SIGNATURE_MALFORMED"],
        [{ ...good, permit: "not hex" }, 400, "INVALID_REQUEST"],
      ]
      for (const [payload, status, c] of refusals) {
        const res = yield* post(url, payload, bearer(t.token))
        expect([res.status, code(res)], JSON.stringify(payload).slice(0, 200)).toEqual([status, c])
      }
      // Another account can neither sign nor see the take.
      const other = yield* taker
      const foreign = yield* post(url, good, bearer(other.token))
      expect([foreign.status, code(foreign)]).toEqual([404, "NOT_FOUND"])
      const peek = yield* rawRequest(`${base}/v1/takes/${take.id}`, { headers: bearer(other.token) })
      expect([peek.status, code(peek)]).toEqual([404, "NOT_FOUND"])
      // Nothing changed so far.
      const before = yield* sql<{ state: string; permit_signature: string | null }>`
        select state, permit_signature from takes where id = ${take.id}::uuid`
      expect(before).toEqual([{ state: "reserved", permit_signature: null }])

      // The payer's signatures (fills in any order, yParity-style v accepted): signed.
      const yParity = (sig: Hex): Hex =>
        `${sig.slice(0, 130)}${Number.parseInt(sig.slice(130), 16) === 27 ? "00" : "01"}` as Hex
      const signed = ok(yield* post(url, { permit: yParity(good.permit as Hex), fills: [f1, f0] }, bearer(t.token)))
      expect(signed.take.state).toBe("signed")
      expect(signed.take.signed_at).not.toBeNull()
      expect(signed.take.fills.map((f) => f.state)).toEqual(["signed", "signed"])
      expect(signed.to_sign).toEqual(to_sign)
      const rows = yield* sql<{ id: string; signature: string }>`
        select id::text as id, signature from fills where take_id = ${take.id}::uuid`
      for (const f of good.fills) {
        expect(rows.find((r) => r.id === f.fill_id)!.signature).toBe(f.signature.toLowerCase())
      }
      const takeRow = yield* sql<{ permit_signature: string }>`
        select permit_signature from takes where id = ${take.id}::uuid`
      expect(takeRow[0]!.permit_signature).toBe(good.permit.toLowerCase())
      // Again: 200, the same take, stored once, one event.
      const again = ok(yield* post(url, good, bearer(t.token)))
      expect(again.take.state).toBe("signed")
      expect(again.take.signed_at).toBe(signed.take.signed_at)
      const events = yield* sql`select 1 from journal where kind = 'take.signed' and master = ${t.master}`
      expect(events.length).toBe(1)
      // Invalid signatures are still refused on a signed take.
      const bad = yield* post(url, { ...good, permit: byStranger.permit }, bearer(t.token))
      expect([bad.status, code(bad)]).toEqual([422, "SIGNATURE_INVALID"])
      // A signed take is past its reservation window's release: a signed fill keeps counting after the deadline.
      yield* sql`update takes set pay_deadline = now() - interval '1 second' where id = ${take.id}::uuid`
      const cands = yield* candidatesNow
      expect(cands[A.orderId]![0]).toBe(String(3_000_000n - BigInt(take.fills[0]!.amount_out)))
      expect(yield* expireUnsignedTakes()).toBe(0)
      const got = ok(yield* rawRequest(`${base}/v1/takes/${take.id}`, { headers: bearer(t.token) }))
      expect(got.take.state).toBe("signed")
      // A fill's transactions come from its relayer keys (here a lock the Settlement actor would have submitted).
      const fid = take.fills[0]!.fill_id
      const hash = `0x${"ab".repeat(32)}`
      yield* sql`insert into relayer_requests (idempotency_key, venue, chain_id, signer, target, function_name,
          calldata, status, tx_hash)
        values (${`lock:${fid}`}, 'hyperliquid', 999, ${`0x${"01".repeat(20)}`}, ${`0x${"02".repeat(20)}`}, 'lock',
          '0x', 'pending', ${hash})`
      yield* sql`update fills set lock_key = ${`lock:${fid}`} where id = ${fid}::uuid`
      const withTx = ok(yield* rawRequest(`${base}/v1/takes/${take.id}`, { headers: bearer(t.token) }))
      expect(withTx.take.fills[0]!.transactions).toEqual([
        { kind: "lock", chain_id: 999, hash, status: "pending", error: "", at: expect.any(String) },
      ])
      expect(withTx.take.fills[1]!.transactions).toEqual([])

      // The lock becomes final and indexed: the watcher moves the amount from available to locked in the same
      // write, so it stops counting as a reservation (no double count) while the set keeps counting it.
      const f = take.fills[0]!
      yield* sql`insert into escrow_locks (venue, fill_id, order_id, payer, recipient, amount_out, hashlock, expiry,
          state, created_block, block_number, block_hash)
        values ('hyperliquid', ${fillKeyOf(f.fill_id)}, ${A.orderId}, ${t.master}, ${t.master}, ${f.amount_out},
          ${f.hashlock}, ${f.maker_expiry}, 'locked', 2, 2, ${`0x${"00".repeat(32)}`})`
      yield* sql`update escrow_orders set available = available - ${f.amount_out}::numeric,
          locked = locked + ${f.amount_out}::numeric
        where venue = 'hyperliquid' and order_id = ${A.orderId}`
      yield* sql`update fills set state = 'locked' where id = ${f.fill_id}::uuid`
      const locked = yield* candidatesNow
      expect(locked[A.orderId]).toEqual(["0", "0"])
      // Refunded on chain: the escrow gives the amount and the set's capacity back; the fill is final.
      yield* sql`update escrow_locks set state = 'refunded' where fill_id = ${fillKeyOf(f.fill_id)}`
      yield* sql`update escrow_orders set available = 3000000, locked = 0
        where venue = 'hyperliquid' and order_id = ${A.orderId}`
      yield* sql`update fills set state = 'refunded', final = true where id = ${f.fill_id}::uuid`
      expect((yield* candidatesNow)[A.orderId]).toEqual(["3000000", "3000000"])
    }),
  )

  it.effect("refusals: bad input, NO_LIQUIDITY, an unlinked payer; envelope, no 5xx, nothing written", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const sql = yield* SqlClient.SqlClient
      const A = yield* maker({ available: 2_000_000n, quoteSize: 2_000_000n, supply: 1_000_000n, receive: 1_000_000n })
      yield* only([A.orderId])
      const t = yield* taker
      const notLinked = privateKeyToAccount(generatePrivateKey()).address
      const body = takeBody(t.account.address, { amount_in: "1000000" })
      const refusals: Array<[Record<string, unknown>, number, string]> = [
        [{ ...body, min_out: "1000001" }, 422, "NO_LIQUIDITY"],
        [{ ...body, amount_in: "99999" }, 422, "NO_LIQUIDITY"],
        [{ ...body, from: "hyperliquid", to: "aster" }, 422, "PAYER_NOT_LINKED"],
        [{ ...body, payer: notLinked }, 422, "PAYER_NOT_LINKED"],
        [{ ...body, from: "nowhere" }, 404, "NOT_FOUND"],
        [{ ...body, to: "nowhere" }, 404, "NOT_FOUND"],
        [{ ...body, to: "aster" }, 400, "INVALID_REQUEST"],
        [{ ...body, amount_in: "0" }, 400, "INVALID_REQUEST"],
        [{ ...body, amount_in: "-1" }, 400, "INVALID_REQUEST"],
        [{ ...body, amount_in: 1000000 }, 400, "INVALID_REQUEST"],
        [{ ...body, amount_in: (2n ** 256n).toString() }, 400, "INVALID_REQUEST"],
        [{ ...body, min_out: (2n ** 256n).toString() }, 400, "INVALID_REQUEST"],
        [{ ...body, min_out: "1.5" }, 400, "INVALID_REQUEST"],
        [{ ...body, max_parts: 0 }, 400, "INVALID_REQUEST"],
        [{ ...body, max_parts: 9 }, 400, "INVALID_REQUEST"],
        [{ ...body, max_parts: 1.5 }, 400, "INVALID_REQUEST"],
        [{ ...body, payer: "0x1234" }, 400, "INVALID_REQUEST"],
        [{ ...body, recipient: "nobody" }, 400, "INVALID_REQUEST"],
        [{ ...body, recipient: `0x${"0".repeat(40)}` }, 400, "INVALID_REQUEST"],
        [{ ...body, client_take_id: "" }, 400, "INVALID_REQUEST"],
        [{ ...body, client_take_id: "x".repeat(65) }, 400, "INVALID_REQUEST"],
        [{ ...body, client_take_id: "bad id" }, 400, "INVALID_REQUEST"],
        // Reserved for a transfer's take: a take of one's own under it would make that transfer's take a 409.
        [{ ...body, client_take_id: `transfer:${crypto.randomUUID()}` }, 400, "INVALID_REQUEST"],
        [{ ...body, extra: true }, 400, "INVALID_REQUEST"],
        [{ from: "aster", to: "hyperliquid", amount_in: "1000000" }, 400, "INVALID_REQUEST"],
      ]
      for (const [payload, status, c] of refusals) {
        const res = yield* post(`${base}/v1/takes`, payload, bearer(t.token))
        expect([res.status, code(res)], JSON.stringify(payload)).toEqual([status, c])
        expect((res.json as { error: { request_id: string } }).error.request_id).toBe(res.headers["x-request-id"])
      }
      const nothing = yield* sql`select 1 from takes where master = ${t.master}`
      expect(nothing.length).toBe(0)
      expect((yield* candidatesNow)[A.orderId]).toEqual(["2000000", "2000000"])
      // The lease lapses between preview and take, or the identity moves to a new generation: the signed set is
      // no longer admissible, so the take finds nothing although the preview did a moment before.
      const seen = (yield* post(`${base}/v1/takes/preview`, { from: "aster", to: "hyperliquid", amount_in: "1000000" }))
        .json as { fills: Array<unknown> }
      expect(seen.fills.length).toBe(1)
      yield* sql`update quote_identities set lease_expires_at = now() - interval '1 second' where id = ${A.identityId}`
      const lapsed = yield* post(`${base}/v1/takes`, body, bearer(t.token))
      expect([lapsed.status, code(lapsed)]).toEqual([422, "NO_LIQUIDITY"])
      yield* sql`update quote_identities set lease_expires_at = now() + interval '1 hour', generation = 2
        where id = ${A.identityId}`
      const stale = yield* post(`${base}/v1/takes`, body, bearer(t.token))
      expect([stale.status, code(stale)]).toEqual([422, "NO_LIQUIDITY"])
      yield* sql`update quote_identities set generation = 1 where id = ${A.identityId}`
      expect((yield* sql`select 1 from takes where master = ${t.master}`).length).toBe(0)
      // The route's other refusals.
      const gets: Array<[string, number, string]> = [
        [`${base}/v1/takes/not-a-uuid`, 400, "INVALID_REQUEST"],
        [`${base}/v1/takes/${crypto.randomUUID()}`, 404, "NOT_FOUND"],
      ]
      for (const [url, status, c] of gets) {
        const res = yield* rawRequest(url, { headers: bearer(t.token) })
        expect([res.status, code(res)], url).toEqual([status, c])
      }
      const unknown = yield* post(
        `${base}/v1/takes/${crypto.randomUUID()}/signatures`,
        {
          permit: `0x${"11".repeat(65)}`,
          fills: [{ fill_id: crypto.randomUUID(), signature: `0x${"11".repeat(65)}` }],
        },
        bearer(t.token),
      )
      expect([unknown.status, code(unknown)]).toEqual([404, "NOT_FOUND"])
      // Access not granted: ACCESS_REQUIRED before anything else.
      yield* sql`update accounts set access = 'required' where master = ${t.master}`
      const gated = yield* post(`${base}/v1/takes`, body, bearer(t.token))
      expect([gated.status, code(gated)]).toEqual([403, "ACCESS_REQUIRED"])
      yield* sql`update accounts set access = 'granted' where master = ${t.master}`
      // max_parts 1 takes the best single fill only.
      const one = ok(yield* post(`${base}/v1/takes`, { ...body, amount_in: "3000000", max_parts: 1 }, bearer(t.token)))
      expect(one.take.fills.map((f) => f.amount_out)).toEqual(["2000000"])
    }),
  )

  it.effect(
    "a signer racing another: its snapshot showed the take open, the other's commit decides: AlreadySigned",
    () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const sql = yield* SqlClient.SqlClient
        const A = yield* maker({
          available: 1_000_000n,
          quoteSize: 1_000_000n,
          supply: 1_000_000n,
          receive: 1_000_000n,
        })
        yield* only([A.orderId])
        const t = yield* taker
        const body = takeBody(t.account.address, { amount_in: "500000" })
        const { take } = ok(yield* post(`${base}/v1/takes`, body, bearer(t.token)))
        // signTake stores what its caller verified; these stand in for verified signatures.
        const sign = (byte: string) =>
          signTake({
            takeId: take.id,
            master: t.master,
            permitSignature: `0x${byte.repeat(65)}`,
            fillSignatures: new Map(take.fills.map((f) => [f.fill_id, `0x${byte.repeat(65)}`])),
          })
        const holding = yield* Deferred.make<void>()
        const release = yield* Deferred.make<void>()
        // The first signer's statement runs in a transaction held open: the take's row stays locked, uncommitted.
        const first = yield* Effect.fork(
          sql.withTransaction(
            Effect.gen(function* () {
              const outcome = yield* sign("aa")
              yield* Deferred.succeed(holding, undefined)
              yield* Deferred.await(release)
              return outcome
            }),
          ),
        )
        yield* Deferred.await(holding)
        // The second's snapshot predates that commit; its update waits for the row, then finds it signed.
        const second = yield* Effect.fork(sign("bb"))
        yield* Effect.sleep("300 millis")
        yield* Deferred.succeed(release, undefined)
        expect(yield* Fiber.join(first)).toEqual({ _tag: "Signed" })
        expect(yield* Fiber.join(second)).toEqual({ _tag: "AlreadySigned" })
        const stored = yield* sql<{ permit_signature: string }>`
        select permit_signature from takes where id = ${take.id}::uuid`
        expect(stored[0]!.permit_signature).toBe(`0x${"aa".repeat(65)}`)
        const fills = yield* sql<{ state: string; signature: string }>`
        select state, signature from fills where take_id = ${take.id}::uuid`
        expect(fills.map((f) => [f.state, f.signature])).toEqual(
          take.fills.map(() => ["signed", `0x${"aa".repeat(65)}`]),
        )
        const rows = yield* sql`select 1 from journal where kind = 'take.signed' and payload ->> 'take_id' = ${take.id}`
        expect(rows.length).toBe(1)
        // Closed and missing: a take past its window, and another master's.
        yield* sql`update takes set state = 'reserved', signed_at = null, pay_deadline = now() - interval '1 second'
        where id = ${take.id}::uuid`
        expect(yield* sign("cc")).toEqual({ _tag: "Closed", state: "expired" })
        expect(
          yield* signTake({ takeId: take.id, master: "0x00", permitSignature: "0x", fillSignatures: new Map() }),
        ).toEqual({ _tag: "Missing" })
      }),
  )

  it.effect(
    "a set's remaining counts its live reservations and locked or claimed fills, not refunds or other sets",
    () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const sql = yield* SqlClient.SqlClient
        const A = yield* maker({
          available: 10_000_000n,
          quoteSize: 5_000_000n,
          supply: 1_000_000n,
          receive: 1_000_000n,
        })
        yield* only([A.orderId])
        const t = yield* taker
        const body = takeBody(t.account.address, { amount_in: "1000000", min_out: "1000000", max_parts: 1 })
        const res = yield* post(`${base}/v1/takes`, body, bearer(t.token))
        expect(res.status, res.text).toBe(200)
        const take = (res.json as TakeResponse).take
        // A live reservation: out of the order (quotable) and of the set (remaining).
        expect((yield* candidatesNow)[A.orderId]).toEqual(["9000000", "4000000"])

        // Its fill names both masters (migrations/0036: set as the take's statement inserts it; trades' scope=mine).
        const masters = yield* sql<{ named: boolean }>`
        select f.taker_master = t.master and f.maker_master = o.master as named
        from fills f join takes t on t.id = f.take_id join orders o on o.id = f.order_id
        where f.take_id = ${take.id}::uuid`
        expect(masters).toEqual([{ named: true }])
        // Its lock indexed (as the watcher writes it): the order's available is the chain's (here the hand-written
        // 10M), and the set counts the locked fill.
        const lock = (state: string) => sql`
        insert into escrow_locks (venue, fill_id, order_id, payer, recipient, amount_out, hashlock, expiry, state,
          created_block, block_number, block_hash)
        select f.maker_venue, f.fill_key, f.order_id, f.payer, f.recipient, f.amount_out, f.hashlock, f.maker_expiry,
          ${state}, 1, 1, ${`0x${"00".repeat(32)}`}
        from fills f where f.take_id = ${take.id}::uuid
        on conflict (venue, fill_id) do update set state = excluded.state`
        const fill = (state: string, sequence = 1) => sql`
        update fills set state = ${state}, final = ${state !== "locked"}, sequence = ${sequence}
        where take_id = ${take.id}::uuid`
        yield* lock("locked")
        yield* fill("locked")
        expect((yield* candidatesNow)[A.orderId]).toEqual(["10000000", "4000000"])
        // Refunded in the index while the fill is not final yet: the set has it back at once; and once final.
        yield* lock("refunded")
        expect((yield* candidatesNow)[A.orderId]).toEqual(["10000000", "5000000"])
        yield* fill("refunded")
        expect((yield* candidatesNow)[A.orderId]).toEqual(["10000000", "5000000"])
        // Claimed and the fill settled (final; hand-written after the refund): the escrow's filledOut keeps it.
        yield* lock("claimed")
        yield* fill("settled")
        expect((yield* candidatesNow)[A.orderId]).toEqual(["10000000", "4000000"])
        // A settled fill of another set (sequence 0) is not this set's.
        yield* fill("settled", 0)
        expect((yield* candidatesNow)[A.orderId]).toEqual(["10000000", "5000000"])
        // Hand-written: gone before a watcher's integrity check reads it.
        yield* sql`delete from escrow_locks where order_id = ${A.orderId}`
      }),
  )

  it.effect("ten concurrent takes on one order never over-allocate it", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const sql = yield* SqlClient.SqlClient
      const A = yield* maker({ available: 5_000_000n, quoteSize: 5_000_000n, supply: 1_000_000n, receive: 1_000_000n })
      yield* only([A.orderId])
      const takers = yield* Effect.all(
        Array.from({ length: 10 }, () => taker),
        { concurrency: 5 },
      )
      const answers = yield* Effect.all(
        takers.map((t) =>
          post(
            `${base}/v1/takes`,
            takeBody(t.account.address, { amount_in: "700000", min_out: "700000", max_parts: 1 }),
            bearer(t.token),
          ),
        ),
        { concurrency: "unbounded" },
      )
      const statuses = answers.map((a) => [a.status, code(a) ?? "ok"])
      // 7 × 700 000 = 4.9e6 ≤ 5e6; the eighth would need 700 000 of the 100 000 left.
      expect(statuses.filter(([s]) => s === 200).length, JSON.stringify(statuses)).toBe(7)
      expect(statuses.filter(([s, c]) => s === 422 && c === "NO_LIQUIDITY").length).toBe(3)
      const reserved = yield* sql<{ total: string }>`
        select coalesce(sum(amount_out), 0)::text as total from fills where order_id = ${A.orderId}`
      expect(reserved[0]!.total).toBe("4900000")
      expect((yield* candidatesNow)[A.orderId]).toEqual(["100000", "100000"])
      // The same request three times at once (a client retrying over a lost response): one take, answered thrice;
      // the later ones must not route over what the first reserved (that would be NO_LIQUIDITY here).
      const t = takers[0]!
      const same = takeBody(t.account.address, { amount_in: "100000", min_out: "100000", max_parts: 1 })
      const repeats = yield* Effect.all(
        Array.from({ length: 3 }, () => post(`${base}/v1/takes`, same, bearer(t.token))),
        { concurrency: "unbounded" },
      )
      const ids = repeats.map((r) => {
        expect(r.status, r.text).toBe(200)
        return (r.json as TakeResponse).take.id
      })
      expect(new Set(ids).size).toBe(1)
      expect((yield* candidatesNow)[A.orderId]).toEqual(["0", "0"])
      // Its signatures posted four times at once (a retrying client): each answered signed with the same signed_at,
      // stored once, one take.signed row.
      const mine = repeats[0]!.json as TakeResponse
      const signatures = yield* signAll(t.account, mine.to_sign)
      const signs = yield* Effect.all(
        Array.from({ length: 4 }, () => post(`${base}/v1/takes/${ids[0]}/signatures`, signatures, bearer(t.token))),
        { concurrency: "unbounded" },
      )
      const signedAt = signs.map((r) => {
        expect(r.status, r.text).toBe(200)
        return (r.json as TakeResponse).take.signed_at
      })
      expect(new Set(signedAt).size).toBe(1)
      expect(signedAt[0]).not.toBeNull()
      const signedRows = yield* sql`
        select 1 from journal where kind = 'take.signed' and payload ->> 'take_id' = ${ids[0]!}`
      expect(signedRows.length).toBe(1)
    }),
  )
})
