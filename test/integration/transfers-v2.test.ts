/**
 * Transfers on settlement v2 (issue 23; DESIGN §6 "a transfer's take waits for [the pay key] on a take route before
 * it offers its Fills"), on the withdrawal devnet (two anvil chains with the real contracts incl. SettlementEscrowV2,
 * the venue simulators, the WithdrawalDesk) with `settlement.escrow_version` 2: the intent waits for the pay key
 * (no take, no Fill, no pay window), PUT /v1/transfers/{id}/take/pay-key gives it (bad inputs: envelope, nothing
 * changed, never 5xx; NO_LIQUIDITY stores nothing), and a withdrawal-prefunded intent's take, created by the
 * TransferDesk only once the key is there, is started through the taker's typed flow (src/Client/TakerFlow.ts:
 * checks, signs the checked Fills naming its pay key).
 */
import { SqlClient } from "@effect/sql"
import { expect, layer } from "@effect/vitest"
import { Effect, Runtime } from "effect"
import { encodeFunctionData, getAddress, type Hex } from "viem"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { pendingKeys as deskPending, stepTransferDesk } from "../../actors/TransferDesk.ts"
import { mockUSDCAbi } from "../../src/Chain/artifacts/index.ts"
import { ChainClients } from "../../src/Chain/ChainClients.ts"
import type { TakerConfig } from "../../src/Client/TakerChecks.ts"
import { startTake, type TakeAnswer, type TakerApi } from "../../src/Client/TakerFlow.ts"
import { AppConfig } from "../../src/Config.ts"
import { PERPS_DEX } from "../../src/Domain/EscrowTypedDataV2.ts"
import { SecureRandom } from "../../src/SecureRandom.ts"
import { account, sendCalls } from "../support/ChainDevnet.ts"
import { rawRequest } from "../support/Http.ts"
import { bearer, post, signIn } from "../support/SignIn.ts"
import { makerOrderV2 } from "../support/TakesV2.ts"
import { baseUrl } from "../support/TestServer.ts"
import type { VenueNode } from "../support/VenueNode.ts"
import {
  code,
  get,
  inState,
  lower,
  submitFunding,
  USDC,
  WithdrawalDevnet,
  waitFor,
  withdrawalDevnet,
} from "../support/WithdrawalDevnet.ts"

const Live = withdrawalDevnet({ venues: ["hyperliquid", "aster"], escrowV2: true })

const fresh = () => privateKeyToAccount(generatePrivateKey())

interface TransferView {
  readonly id: string
  readonly client_take_id: string
  // biome-ignore lint/suspicious/noExplicitAny: wire typed data
  readonly withdrawal_preparation: { amount: string; typed_data: any } | null
  readonly take_id: string | null
  readonly take_final: boolean | null
  readonly cancelled_at: string | null
}

const mint = (node: VenueNode, to: string, amount: bigint) =>
  Effect.promise(() =>
    sendCalls(node.chain, account(7), [
      {
        to: node.chain.token,
        data: encodeFunctionData({ abi: mockUSDCAbi, functionName: "mint", args: [to as Hex, amount] }),
      },
    ]),
  )

const hyperliquidAccount = (base: string, node: VenueNode, credit: bigint) =>
  Effect.gen(function* () {
    const acct = fresh()
    const token = yield* signIn(base, acct)
    const link = yield* post(`${base}/v1/accounts`, { venue: "hyperliquid", address: acct.address }, bearer(token))
    expect(link.status).toBe(201)
    if (credit > 0n) node.sim.control.credit(acct.address, credit)
    return { account: acct, token, address: lower(acct.address) }
  })

/** One desk pass driven by the test: the TransferDesk entity's step over every transfer it still has to drive. */
const sweep = Effect.flatMap(deskPending, (ids) => Effect.forEach(ids, stepTransferDesk, { discard: true })).pipe(
  Effect.provide(ChainClients.Live),
  Effect.provide(SecureRandom.Live),
)

const putKey = (base: string, token: string | undefined, id: string, body: unknown) =>
  rawRequest(`${base}/v1/transfers/${id}/take/pay-key`, {
    method: "PUT",
    headers: { "content-type": "application/json", ...(token === undefined ? {} : bearer(token)) },
    body: typeof body === "string" ? body : JSON.stringify(body),
  })

