/**
 * Transfer intents on the devnet (two anvil chains with the real contracts, the venue simulators, the
 * WithdrawalDesk running): creation with the take at once when the payer's wallet covers amount_in, a withdrawal
 * preparation for the shortfall otherwise (signed and submitted through POST /v1/withdrawals, relayed by the desk,
 * then the TransferDesk creates the take), idempotency by client_transfer_id, listing pages, cancel rules, bad
 * inputs answered with the envelope and nothing changed, and another master seeing nothing.
 */

import { HttpClient, HttpClientError } from "@effect/platform"
import { SqlClient } from "@effect/sql"
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { encodeFunctionData, type Hex } from "viem"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { pendingKeys as deskPending, stepTransferDesk } from "../../actors/TransferDesk.ts"
import { mockUSDCAbi } from "../../src/Chain/artifacts/index.ts"
import { ChainClients } from "../../src/Chain/ChainClients.ts"
import { makeApiClient, recoverable, request } from "../../src/Client/ApiClient.ts"
import { SecureRandom } from "../../src/SecureRandom.ts"
import { account, sendCalls } from "../support/ChainDevnet.ts"
import { rawRequest } from "../support/Http.ts"
import { bearer, post, signIn } from "../support/SignIn.ts"
import { baseUrl } from "../support/TestServer.ts"
import type { VenueNode } from "../support/VenueNode.ts"
import {
  code,
  get,
  inState,
  lower,
  submit,
  submitFunding,
  USDC,
  WithdrawalDevnet,
  waitFor,
  withdrawalDevnet,
} from "../support/WithdrawalDevnet.ts"

const Live = withdrawalDevnet({ venues: ["hyperliquid", "aster"] })

const fresh = () => privateKeyToAccount(generatePrivateKey())
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/

interface TransferView {
  readonly id: string
  readonly client_transfer_id: string
  readonly client_take_id: string
  readonly from: string
  readonly to: string
  readonly amount_in: string
  readonly min_out: string
  readonly max_parts: number
  readonly payer: string
  readonly recipient: string
  readonly from_chain_id: number
  readonly to_chain_id: number
  // biome-ignore lint/suspicious/noExplicitAny: wire typed data
  readonly withdrawal_preparation: { amount: string; typed_data: any; created_at: string } | null
  readonly withdrawal: { id: string; state: string; amount: string; destination: string } | null
  readonly take_id: string | null
  readonly take_final: boolean | null
  readonly cancelled_at: string | null
  readonly created_at: string
}

/** Mints `amount` of the chain's token to `to` (MockUSDC's mint is open). */
const mint = (node: VenueNode, to: string, amount: bigint) =>
  Effect.promise(() =>
    sendCalls(node.chain, account(7), [
      {
        to: node.chain.token,
        data: encodeFunctionData({ abi: mockUSDCAbi, functionName: "mint", args: [to as Hex, amount] }),
      },
    ]),
  )

/** A Hyperliquid account: SIWE sign-in, the master address linked (payer on `hyperliquid`), margin credited. */
const hyperliquidAccount = (base: string, node: VenueNode, credit: bigint) =>
  Effect.gen(function* () {
    const acct = fresh()
    const token = yield* signIn(base, acct)
    const link = yield* post(`${base}/v1/accounts`, { venue: "hyperliquid", address: acct.address }, bearer(token))
    expect(link.status).toBe(201)
    if (credit > 0n) node.sim.control.credit(acct.address, credit)
    return { account: acct, token, address: lower(acct.address) }
  })

const createTransfer = (base: string, token: string, body: unknown) => post(`${base}/v1/transfers`, body, bearer(token))

const listPage = (base: string, token: string, cursor?: string) =>
  get(`${base}/v1/transfers${cursor === undefined ? "" : `?cursor=${encodeURIComponent(cursor)}`}`, token)

const cancel = (base: string, token: string, id: string) => post(`${base}/v1/transfers/${id}/cancel`, {}, bearer(token))

/** One desk pass driven by the test: the TransferDesk entity's step over every transfer it still has to drive. */
const sweep = Effect.flatMap(deskPending, (ids) => Effect.forEach(ids, stepTransferDesk, { discard: true })).pipe(
  Effect.provide(ChainClients.Live),
  Effect.provide(SecureRandom.Live),
)

const counts = Effect.flatMap(SqlClient.SqlClient, (sql) =>
  sql<{ t: string; k: string; p: string; j: string }>`
    select (select count(*) from transfers)::text as t, (select count(*) from takes)::text as k,
           (select count(*) from withdrawal_preparations)::text as p, (select count(*) from journal)::text as j`.pipe(
    Effect.map((rows) => rows[0]!),
  ),
)

const journalOf = (transferId: string) =>
  Effect.flatMap(
    SqlClient.SqlClient,
    (sql) =>
      sql<{ kind: string; master: string }>`
      select kind, master from journal where payload->>'transfer_id' = ${transferId} order by id`,
  )