/** What a pay-key request may change: the row's key and take, takes, fills and the journal. */
const state = (transferId: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<{ pay_key: string | null; take_id: string | null; takes: string; fills: string; journal: string }>`
      select t.pay_key, t.take_id::text as take_id, (select count(*) from takes)::text as takes,
        (select count(*) from fills)::text as fills, (select count(*) from journal)::text as journal
      from transfers t where t.id = ${transferId}::uuid`.pipe(Effect.map((rows) => rows[0]!)),
  )

const journalKinds = (transferId: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<{ kind: string }>`select kind from journal where payload->>'transfer_id' = ${transferId} order by id`.pipe(
      Effect.map((rows) => rows.map((r) => r.kind)),
    ),
  )

layer(Live, { timeout: "240 seconds", excludeTestServices: true })("transfers on settlement v2", (it) => {
  it.effect("the intent waits for the pay key; bad inputs change nothing; NO_LIQUIDITY stores no key", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const sql = yield* SqlClient.SqlClient
      const { hl } = yield* WithdrawalDevnet
      const payer = yield* hyperliquidAccount(base, hl!, 0n)
      yield* mint(hl!, payer.address, 30n * USDC)
      const created = yield* post(
        `${base}/v1/transfers`,
        {
          client_transfer_id: "v2.covered",
          from: "hyperliquid",
          to: "aster",
          amount_in: "25000000",
          min_out: "1",
          payer: payer.address,
          recipient: payer.address,
        },
        bearer(payer.token),
      )
      expect(created.status, created.text).toBe(201)
      const t = created.json as TransferView
      // Covered by the wallet, yet no take: a v2 take needs the pay key first (no Fill, no pay window yet).
      expect(t).toMatchObject({ take_id: null, take_final: null, withdrawal_preparation: null })
      const [row] = yield* sql<{ take_version: number }>`
        select take_version::int as take_version from transfers where id = ${t.id}::uuid`
      expect(row!.take_version).toBe(2)
      const other = yield* hyperliquidAccount(base, hl!, 0n)
      yield* sweep
      const before = yield* state(t.id)
      expect(before.pay_key).toBeNull()
      expect(before.take_id).toBeNull()

      const key = fresh().address
      const cases: Array<[string, string | undefined, string, unknown, number, string]> = [
        ["no session", undefined, t.id, { pay_key: key }, 401, "UNAUTHORIZED"],
        ["malformed key", payer.token, t.id, { pay_key: "0x1234" }, 400, "INVALID_REQUEST"],
        ["key missing", payer.token, t.id, {}, 400, "INVALID_REQUEST"],
        ["zero key", payer.token, t.id, { pay_key: `0x${"0".repeat(40)}` }, 400, "INVALID_REQUEST"],
        ["unknown field", payer.token, t.id, { pay_key: key, extra: 1 }, 400, "INVALID_REQUEST"],
        ["not JSON", payer.token, t.id, "{", 400, "INVALID_REQUEST"],
        ["path not a UUID", payer.token, "nope", { pay_key: key }, 400, "INVALID_REQUEST"],
        ["unknown transfer", payer.token, crypto.randomUUID(), { pay_key: key }, 404, "NOT_FOUND"],
        ["another master's", other.token, t.id, { pay_key: key }, 404, "NOT_FOUND"],
        // Wallet covered: the take is routed in the request; no v2 order quotes → NO_LIQUIDITY, no key stored.
        ["no liquidity", payer.token, t.id, { pay_key: key }, 422, "NO_LIQUIDITY"],
      ]
      for (const [what, token, id, body, status, errorCode] of cases) {
        const res = yield* putKey(base, token, id, body)
        expect([res.status, code(res)], `${what}: ${res.text}`).toEqual([status, errorCode])
        expect(yield* state(t.id), what).toEqual(before)
      }
      // Without access a new key is refused before anything is routed (403), nothing changed.
      yield* sql`update accounts set access = 'suspended' where master = ${payer.address}`
      const gated = yield* putKey(base, payer.token, t.id, { pay_key: key })
      expect([gated.status, code(gated)]).toEqual([403, "ACCESS_REQUIRED"])
      expect(yield* state(t.id)).toEqual(before)
      yield* sql`update accounts set access = 'granted' where master = ${payer.address}`
      // A key refused with NO_LIQUIDITY was not kept: another key is not a conflict.
      const again = yield* putKey(base, payer.token, t.id, { pay_key: fresh().address })
      expect([again.status, code(again)]).toEqual([422, "NO_LIQUIDITY"])
      expect(yield* state(t.id)).toEqual(before)

      // A cancelled intent takes no key (409), nothing changed.
      const cancelled = yield* post(`${base}/v1/transfers/${t.id}/cancel`, {}, bearer(payer.token))
      expect(cancelled.status).toBe(200)
      const afterCancel = yield* state(t.id)
      const refused = yield* putKey(base, payer.token, t.id, { pay_key: key })
      expect([refused.status, code(refused)]).toEqual([409, "STATE_CONFLICT"])
      expect(yield* state(t.id)).toEqual(afterCancel)
      expect(yield* journalKinds(t.id)).toEqual(["transfer.created", "transfer.cancelled"])
    }),
  )

  it.effect("prefunded by a withdrawal: the desk takes only after the pay key; the typed flow signs its Fills", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const sql = yield* SqlClient.SqlClient
      const { hl, aster } = yield* WithdrawalDevnet
      const { deployment } = yield* AppConfig
      const payer = yield* hyperliquidAccount(base, hl!, 100n * USDC)
      yield* mint(hl!, payer.address, 5n * USDC)

      // A maker's v2 order on aster, funded on its SettlementEscrowV2, quoting payment on hyperliquid at 1:1 with
      // real hashlocks; its escrow_v2_orders row written as the v2 index records a final Funded event.
      const owner = account(5)
      yield* mint(aster!, owner.address, 100n * USDC)
      const signerKey = generatePrivateKey()
      const maker = yield* makerOrderV2(aster!.chain, hl!.chain, {
        owner,
        signerKey,
        signer: privateKeyToAccount(signerKey),
        relayer: account(8),
        operator: account(0).address,
        payee: owner.address,
        amount: 100n * USDC,
        makerVenue: "aster",
        takerVenue: "hyperliquid",
      })
      yield* sql`insert into escrow_v2_orders (venue, owner, order_id, order_key, operator, quote_signer, available,
          locked, created_block, block_number, block_hash)
        values ('aster', ${owner.address.toLowerCase()}, ${maker.orderId}, ${maker.orderId},
          ${account(0).address.toLowerCase()}, ${privateKeyToAccount(signerKey).address.toLowerCase()},
          ${(100n * USDC).toString()}, 0, 1, 1, ${`0x${"00".repeat(32)}`})`

      const created = yield* post(
        `${base}/v1/transfers`,
        {
          client_transfer_id: "v2.prefunded",
          from: "hyperliquid",
          to: "aster",
          amount_in: "25000000",
          min_out: "1",
          payer: payer.address,
          recipient: payer.address,
          max_parts: 2,
        },
        bearer(payer.token),
      )
      expect(created.status, created.text).toBe(201)
      const t = created.json as TransferView
      const prep = t.withdrawal_preparation!
      expect(prep.amount).toBe("20000000")
      const submitted = yield* submitFunding(base, payer.token, payer.account, "hyperliquid", prep)
      expect(submitted.status, submitted.text).toBe(200)
      yield* waitFor(base, payer.token, (submitted.json as { id: string }).id, inState("relayed", "failed", "unknown"))
      yield* Effect.promise(() => hl!.sim.control.payoutsSettled())

      // Relayed and funded, liquidity there, but no pay key: the desk does not take (no Fill, no pay window).
      yield* sweep
      expect((yield* state(t.id)).take_id).toBeNull()
      expect(yield* sql`select 1 from takes where client_take_id = ${t.client_take_id}`).toHaveLength(0)

      // The client gives its key through the typed flow's transport; the desk then creates the take naming it.
      let keyGivenAt = 0n
      const api: TakerApi = {
        createTake: async (body) => {
          keyGivenAt = BigInt(Math.floor(Date.now() / 1000))
          const given = await Effect.runPromise(putKey(base, payer.token, t.id, { pay_key: body.pay_key }))
          expect(given.status, given.text).toBe(200)
          expect((given.json as TransferView).take_id).toBeNull()
          await Runtime.runPromise(runtime)(sweep)
          const shown = await Effect.runPromise(get(`${base}/v1/transfers`, payer.token))
          const takeId = (shown.json as { items: Array<TransferView> }).items.find((x) => x.id === t.id)!.take_id!
          const take = await Effect.runPromise(get(`${base}/v1/takes/${takeId}`, payer.token))
          expect(take.status, take.text).toBe(200)
          return take.json as TakeAnswer
        },
        postSignatures: async (takeId, body) => {
          const res = await Effect.runPromise(post(`${base}/v1/takes/${takeId}/signatures`, body, bearer(payer.token)))
          expect(res.status, res.text).toBe(200)
          return res.json as TakeAnswer
        },
      }
      const runtime = yield* Effect.runtime<SqlClient.SqlClient | AppConfig>()
      const config: TakerConfig = {
        chains: {
          999: { escrow: getAddress(hl!.chain.escrowV2!), token: getAddress(hl!.chain.token) },
          42161: { escrow: getAddress(aster!.chain.escrowV2!), token: getAddress(aster!.chain.token) },
        },
        minClaimWindowSeconds: BigInt(deployment.settlement.claim_window_seconds),
      }
      const started = yield* Effect.promise(() =>
        startTake(
          api,
          config,
          payer.account,
          {
            clientTakeId: t.client_take_id,
            from: "hyperliquid",
            to: "aster",
            intent: {
              takerChainId: 999,
              makerChainId: 42161,
              payer: getAddress(payer.address),
              recipient: getAddress(payer.address),
              amountIn: 25n * USDC,
              minOut: 1n,
              maxParts: 2,
              dex: PERPS_DEX,
              toMargin: true,
            },
          },
          {
            now: () => BigInt(Math.floor(Date.now() / 1000)),
            payByMaxSeconds: BigInt(deployment.settlement.pay_by_max_seconds),
          },
        ),
      )
      expect(started.ok ? [] : started.problems).toEqual([])
      if (!started.ok) return
      const { handle } = started
      const [take] = yield* sql<{ state: string; pay_key_address: string; pay_by: string }>`
        select state, pay_key_address, pay_by::text as pay_by from takes where id = ${handle.takeId}::uuid`
      expect(take).toMatchObject({ state: "signed", pay_key_address: handle.payKey.address.toLowerCase() })
      // The pay window started when the Fills were offered, after the key was given.
      expect(BigInt(take!.pay_by)).toBeGreaterThanOrEqual(
        keyGivenAt + BigInt(deployment.settlement.pay_by_max_seconds) - 10n,
      )
      const fills = yield* sql<{
        fill: { payKey: string }
      }>`select fill from fills where take_id = ${handle.takeId}::uuid`
      expect(fills.length).toBeGreaterThan(0)
      for (const f of fills) expect(lower(f.fill.payKey)).toBe(handle.payKey.address.toLowerCase())
      expect((yield* state(t.id)).pay_key).toBe(handle.payKey.address.toLowerCase())

      // Set once: the same key again answers the intent unchanged, whatever the account's access since (access
      // gates a new commitment only); another key is a conflict.
      yield* sql`update accounts set access = 'suspended' where master = ${payer.address}`
      const same = yield* putKey(base, payer.token, t.id, { pay_key: handle.payKey.address })
      expect(same.status, same.text).toBe(200)
      expect((same.json as TransferView).take_id).toBe(handle.takeId)
      const before = yield* state(t.id)
      const otherKey = yield* putKey(base, payer.token, t.id, { pay_key: fresh().address })
      expect([otherKey.status, code(otherKey)]).toEqual([409, "STATE_CONFLICT"])
      expect(yield* state(t.id)).toEqual(before)
      expect(yield* journalKinds(t.id)).toEqual(["transfer.created", "transfer.pay_key_given", "transfer.take_created"])
    }),
  )
})