/**
 * A funded maker order on `aster` quoting payment on `hyperliquid` at 1:1 (stored as the orders, escrow index and
 * quote-set routes leave them; routing reads only these rows). Deactivate its set to take the liquidity away.
 */
const seedMaker = (hl: VenueNode, available: bigint) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const owner = lower(fresh().address)
    const signer = lower(fresh().address)
    const orderId = `0x${Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString("hex")}`
    const identityId = crypto.randomUUID()
    yield* sql`insert into accounts (master, access, created_at) values (${owner}, 'granted', now())
      on conflict do nothing`
    yield* sql`insert into quote_identities (id, master, signer, kind, generation, lease_expires_at, created_at)
      values (${identityId}, ${owner}, ${signer}, 'credential', 1, now() + interval '1 hour', now())`
    yield* sql`insert into orders (id, master, venue, receive_venue, owner_address, state, amount, created_at,
        updated_at, client_order_id, quote_identity_id, quote_signer, fund_deadline, to_sign)
      values (${orderId}, ${owner}, 'aster', 'hyperliquid', ${owner}, 'funded', ${available.toString()}, now(), now(),
        ${`order-${orderId.slice(2, 14)}`}, ${identityId}, ${signer}, 4102444800, '[]'::jsonb)`
    yield* sql`insert into escrow_orders (venue, order_id, owner, operator, quote_signer, available, locked,
        created_block, block_number, block_hash)
      values ('aster', ${orderId}, ${owner}, ${owner}, ${signer}, ${available.toString()}, 0, 1, 1, ${`0x${"00".repeat(32)}`})`
    const quotes = [
      {
        venue: "hyperliquid",
        chain_id: hl.chain.chain.id,
        token: hl.chain.token.toLowerCase(),
        recipient: owner,
        supply: "1",
        receive: "1",
        min_fill: "1",
      },
    ]
    yield* sql`insert into quote_sets (id, order_id, quote_identity_id, identity_generation, cancel_epoch, sequence,
        valid_until, quote_size, quotes, signature, active, created_at)
      values (${crypto.randomUUID()}, ${orderId}, ${identityId}, 1, 0, 1, now() + interval '1 hour',
        ${available.toString()}, ${JSON.stringify(quotes)}::jsonb, ${`0x${"11".repeat(65)}`}, true, now())`
    return {
      orderId,
      deactivate: sql`update quote_sets set active = false where order_id = ${orderId}`.pipe(Effect.asVoid),
    }
  })

layer(Live, { timeout: "240 seconds", excludeTestServices: true })("transfers", (it) => {
  it.effect("wallet covers amount_in: the take at once; NO_LIQUIDITY leaves nothing; repeat 200; conflict 409", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const { hl } = yield* WithdrawalDevnet
      const payer = yield* hyperliquidAccount(base, hl!, 0n)
      yield* mint(hl!, payer.address, 10n * USDC)
      const recipient = lower(fresh().address)
      const body = {
        client_transfer_id: `covered-${crypto.randomUUID()}`,
        from: "hyperliquid",
        to: "aster",
        amount_in: "4000000",
        min_out: "3000000",
        payer: payer.account.address,
        recipient: recipient.toUpperCase().replace("0X", "0x"),
        max_parts: 2,
      }
      // No liquidity: the refusal leaves neither an intent nor a take behind.
      const before = yield* counts
      const refused = yield* createTransfer(base, payer.token, body)
      expect([refused.status, code(refused)], refused.text).toEqual([422, "NO_LIQUIDITY"])
      const afterRefusal = yield* counts
      expect([afterRefusal.t, afterRefusal.k]).toEqual([before.t, before.k])

      const maker = yield* seedMaker(hl!, 100n * USDC)
      const created = yield* createTransfer(base, payer.token, body)
      expect(created.status, created.text).toBe(201)
      const t = created.json as TransferView
      expect(t).toMatchObject({
        client_transfer_id: body.client_transfer_id,
        client_take_id: `transfer:${t.id}`,
        from: "hyperliquid",
        to: "aster",
        amount_in: "4000000",
        min_out: "3000000",
        max_parts: 2,
        payer: payer.address,
        recipient,
        from_chain_id: 999,
        to_chain_id: 42161,
        withdrawal_preparation: null,
        withdrawal: null,
        take_final: false,
        cancelled_at: null,
      })
      expect(t.id).toMatch(UUID)
      expect(t.take_id).toMatch(UUID)
      expect(Object.keys(t).sort()).toEqual(
        [
          "id",
          "client_transfer_id",
          "client_take_id",
          "from",
          "to",
          "amount_in",
          "min_out",
          "max_parts",
          "payer",
          "recipient",
          "from_chain_id",
          "to_chain_id",
          "withdrawal_preparation",
          "withdrawal",
          "take_id",
          "take_final",
          "cancelled_at",
          "created_at",
        ].sort(),
      )
      const sql = yield* SqlClient.SqlClient
      const [take] = yield* sql<{ client_take_id: string; master: string; amount_in: string; payer: string }>`
        select client_take_id, master, amount_in::text as amount_in, payer from takes where id = ${t.take_id!}`
      expect(take).toEqual({
        client_take_id: `transfer:${t.id}`,
        master: payer.address,
        amount_in: "4000000",
        payer: payer.address,
      })
      expect((yield* journalOf(t.id)).map((j) => j.kind)).toEqual(["transfer.created", "transfer.take_created"])
      // A v1 intent's take names no pay key: the v2 pay-key route refuses it (400), nothing changed.
      const countsBeforeKey = yield* counts
      const keyed = yield* rawRequest(`${base}/v1/transfers/${t.id}/take/pay-key`, {
        method: "PUT",
        headers: { "content-type": "application/json", ...bearer(payer.token) },
        body: JSON.stringify({ pay_key: fresh().address }),
      })
      expect([keyed.status, code(keyed)], keyed.text).toEqual([400, "INVALID_REQUEST"])
      expect(yield* counts).toEqual(countsBeforeKey)
      const [v1Row] = yield* sql<{ pay_key: string | null; take_version: number }>`
        select pay_key, take_version::int as take_version from transfers where id = ${t.id}::uuid`
      expect(v1Row).toEqual({ pay_key: null, take_version: 1 })
      // The client signs the take from GET /v1/takes/{id}: one permit for the payment, one margin_move per fill.
      const takeRes = yield* get(`${base}/v1/takes/${t.take_id}`, payer.token)
      expect(takeRes.status, takeRes.text).toBe(200)
      const takeBody = takeRes.json as {
        take: { id: string; client_take_id: string; amount_in: string; payer: string; recipient: string }
        to_sign: Array<{ kind: string; signer: string }>
      }
      expect(takeBody.take).toMatchObject({
        id: t.take_id,
        client_take_id: `transfer:${t.id}`,
        amount_in: "4000000",
        payer: payer.address,
        recipient,
      })
      expect(takeBody.to_sign.map((i) => i.kind)).toEqual(["permit", "margin_move"])
      expect(takeBody.to_sign.every((i) => i.signer === payer.address)).toBe(true)

      // Identical repeat: 200 and the same intent, nothing new.
      const mid = yield* counts
      const again = yield* createTransfer(base, payer.token, body)
      expect(again.status, again.text).toBe(200)
      expect(again.json).toEqual(t)
      // The same client id with other parameters: 409, nothing new.
      for (const patch of [
        { amount_in: "4000001" },
        { min_out: "1" },
        { to: "hyperliquid" },
        { max_parts: 3 },
        { recipient: payer.account.address },
      ]) {
        const conflict = yield* createTransfer(base, payer.token, { ...body, ...patch })
        expect([conflict.status, code(conflict)], JSON.stringify(patch)).toEqual([409, "STATE_CONFLICT"])
      }
      // max_parts omitted means 8: the same client id with it omitted is another request.
      const { max_parts: _omit, ...withoutParts } = body
      const other = yield* createTransfer(base, payer.token, withoutParts)
      expect([other.status, code(other)]).toEqual([409, "STATE_CONFLICT"])
      const after = yield* counts
      expect([after.t, after.k, after.p]).toEqual([mid.t, mid.k, mid.p])

      // The take committed: cancel is refused and changes nothing.
      const refusedCancel = yield* cancel(base, payer.token, t.id)
      expect([refusedCancel.status, code(refusedCancel)]).toEqual([409, "STATE_CONFLICT"])
      const listed = yield* listPage(base, payer.token)
      expect((listed.json as { items: Array<TransferView> }).items).toEqual([t])
      // take_final follows the fills: true once every one is final (the Settlement actor is not running here).
      yield* sql`update fills set final = true where take_id = ${t.take_id!}`
      const finalView = (yield* listPage(base, payer.token)).json as { items: Array<TransferView> }
      expect(finalView.items[0]!.take_final).toBe(true)

      // Eight identical creates at once: one intent, one take; one 201, the rest 200 with the same intent.
      const raced = { ...body, client_transfer_id: `raced-${crypto.randomUUID()}`, amount_in: "1000000", min_out: "1" }
      const answers = yield* Effect.all(
        Array.from({ length: 8 }, () => createTransfer(base, payer.token, raced)),
        { concurrency: "unbounded" },
      )
      expect(answers.map((a) => a.status).sort()).toEqual([200, 200, 200, 200, 200, 200, 200, 201])
      const ids = new Set(answers.map((a) => (a.json as TransferView).id))
      const takeIds = new Set(answers.map((a) => (a.json as TransferView).take_id))
      expect([ids.size, takeIds.size]).toEqual([1, 1])
      const [rows] = yield* sql<{ t: string; k: string }>`
        select (select count(*) from transfers where client_transfer_id = ${raced.client_transfer_id})::text as t,
               (select count(*) from takes where client_take_id = ${`transfer:${[...ids][0]}`})::text as k`
      expect(rows).toEqual({ t: "1", k: "1" })
      yield* maker.deactivate
    }),
  )

  it.effect("shortfall: withdrawal_preparation, the withdrawal submitted and relayed, then the desk takes", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const { hl } = yield* WithdrawalDevnet
      const payer = yield* hyperliquidAccount(base, hl!, 100n * USDC)
      yield* mint(hl!, payer.address, 5n * USDC)
      const body = {
        client_transfer_id: "shortfall.1:a-b_c",
        from: "hyperliquid",
        to: "aster",
        amount_in: "25000000",
        min_out: "1",
        payer: payer.address,
        recipient: payer.address,
      }
      const created = yield* createTransfer(base, payer.token, body)
      expect(created.status, created.text).toBe(201)
      const t = created.json as TransferView
      expect(t).toMatchObject({
        max_parts: 8,
        take_id: null,
        take_final: null,
        withdrawal: null,
        cancelled_at: null,
      })
      // 25 USDC asked, 5 in the wallet: the venue withdrawal of 20 to the payer (to: signer).
      expect(t.withdrawal_preparation?.amount).toBe("20000000")
      expect(t.withdrawal_preparation?.typed_data.primaryType).toBe("HyperliquidTransaction:SendAsset")
      expect(t.withdrawal_preparation?.typed_data.message).toMatchObject({ amount: "20" })
      expect(Date.parse(t.withdrawal_preparation!.created_at)).toBeGreaterThan(0)
      const repeat = yield* createTransfer(base, payer.token, body)
      expect(repeat.status).toBe(200)
      expect(repeat.json).toEqual(t)

      // The desk does nothing before the withdrawal is relayed.
      yield* sweep
      const waiting = (yield* listPage(base, payer.token)).json as { items: Array<TransferView> }
      expect(waiting.items[0]!.take_id).toBeNull()

      const prep = t.withdrawal_preparation!
      const submitted = yield* submitFunding(base, payer.token, payer.account, "hyperliquid", prep)
      expect(submitted.status, submitted.text).toBe(200)
      const withdrawal = submitted.json as { id: string }
      const shown = ((yield* listPage(base, payer.token)).json as { items: Array<TransferView> }).items[0]!
      expect(shown.withdrawal).toMatchObject({ id: withdrawal.id, amount: "20000000", destination: payer.address })

      yield* waitFor(base, payer.token, withdrawal.id, inState("relayed", "failed", "unknown"))
      yield* Effect.promise(() => hl!.sim.control.payoutsSettled())
      // Relayed and funded, but no liquidity: the desk records why and keeps waiting.
      yield* sweep
      const sql = yield* SqlClient.SqlClient
      const [deferred] = yield* sql<{ take_id: string | null; error: string }>`
        select take_id, error from transfers where id = ${t.id}`
      expect(deferred!.take_id).toBeNull()
      expect(deferred!.error).not.toBe("")

      const maker = yield* seedMaker(hl!, 100n * USDC)
      yield* sql`update transfers set next_attempt_at = null where id = ${t.id}`
      yield* sweep
      const done = ((yield* listPage(base, payer.token)).json as { items: Array<TransferView> }).items[0]!
      expect(done.id).toBe(t.id)
      expect(done.take_id).toMatch(UUID)
      expect(done.take_final).toBe(false)
      expect(done.withdrawal).toMatchObject({ id: withdrawal.id, state: "relayed" })
      // A second pass changes nothing: one take per transfer.
      yield* sweep
      const [takes] = yield* sql<{ n: string }>`
        select count(*)::text as n from takes where client_take_id = ${`transfer:${t.id}`}`
      expect(takes!.n).toBe("1")
      expect((yield* journalOf(t.id)).map((j) => j.kind)).toEqual(["transfer.created", "transfer.take_created"])
      const late = yield* cancel(base, payer.token, t.id)
      expect([late.status, code(late)]).toEqual([409, "STATE_CONFLICT"])
      yield* maker.deactivate
    }),
  )

  it.effect("cancel before the take: 200, repeat 200 the same, the desk then skips it; not the owner → 404", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const { hl } = yield* WithdrawalDevnet
      const payer = yield* hyperliquidAccount(base, hl!, 50n * USDC)
      const other = yield* hyperliquidAccount(base, hl!, 0n)
      const body = {
        from: "hyperliquid",
        to: "aster",
        amount_in: "3000000",
        min_out: "1",
        payer: payer.address,
        recipient: payer.address,
      }
      // Server-assigned client ids: each request is a new intent.
      const first = (yield* createTransfer(base, payer.token, body)).json as TransferView
      const second = yield* createTransfer(base, payer.token, body)
      expect(second.status).toBe(201)
      expect(first.client_transfer_id).toMatch(UUID)
      expect((second.json as TransferView).client_transfer_id).toMatch(UUID)
      expect((second.json as TransferView).id).not.toBe(first.id)
      expect(first.withdrawal_preparation?.amount).toBe("3000000")

      const notMine = yield* cancel(base, other.token, first.id)
      expect([notMine.status, code(notMine)]).toEqual([404, "NOT_FOUND"])
      const otherList = (yield* listPage(base, other.token)).json as { items: Array<TransferView> }
      expect(otherList.items).toEqual([])
      const unknownId = yield* cancel(base, payer.token, crypto.randomUUID())
      expect([unknownId.status, code(unknownId)]).toEqual([404, "NOT_FOUND"])

      const cancelled = yield* cancel(base, payer.token, first.id)
      expect(cancelled.status, cancelled.text).toBe(200)
      const c = cancelled.json as TransferView
      expect(c.id).toBe(first.id)
      expect(Date.parse(c.cancelled_at!)).toBeGreaterThan(0)
      const again = yield* cancel(base, payer.token, first.id)
      expect(again.status).toBe(200)
      expect(again.json).toEqual(c)
      expect((yield* journalOf(first.id)).map((j) => j.kind)).toEqual(["transfer.created", "transfer.cancelled"])

      // Its withdrawal relays anyway (the client had submitted it); the desk never takes for a cancelled intent.
      const prep = first.withdrawal_preparation!
      const sig = yield* Effect.promise(() => payer.account.signTypedData(prep.typed_data))
      const submitted = yield* submit(
        base,
        payer.token,
        {
          venue: "hyperliquid",
          amount: prep.amount,
          to: "signer",
          destination: "",
          typed_data: prep.typed_data,
          expires_at: "",
        },
        sig,
      )
      expect(submitted.status, submitted.text).toBe(200)
      yield* waitFor(base, payer.token, (submitted.json as { id: string }).id, inState("relayed", "failed", "unknown"))
      yield* Effect.promise(() => hl!.sim.control.payoutsSettled())
      const maker = yield* seedMaker(hl!, 100n * USDC)
      yield* sweep
      const sql = yield* SqlClient.SqlClient
      const [row] = yield* sql<{ take_id: string | null }>`select take_id from transfers where id = ${first.id}`
      expect(row!.take_id).toBeNull()
      const listed = (yield* listPage(base, payer.token)).json as { items: Array<TransferView> }
      expect(listed.items.map((i) => i.id)).toEqual([(second.json as TransferView).id, first.id])
      expect(listed.items[1]!.cancelled_at).toBe(c.cancelled_at)
      expect(listed.items[1]!.withdrawal?.state).toBe("relayed")
      yield* maker.deactivate
    }),
  )

  it.effect("the desk never takes around a withdrawal that is not relayed (unknown, failed)", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const { hl } = yield* WithdrawalDevnet
      const sql = yield* SqlClient.SqlClient
      const maker = yield* seedMaker(hl!, 100n * USDC)
      for (const state of ["unknown", "failed"] as const) {
        const payer = yield* hyperliquidAccount(base, hl!, 20n * USDC)
        const created = yield* createTransfer(base, payer.token, {
          from: "hyperliquid",
          to: "aster",
          amount_in: "2000000",
          min_out: "1",
          payer: payer.address,
          recipient: payer.address,
        })
        expect(created.status, created.text).toBe(201)
        const t = created.json as TransferView
        // The withdrawal of its preparation, in `state`; the wallet holds amount_in anyway (funded elsewhere).
        const [prep] = yield* sql<{ id: string }>`select preparation_id as id from transfers where id = ${t.id}`
        yield* sql`insert into withdrawals (id, master, venue, address, amount, destination, state, created_at,
            updated_at, preparation_id, target)
          values (${crypto.randomUUID()}, ${payer.address}, 'hyperliquid', ${payer.address}, 2000000,
            ${payer.address}, ${state}, now(), now(), ${prep!.id}, 'signer')`
        yield* mint(hl!, payer.address, 2n * USDC)
        yield* sweep
        const [row] = yield* sql<{ take_id: string | null }>`select take_id from transfers where id = ${t.id}`
        expect(row!.take_id, state).toBeNull()
        const view = ((yield* listPage(base, payer.token)).json as { items: Array<TransferView> }).items[0]!
        expect(view.withdrawal?.state).toBe(state)
        // Another intent of the account while that withdrawal is unknown: refused (WITHDRAWAL_PENDING).
        const next = yield* createTransfer(base, payer.token, {
          from: "hyperliquid",
          to: "aster",
          amount_in: "1000000",
          min_out: "1",
          payer: payer.address,
          recipient: payer.address,
        })
        if (state === "unknown") expect([next.status, code(next)]).toEqual([409, "WITHDRAWAL_PENDING"])
        else expect(next.status, next.text).toBe(201)
      }
      yield* maker.deactivate
    }),
  )

  it.effect("a cancel racing the desk's take: exactly one of them wins, never both", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const { hl } = yield* WithdrawalDevnet
      const sql = yield* SqlClient.SqlClient
      const maker = yield* seedMaker(hl!, 100n * USDC)
      const payers = yield* Effect.all(Array.from({ length: 4 }, () => hyperliquidAccount(base, hl!, 10n * USDC)))
      const transfers: Array<TransferView> = []
      for (const payer of payers) {
        const created = yield* createTransfer(base, payer.token, {
          from: "hyperliquid",
          to: "aster",
          amount_in: "1000000",
          min_out: "1",
          payer: payer.address,
          recipient: payer.address,
        })
        expect(created.status, created.text).toBe(201)
        const t = created.json as TransferView
        const prep = t.withdrawal_preparation!
        const signature = yield* Effect.promise(() => payer.account.signTypedData(prep.typed_data))
        const submitted = yield* submit(
          base,
          payer.token,
          {
            venue: "hyperliquid",
            amount: prep.amount,
            to: "signer",
            destination: "",
            typed_data: prep.typed_data,
            expires_at: "",
          },
          signature,
        )
        expect(submitted.status, submitted.text).toBe(200)
        yield* waitFor(base, payer.token, (submitted.json as { id: string }).id, inState("relayed"))
        transfers.push(t)
      }
      yield* Effect.promise(() => hl!.sim.control.payoutsSettled())
      const cancels = yield* Effect.all(
        [
          sweep,
          Effect.all(
            transfers.map((t, i) => cancel(base, payers[i]!.token, t.id)),
            { concurrency: "unbounded" },
          ),
        ],
        { concurrency: "unbounded" },
      ).pipe(Effect.map(([, answers]) => answers))
      for (const [i, t] of transfers.entries()) {
        const [row] = yield* sql<{ take_id: string | null; cancelled_at: Date | null; takes: string }>`
          select take_id, cancelled_at,
            (select count(*) from takes where client_take_id = ${`transfer:${t.id}`})::text as takes
          from transfers where id = ${t.id}`
        const answer = cancels[i]!
        if (answer.status === 200) {
          expect([row!.take_id, row!.takes], t.id).toEqual([null, "0"])
          expect(row!.cancelled_at).not.toBeNull()
        } else {
          expect([answer.status, code(answer)]).toEqual([409, "STATE_CONFLICT"])
          expect(row!.cancelled_at).toBeNull()
          expect(row!.takes).toBe("1")
        }
      }
      // Whatever won, a later pass changes nothing.
      yield* sweep
      const [after] = yield* sql<{ both: string }>`
        select count(*)::text as both from transfers where take_id is not null and cancelled_at is not null`
      expect(after!.both).toBe("0")
      yield* maker.deactivate
    }),
  )

  it.effect("GET /v1/transfers: newest first over three pages, cancelled included; bad cursors → 400", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const { hl } = yield* WithdrawalDevnet
      const me = yield* hyperliquidAccount(base, hl!, 0n)
      const stranger = yield* hyperliquidAccount(base, hl!, 0n)
      const sql = yield* SqlClient.SqlClient
      // 230 intents written as the create route writes them (no preparation, no take); some share a timestamp.
      const seed = (master: string, n: number) =>
        sql`
          insert into transfers (id, master, client_transfer_id, client_take_id, from_venue, to_venue, amount_in,
            min_out, max_parts, payer, recipient, from_chain_id, to_chain_id, created_at, updated_at)
          select id, ${master}, 'seed-' || i, 'transfer:' || id, 'hyperliquid', 'aster', 1000000, 1, 8, ${master},
            ${master}, 999, 42161, now() - (i / 3) * interval '1 second', now()
          from (select gen_random_uuid() as id, i from generate_series(1, ${n}) as i) s`
      yield* seed(me.address, 230)
      yield* seed(stranger.address, 3)
      const [mine] = yield* sql<{ id: string }>`
        select id from transfers where master = ${me.address} order by created_at desc, id desc offset 10 limit 1`
      const c = yield* cancel(base, me.token, mine!.id)
      expect(c.status).toBe(200)

      const seen: Array<TransferView> = []
      let cursor: string | undefined
      const sizes: Array<number> = []
      for (;;) {
        const page = yield* listPage(base, me.token, cursor)
        expect(page.status, page.text).toBe(200)
        expect(page.headers["x-event-cursor"]).toMatch(/^[0-9]+$/)
        const body = page.json as { items: Array<TransferView>; next_cursor: string | null }
        sizes.push(body.items.length)
        seen.push(...body.items)
        if (body.next_cursor === null) break
        expect(body.next_cursor).toBe(body.items[body.items.length - 1]!.id)
        cursor = body.next_cursor
      }
      expect(sizes).toEqual([100, 100, 30])
      expect(new Set(seen.map((t) => t.id)).size).toBe(230)
      expect(seen.every((t) => t.payer === me.address)).toBe(true)
      for (let i = 1; i < seen.length; i++) {
        const [a, b] = [seen[i - 1]!, seen[i]!]
        expect(a.created_at > b.created_at || (a.created_at === b.created_at && a.id > b.id), `${i}`).toBe(true)
      }
      expect(seen[10]).toMatchObject({ id: mine!.id })
      expect(seen[10]!.cancelled_at).not.toBeNull()

      const [theirs] = yield* sql<{ id: string }>`select id from transfers where master = ${stranger.address} limit 1`
      for (const bad of ["abc", "1", crypto.randomUUID(), theirs!.id, `${mine!.id}x`, "x".repeat(600)]) {
        const res = yield* listPage(base, me.token, bad)
        expect([res.status, code(res)], bad).toEqual([400, "INVALID_REQUEST"])
      }
      const strangerPage = (yield* listPage(base, stranger.token)).json as { items: Array<TransferView> }
      expect(strangerPage.items.length).toBe(3)
    }),
  )

  it.effect("bad inputs: envelope, code and status, never 5xx, nothing changed", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const { hl } = yield* WithdrawalDevnet
      const payer = yield* hyperliquidAccount(base, hl!, 10n * USDC)
      const stranger = fresh()
      const good = {
        client_transfer_id: "bad-inputs",
        from: "hyperliquid",
        to: "aster",
        amount_in: "1000000",
        min_out: "1",
        payer: payer.address,
        recipient: payer.address,
      }
      const { client_transfer_id: _c, ...withoutId } = good
      const { from: _f, ...withoutFrom } = good
      const cases: Array<[unknown, number, string]> = [
        [{ ...good, extra: 1 }, 400, "INVALID_REQUEST"],
        [withoutFrom, 400, "INVALID_REQUEST"],
        [{ ...good, amount_in: (2n ** 256n).toString() }, 400, "INVALID_REQUEST"],
        [{ ...good, min_out: (2n ** 256n).toString() }, 400, "INVALID_REQUEST"],
        [{ ...good, amount_in: "0" }, 400, "INVALID_REQUEST"],
        [{ ...good, amount_in: "-1" }, 400, "INVALID_REQUEST"],
        [{ ...good, amount_in: "1.5" }, 400, "INVALID_REQUEST"],
        [{ ...good, amount_in: 1000000 }, 400, "INVALID_REQUEST"],
        [{ ...good, max_parts: 0 }, 400, "INVALID_REQUEST"],
        [{ ...good, max_parts: 9 }, 400, "INVALID_REQUEST"],
        [{ ...good, max_parts: 1.5 }, 400, "INVALID_REQUEST"],
        [{ ...good, payer: "0x1234" }, 400, "INVALID_REQUEST"],
        [{ ...good, recipient: "nope" }, 400, "INVALID_REQUEST"],
        [{ ...good, recipient: `0x${"0".repeat(40)}` }, 400, "INVALID_REQUEST"],
        [{ ...good, client_transfer_id: "" }, 400, "INVALID_REQUEST"],
        [{ ...good, client_transfer_id: "a".repeat(65) }, 400, "INVALID_REQUEST"],
        [{ ...good, client_transfer_id: "has space" }, 400, "INVALID_REQUEST"],
        [{ ...good, to: "hyperliquid" }, 400, "INVALID_REQUEST"],
        [{ ...good, from: "Bad Venue" }, 400, "INVALID_REQUEST"],
        [{ ...good, to: "nowhere" }, 404, "NOT_FOUND"],
        [{ ...withoutId, payer: stranger.address }, 422, "PAYER_NOT_LINKED"],
        [{ ...good, from: "aster", to: "hyperliquid" }, 422, "PAYER_NOT_LINKED"],
        // More than the venue margin and the wallet together: the withdrawal cannot be prepared.
        [{ ...good, amount_in: (1000n * USDC).toString() }, 422, "INSUFFICIENT_BALANCE"],
      ]
      const before = yield* counts
      for (const [body, status, c] of cases) {
        const res = yield* createTransfer(base, payer.token, body)
        expect([res.status, code(res)], `${JSON.stringify(body).slice(0, 160)} -> ${res.text}`).toEqual([status, c])
        const env = res.json as { error: { request_id: string; retryable: boolean; message: string } }
        expect(env.error.request_id).toMatch(UUID)
        expect(typeof env.error.retryable).toBe("boolean")
        expect(res.text).not.toContain("    at ")
      }
      for (const raw of ["{", "[]", "null", ""]) {
        const res = yield* rawRequest(`${base}/v1/transfers`, {
          method: "POST",
          headers: { ...bearer(payer.token), "content-type": "application/json" },
          body: raw,
        })
        expect([res.status, code(res)], raw).toEqual([400, "INVALID_REQUEST"])
      }
      // An unknown withdrawal of the payer's account: nothing is created around it.
      const sql = yield* SqlClient.SqlClient
      const stuck = crypto.randomUUID()
      yield* sql`insert into withdrawals (id, master, venue, address, amount, destination, state, created_at, updated_at)
        values (${stuck}, ${payer.address}, 'hyperliquid', ${payer.address}, 1, ${payer.address}, 'unknown', now(), now())`
      const blocked = yield* createTransfer(base, payer.token, good)
      expect([blocked.status, code(blocked)], blocked.text).toEqual([409, "WITHDRAWAL_PENDING"])
      yield* sql`update withdrawals set state = 'failed' where id = ${stuck}`
      const after = yield* counts
      expect([after.t, after.k, after.p, after.j]).toEqual([before.t, before.k, before.p, before.j])

      for (const path of ["not-a-uuid", "123"]) {
        const res = yield* cancel(base, payer.token, path)
        expect([res.status, code(res)], path).toEqual([400, "INVALID_REQUEST"])
      }
      const withBody = yield* post(`${base}/v1/transfers`, good, { "content-type": "application/json" })
      expect([withBody.status, code(withBody)]).toEqual([401, "UNAUTHORIZED"])

      // The withdrawal preparation path is shared with POST /v1/withdrawals/prepare, which answers as before.
      const prepared = yield* post(
        `${base}/v1/withdrawals/prepare`,
        { venue: "hyperliquid", amount: "1000000", to: "signer" },
        bearer(payer.token),
      )
      expect(prepared.status, prepared.text).toBe(200)
      expect(prepared.json).toMatchObject({
        venue: "hyperliquid",
        amount: "1000000",
        to: "signer",
        destination: payer.address,
      })
      expect(Object.keys(prepared.json as object).sort()).toEqual([
        "amount",
        "destination",
        "expires_at",
        "to",
        "typed_data",
        "venue",
      ])
      const tooMuch = yield* post(
        `${base}/v1/withdrawals/prepare`,
        { venue: "hyperliquid", amount: (11n * USDC).toString(), to: "signer" },
        bearer(payer.token),
      )
      expect([tooMuch.status, code(tooMuch)]).toEqual([422, "INSUFFICIENT_BALANCE"])
    }),
  )

  it.effect("the typed client recovers a lost answer by client_transfer_id: one intent, the repeat's 200", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const sql = yield* SqlClient.SqlClient
      const { hl } = yield* WithdrawalDevnet
      const payer = yield* hyperliquidAccount(base, hl!, 0n)
      yield* mint(hl!, payer.address, 10n * USDC)
      yield* seedMaker(hl!, 100n * USDC)
      // The fault: the service answers the first POST, and the client never sees it (a connection lost after the
      // request was sent). Every later answer gets through.
      let sends = 0
      const lossy = (client: HttpClient.HttpClient) =>
        HttpClient.transform(client, (effect, request) =>
          Effect.flatMap(effect, (response) =>
            request.method === "POST" && sends++ === 0
              ? Effect.fail(
                  new HttpClientError.RequestError({ request, reason: "Transport", description: "connection reset" }),
                )
              : Effect.succeed(response),
          ),
        )
      const client = yield* makeApiClient(base, { bearer: payer.token, transport: lossy })
      const body = {
        client_transfer_id: `lost-${crypto.randomUUID()}`,
        from: "hyperliquid",
        to: "aster",
        amount_in: "2000000",
        min_out: "1500000",
        payer: payer.account.address,
        recipient: payer.account.address,
        max_parts: 2,
      }
      const lost = yield* request(client.transfers.create({ payload: body })).pipe(Effect.flip)
      expect(lost._tag).toBe("ApiUnreachable")
      // Sent again with the same client id: the intent the lost attempt made, not a second one.
      const recovered = yield* recoverable(request(client.transfers.create({ payload: body })))
      expect(recovered.client_transfer_id).toBe(body.client_transfer_id)
      const rows = yield* sql<{ id: string }>`
        select id from transfers where client_transfer_id = ${body.client_transfer_id}`
      expect(rows.map((r) => r.id)).toEqual([recovered.id])
      expect(sends).toBe(2)
      // A refusal is not retried: other parameters under the same id answer 409 at once.
      const conflict = yield* recoverable(
        request(client.transfers.create({ payload: { ...body, amount_in: "3000000" } })),
      ).pipe(Effect.flip)
      expect(conflict).toMatchObject({ _tag: "ApiError", status: 409, code: "STATE_CONFLICT" })
      expect(sends).toBe(3)
    }),
  )
})
