/**
 * Settlement v2 takes (issue 23): POST /v1/takes with the client's pay key over v2 quote sets, the hashlock index
 * each fill reserves, and the pay key's signatures (pay_authorization once every lock is final, cancels), on a real
 * database and two devnet chains deploying SettlementEscrowV2 (maker hyperliquid 999, taker aster 42161;
 * `finalized` 2 blocks behind). Until the quotes route (helper B) and the Settlement actor (helper D) do it, the
 * maker's v2 set is written as the quotes route will store it (real hashlocks, signed by the quote signer), and
 * the test locks the fills on the maker chain's v2 escrow itself and lets the VenueWatcher index them.
 */
import { SqlClient } from "@effect/sql"
import { expect, layer } from "@effect/vitest"
import { Context, Deferred, Effect, Fiber, Layer, Schedule } from "effect"
import { type Abi, type Address, encodeFunctionData, type Hex, hashTypedData, keccak256, toHex, zeroHash } from "viem"
import { generatePrivateKey, type PrivateKeyAccount, privateKeyToAccount } from "viem/accounts"
import { makeVenueWatcher } from "../../actors/VenueWatcher.ts"
import { settlementEscrowV2Abi as abi, mockUSDCAbi } from "../../src/Chain/artifacts/index.ts"
import { ChainClients } from "../../src/Chain/ChainClients.ts"
import { FaultPoint } from "../../src/Chain/FaultPoint.ts"
import { checkTakeProposal, type TakerConfig, type TakerIntent } from "../../src/Client/TakerChecks.ts"
import { authorizePayment, cancelFills, httpTakerApi, startTake } from "../../src/Client/TakerFlow.ts"
import { AppConfig } from "../../src/Config.ts"
import {
  cancelFillTypedData,
  fundOrderV2TypedData,
  PERPS_DEX,
  payTakeTypedData,
  type QuoteSetV2,
  quoteSetV2AbiArg,
  quoteSetV2TypedData,
} from "../../src/Domain/EscrowTypedDataV2.ts"
import { fadeFlagged } from "../../src/Domain/FadePolicy.ts"
import { deriveHashlockSet, secretKeyOf, verifyHashlockProof } from "../../src/Domain/Hashlocks.ts"
import { parseWireFillV2 } from "../../src/Domain/WireFillV2.ts"
import { toWireTypedData } from "../../src/Domain/WireTypedData.ts"
import { v2Cursor } from "../../src/Escrow/ChainIndexV2.ts"
import { chainStatus } from "../../src/Escrow/ChainStatus.ts"
import { flagIfFading } from "../../src/Settlement/RepoV2.ts"
import { loadQuoteCandidatesV2, type QuoteCandidateV2Row } from "../../src/Takes/QuoteCandidatesV2.ts"
import { expireUnsignedTakes } from "../../src/Takes/Repo.ts"
import { account, sendCalls, startTestChain, type TestChain, venueEntry } from "../support/ChainDevnet.ts"
import { TestDatabaseLive } from "../support/Database.ts"
import { type RawResponse, rawRequest } from "../support/Http.ts"
import { issueCredential } from "../support/QuoteIdentities.ts"
import { bearer, post, signIn } from "../support/SignIn.ts"
import { testAppConfig } from "../support/TestConfig.ts"
import { baseUrl, TestHttpLive } from "../support/TestServer.ts"

class Chains extends Context.Tag("test/V2TakeChains")<
  Chains,
  { readonly hl: TestChain; readonly aster: TestChain }
>() {}

const Live = Layer.unwrapScoped(
  Effect.gen(function* () {
    const start = (chainId: number, kind: "hyperliquid" | "aster") =>
      Effect.acquireRelease(
        Effect.promise(() => startTestChain({ chainId, kind, slotsInAnEpoch: 1 })),
        (c) => Effect.promise(() => c.anvil.stop()),
      )
    const [hl, aster] = yield* Effect.all([start(999, "hyperliquid"), start(42161, "aster")], { concurrency: 2 })
    const watcher = { page_blocks: 50, poll_ms: 50, integrity_interval_seconds: 3600 }
    const config = testAppConfig({
      venues: [
        venueEntry(hl, "hyperliquid", { watcher, escrowV2: true }),
        venueEntry(aster, "aster", { watcher, escrowV2: true }),
      ].map(({ legacy_escrow: _l, ...v }) => v),
      auth: { rpc_urls: [hl.anvil.rpcUrl] },
      settlement: { escrow_version: 2 },
    })
    return Layer.mergeAll(TestHttpLive, ChainClients.layerWith(), FaultPoint.Noop).pipe(
      Layer.provideMerge(TestDatabaseLive),
      Layer.provideMerge(config),
      Layer.merge(Layer.succeed(Chains, { hl, aster })),
    )
  }),
)

const code = (res: { json: unknown }) => (res.json as { error?: { code: string } } | undefined)?.error?.code

interface SignItem {
  kind: string
  signer: string
  // biome-ignore lint/suspicious/noExplicitAny: wire typed data
  typed_data: any
  fill_id?: string
  digest?: string
}
interface TakeResponse {
  take: {
    id: string
    state: string
    total_in: string
    pay_deadline: string
    escrow_version?: number
    pay_key?: string
    pay_by?: number
    pay_authorized_at?: string | null
    fills: Array<{ fill_id: string; order_id: string; fill_digest?: string; hashlock_index?: number }>
  }
  to_sign: Array<SignItem>
}
const ok = (res: RawResponse) => {
  expect(res.status, res.text).toBe(200)
  return res.json as TakeResponse
}

const operator = account(0)
const relayer = account(8)
const chainNow = (c: TestChain) => Effect.promise(async () => (await c.pub.getBlock()).timestamp)

/** Sends an escrow (or token) call and waits for its receipt; a revert dies with the escrow's error name. */
const send = (c: TestChain, from: PrivateKeyAccount, to: Address, functionName: string, args: ReadonlyArray<unknown>) =>
  Effect.promise(async () => {
    const callAbi = (to === c.token ? mockUSDCAbi : abi) as Abi
    await c.pub.simulateContract({ account: from, address: to, abi: callAbi, functionName, args } as never)
    await sendCalls(c, from, [{ to, data: encodeFunctionData({ abi: callAbi, functionName, args }), gas: 3_000_000n }])
  })

/** Mines past `finalized` (2 blocks behind), then runs the venue's watcher until both cursors reached it. */
const catchUp = (venueId: string) =>
  Effect.gen(function* () {
    const { hl, aster } = yield* Chains
    yield* Effect.promise(() => (venueId === "hyperliquid" ? hl : aster).test.mine({ blocks: 3 }))
    const { deployment } = yield* AppConfig
    const venue = deployment.venues.find((v) => v.id === venueId)!
    const w = (yield* makeVenueWatcher(venue)).handle
    for (let i = 0; i < 60; i++) {
      yield* w.poll
      const row = yield* chainStatus(venue.id)
      const v2 = yield* v2Cursor(venue.id)
      if (
        row?.finalizedBlock != null &&
        row.indexedBlock >= row.finalizedBlock &&
        v2 &&
        v2.indexedBlock >= row.finalizedBlock
      ) {
        return
      }
    }
    return yield* Effect.die(new Error(`watcher of ${venue.id} did not catch up`))
  })

interface V2Maker {
  readonly orderId: Hex
  readonly owner: PrivateKeyAccount
  readonly payee: Address
  readonly set: QuoteSetV2
  readonly quoteSig: Hex
  readonly hashlocks: ReadonlyArray<Hex>
}

/**
 * A v2 maker order on hyperliquid funded on chain (operator = the service's operator), indexed by the watcher, and
 * its quote set (count hashlocks derived from the quote signer's key) stored as the v2 quotes route stores it.
 */
const v2Maker = (p: { amount: bigint; count: number; minFill?: bigint }) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const { hl, aster } = yield* Chains
    const owner = privateKeyToAccount(generatePrivateKey())
    const signerKey = generatePrivateKey()
    const signer = privateKeyToAccount(signerKey)
    const master = owner.address.toLowerCase()
    const orderId = keccak256(toHex(`v2-order-${master}`))
    const escrow = hl.escrowV2!
    // Gas and tokens for the owner, then its FundOrder relayed (allowance path).
    yield* Effect.promise(() => hl.test.setBalance({ address: owner.address, value: 10n ** 18n }))
    yield* send(hl, relayer, hl.token, "mint", [owner.address, p.amount])
    yield* send(hl, owner, hl.token, "approve", [escrow, p.amount])
    const order = {
      orderId,
      owner: owner.address,
      operator: operator.address,
      quoteSigner: signer.address,
      amount: p.amount,
      deadline: (yield* chainNow(hl)) + 3600n,
    }
    const fundSig = yield* Effect.promise(() => owner.signTypedData(fundOrderV2TypedData(hl.chain.id, escrow, order)))
    yield* send(hl, relayer, escrow, "fund", [
      order,
      fundSig,
      { value: 0n, deadline: 0n, v: 0, r: zeroHash, s: zeroHash },
    ])

    const identityId = crypto.randomUUID()
    yield* sql`insert into accounts (master, access, created_at) values (${master}, 'granted', now())`
    yield* sql`insert into quote_identities (id, master, signer, kind, generation, lease_expires_at, created_at)
      values (${identityId}, ${master}, ${signer.address.toLowerCase()}, 'credential', 1,
        now() + interval '1 hour', now())`
    yield* sql`insert into orders (id, master, venue, receive_venue, owner_address, state, amount, created_at,
        updated_at, client_order_id, quote_identity_id, quote_signer, fund_deadline, to_sign, escrow_version)
      values (${orderId}, ${master}, 'hyperliquid', 'aster', ${master}, 'funded', ${p.amount.toString()},
        now(), now(), 'o-v2', ${identityId}, ${signer.address.toLowerCase()}, ${order.deadline.toString()},
        '[]'::jsonb, 2)`
    const hs = deriveHashlockSet(
      secretKeyOf(signerKey),
      { chainId: 999n, makerEscrow: escrow, owner: owner.address, orderId, sequence: 1n },
      p.count,
    )
    const payee = privateKeyToAccount(generatePrivateKey()).address
    const issuedAt = yield* chainNow(hl)
    const set: QuoteSetV2 = {
      owner: owner.address,
      orderId,
      sequence: 1n,
      generation: 1n,
      quoteSize: p.amount,
      issuedAt,
      validUntil: issuedAt + 290n,
      hashlockRoot: hs.root,
      hashlockCount: hs.count,
      quotes: [
        {
          chainId: 42161n,
          token: aster.token,
          escrow: aster.escrowV2!,
          recipient: payee,
          supply: 1n,
          receive: 1n,
          minFill: p.minFill ?? 1n,
        },
      ],
    }
    const quoteSig = yield* Effect.promise(() => signer.signTypedData(quoteSetV2TypedData(999, escrow, set)))
    const quote = {
      venue: "aster",
      chain_id: 42161,
      token: aster.token.toLowerCase(),
      escrow: aster.escrowV2!.toLowerCase(),
      recipient: payee.toLowerCase(),
      supply: "1",
      receive: "1",
      min_fill: (p.minFill ?? 1n).toString(),
    }
    yield* sql`insert into quote_sets (id, order_id, quote_identity_id, identity_generation, cancel_epoch, sequence,
        valid_until, quote_size, quotes, signature, active, created_at, issued_at, hashlock_root, hashlock_count,
        hashlocks)
      values (${crypto.randomUUID()}, ${orderId}, ${identityId}, 1, 0, 1, ${new Date(Number(set.validUntil) * 1000)},
        ${p.amount.toString()}, ${JSON.stringify([quote])}::jsonb, ${quoteSig}, true, now(), ${issuedAt.toString()},
        ${hs.root}, ${hs.count}, ${JSON.stringify(hs.hashlocks)}::jsonb)`
    return { orderId, owner, payee, set, quoteSig, hashlocks: hs.hashlocks } satisfies V2Maker
  })

/** A v1 order with a better price and a live v1 set (escrow index row): a v2 take must not route over it. */
const v1Maker = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const { aster } = yield* Chains
  const master = privateKeyToAccount(generatePrivateKey()).address.toLowerCase()
  const orderId = keccak256(toHex(`v1-order-${master}`))
  const identityId = crypto.randomUUID()
  yield* sql`insert into accounts (master, access, created_at) values (${master}, 'granted', now())`
  yield* sql`insert into quote_identities (id, master, signer, kind, generation, lease_expires_at, created_at)
    values (${identityId}, ${master}, ${master}, 'credential', 1, now() + interval '1 hour', now())`
  yield* sql`insert into orders (id, master, venue, receive_venue, owner_address, state, amount, created_at,
      updated_at, client_order_id, quote_identity_id, quote_signer, fund_deadline, to_sign)
    values (${orderId}, ${master}, 'hyperliquid', 'aster', ${master}, 'funded', '100000000', now(), now(), 'o-v1',
      ${identityId}, ${master}, 0, '[]'::jsonb)`
  yield* sql`insert into escrow_orders (venue, order_id, owner, operator, quote_signer, available, locked,
      created_block, block_number, block_hash)
    values ('hyperliquid', ${orderId}, ${master}, ${operator.address.toLowerCase()}, ${master}, 100000000, 0, 1, 1,
      ${zeroHash})`
  const quote = {
    venue: "aster",
    chain_id: 42161,
    token: aster.token.toLowerCase(),
    recipient: master,
    supply: "2",
    receive: "1",
    min_fill: "1",
  }
  yield* sql`insert into quote_sets (id, order_id, quote_identity_id, identity_generation, cancel_epoch, sequence,
      valid_until, quote_size, quotes, signature, active, created_at)
    values (${crypto.randomUUID()}, ${orderId}, ${identityId}, 1, 0, 1, now() + interval '5 minutes', 100000000,
      ${JSON.stringify([quote])}::jsonb, '0x', true, now())`
  return orderId
})

/** A taker signed in through the API, linked on aster (the `from` venue), with a fresh pay key. */
const taker = Effect.gen(function* () {
  const base = yield* baseUrl
  const sql = yield* SqlClient.SqlClient
  const account = privateKeyToAccount(generatePrivateKey())
  const token = yield* signIn(base, account)
  yield* sql`insert into linked_accounts (master, venue, address, linked_at)
    values (${account.address.toLowerCase()}, 'aster', ${account.address.toLowerCase()}, now())`
  return { account, token, master: account.address.toLowerCase(), payKey: privateKeyToAccount(generatePrivateKey()) }
})

/** Only these orders' sets are live (the tests share one database). */
const only = (orderIds: ReadonlyArray<string>) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql`update quote_sets set active = (order_id in ${sql.in(orderIds)})`.pipe(Effect.asVoid),
  )

const takeBody = (t: { master: string; payKey: PrivateKeyAccount }, over: Record<string, unknown> = {}) => ({
  client_take_id: `take-${crypto.randomUUID()}`,
  from: "aster",
  to: "hyperliquid",
  amount_in: "3000000",
  min_out: "1",
  payer: t.master,
  recipient: t.master,
  max_parts: 8,
  pay_key: t.payKey.address,
  ...over,
})

/** Everything a refusal must leave as it was: the take's row and its fills' pay-key columns, the journal size. */
const snapshot = (takeId: string) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const takes = yield* sql`select state, pay_authorization, pay_authorized_at, updated_at from takes
      where id = ${takeId}::uuid`
    const fills = yield* sql`select id, state, cancel_signature, updated_at from fills where take_id = ${takeId}::uuid
      order by id`
    const journal = yield* sql<{ n: number }>`select count(*)::int as n from journal`
    return { takes, fills, journal: journal[0]!.n }
  })

layer(Live, { timeout: "300 seconds", excludeTestServices: true })("takes v2", (it) => {
  it.effect("a v2 take: pay_key required, v2 orders only, Fills naming the pay key, payBy and a proven hashlock", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const sql = yield* SqlClient.SqlClient
      const { hl, aster } = yield* Chains
      const { deployment } = yield* AppConfig
      const M = yield* v2Maker({ amount: 10_000_000n, count: 8 })
      yield* catchUp("hyperliquid")
      // Written after the watcher ran: its integrity check would flag a v1 order that is not on chain.
      const v1 = yield* v1Maker
      yield* only([M.orderId, v1])
      const t = yield* taker

      // Bad inputs: no pay key, not an address, the zero address: 400, nothing written.
      const { pay_key: _omit, ...withoutKey } = takeBody(t)
      for (const body of [
        withoutKey as Record<string, unknown>,
        takeBody(t, { pay_key: "0x1234" }),
        takeBody(t, { pay_key: `0x${"0".repeat(40)}` }),
        takeBody(t, { pay_key: 7 }),
      ]) {
        const res = yield* post(`${base}/v1/takes`, body, bearer(t.token))
        expect([res.status, code(res)], JSON.stringify(body.pay_key)).toEqual([400, "INVALID_REQUEST"])
      }
      const none = yield* sql<{ n: number }>`select count(*)::int as n from takes where master = ${t.master}`
      expect(none[0]!.n).toBe(0)

      const body = takeBody(t, { max_parts: 2 })
      const created = ok(yield* post(`${base}/v1/takes`, body, bearer(t.token)))
      const { take, to_sign } = created
      expect(take).toMatchObject({ state: "reserved", escrow_version: 2, pay_key: t.payKey.address.toLowerCase() })
      // The v1 order pays twice as much and is not routed to: v2 orders only.
      expect(take.fills.map((f) => f.order_id)).toEqual([M.orderId])
      expect(take.fills.map((f) => f.hashlock_index)).toEqual([0])

      // The times: payBy within PAY_BY_MAX of now, the signing window in its first half.
      const now = BigInt(Math.floor(Date.now() / 1000))
      const payBy = BigInt(take.pay_by!)
      const s = deployment.settlement
      expect(payBy > now && payBy <= now + BigInt(s.pay_by_max_seconds)).toBe(true)
      expect(BigInt(Date.parse(take.pay_deadline) / 1000) < payBy).toBe(true)

      // The items pass the taker client's own checks against the intent and the reviewed escrows.
      const config: TakerConfig = {
        chains: {
          42161: { escrow: aster.escrowV2!, token: aster.token },
          999: { escrow: hl.escrowV2!, token: hl.token },
        },
        minClaimWindowSeconds: BigInt(s.claim_window_seconds),
      }
      const intent: TakerIntent = {
        takerChainId: 42161,
        makerChainId: 999,
        payer: t.account.address,
        recipient: t.account.address,
        amountIn: 3_000_000n,
        minOut: 1n,
        maxParts: 2,
        payKey: t.payKey.address,
        maxPayBy: now + BigInt(s.pay_by_max_seconds) + 5n,
        dex: PERPS_DEX,
        toMargin: true,
      }
      const checked = checkTakeProposal(intent, config, to_sign, now)
      expect(checked.ok ? [] : checked.problems).toEqual([])
      expect(to_sign.map((i) => [i.kind, i.signer])).toEqual([
        ["permit", t.master],
        ["margin_move", t.master],
      ])
      expect(to_sign[0]!.typed_data.message).toMatchObject({
        spender: aster.escrowV2,
        value: take.total_in,
        deadline: String(payBy),
      })
      const move = to_sign[1]!
      const fill = parseWireFillV2(move.typed_data.message)
      expect(fill).toMatchObject({ payBy, hashlockIndex: 0, hashlock: M.hashlocks[0] })
      // The digest claimed is the wallet's and the taker escrow's own.
      expect(move.digest).toBe(hashTypedData(move.typed_data))
      const onChain = yield* Effect.promise(() =>
        aster.pub.readContract({ address: aster.escrowV2!, abi, functionName: "hashFill", args: [fill] }),
      )
      expect(onChain).toBe(move.digest)
      const [row] = yield* sql<{ fill_digest: string; hashlock_proof: Array<Hex>; pay_by: string; sc: null }>`
        select fill_digest, hashlock_proof, pay_by::text as pay_by, secret_ciphertext as sc from fills
        where id = ${move.fill_id!}::uuid`
      expect(row).toMatchObject({ fill_digest: move.digest, pay_by: String(payBy), sc: null })
      expect(
        verifyHashlockProof({
          root: M.set.hashlockRoot,
          count: M.set.hashlockCount,
          index: 0,
          hashlock: fill.hashlock,
          proof: row!.hashlock_proof,
        }),
      ).toBe(true)

      // The same request again: the same take; another pay key is other parameters.
      expect(ok(yield* post(`${base}/v1/takes`, body, bearer(t.token)))).toEqual(created)
      const other = yield* post(`${base}/v1/takes`, { ...body, pay_key: account(9).address }, bearer(t.token))
      expect([other.status, code(other)]).toEqual([409, "STATE_CONFLICT"])

      // The preview of a v2 deployment routes over v2 sets as well.
      const preview = (yield* post(`${base}/v1/takes/preview`, { from: "aster", to: "hyperliquid", amount_in: "1000" }))
        .json as { fills: Array<{ order_id: string }> }
      expect(preview.fills.map((f) => f.order_id)).toEqual([M.orderId])
      // The hand-written v1 row is not on chain: gone before another watcher's integrity check reads it.
      yield* sql`delete from escrow_orders where order_id = ${v1}`
    }),
  )

  it.effect("a hashlock index is reserved once: sequential and concurrent takes never share one", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const sql = yield* SqlClient.SqlClient
      const M = yield* v2Maker({ amount: 10_000_000n, count: 4 })
      yield* catchUp("hyperliquid")
      yield* only([M.orderId])
      const takers = yield* Effect.all([taker, taker, taker, taker, taker])
      const first = ok(
        yield* post(`${base}/v1/takes`, takeBody(takers[0]!, { max_parts: 1 }), bearer(takers[0]!.token)),
      )
      expect(first.take.fills.map((f) => f.hashlock_index)).toEqual([0])
      // Four at once for the three indexes left: three get one each, one finds the set exhausted.
      const results = yield* Effect.all(
        takers
          .slice(1)
          .map((t) => post(`${base}/v1/takes`, takeBody(t, { amount_in: "1000", max_parts: 1 }), bearer(t.token))),
        { concurrency: "unbounded" },
      )
      expect(results.map((r) => r.status).sort()).toEqual([200, 200, 200, 422])
      expect(code(results.find((r) => r.status === 422)!)).toBe("NO_LIQUIDITY")
      const indexes = yield* sql<{ i: number }>`
        select hashlock_index as i from fills where order_id = ${M.orderId} order by hashlock_index`
      expect(indexes.map((r) => r.i)).toEqual([0, 1, 2, 3])
      // Released reservations not yet marked expired by the sweep keep their indexes: the set stays exhausted
      // (indexes that come back once marked: the next test).
      yield* sql`update takes set pay_deadline = now() - interval '1 second'
        where id in (select take_id from fills where order_id = ${M.orderId})`
      const after = yield* post(
        `${base}/v1/takes`,
        takeBody(takers[4]!, { amount_in: "1000" }),
        bearer(takers[4]!.token),
      )
      expect([after.status, code(after)]).toEqual([422, "NO_LIQUIDITY"])
    }),
  )

  it.effect("an index whose fill expired unsigned is handed out again, lowest first; a signed fill's never", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const sql = yield* SqlClient.SqlClient
      const M = yield* v2Maker({ amount: 10_000_000n, count: 3 })
      yield* catchUp("hyperliquid")
      yield* only([M.orderId])
      const takers = yield* Effect.all([taker, taker, taker, taker, taker, taker])
      const take = (i: number) =>
        post(`${base}/v1/takes`, takeBody(takers[i]!, { amount_in: "1000", max_parts: 1 }), bearer(takers[i]!.token))
      const indexOf = (res: RawResponse) => ok(res).take.fills.map((f) => f.hashlock_index)

      // Index 0's take is signed (the payer's Fill signature stored: it could lock), 1 and 2 stay unsigned.
      const signedRes = yield* take(0)
      const signedTake = ok(signedRes)
      expect(indexOf(signedRes)).toEqual([0])
      const t0 = takers[0]!
      const signatures = {
        permit: yield* Effect.promise(() => t0.account.signTypedData(signedTake.to_sign[0]!.typed_data)),
        fills: yield* Effect.forEach(
          signedTake.to_sign.filter((i) => i.kind === "margin_move"),
          (m) =>
            Effect.promise(async () => ({
              fill_id: m.fill_id!,
              signature: await t0.account.signTypedData(m.typed_data),
            })),
        ),
      }
      const signed = ok(yield* post(`${base}/v1/takes/${signedTake.take.id}/signatures`, signatures, bearer(t0.token)))
      expect(signed.take.state).toBe("signed")
      expect(indexOf(yield* take(1))).toEqual([1])
      expect(indexOf(yield* take(2))).toEqual([2])

      // Every window passes and the signed fill ends refunded (its hashlock may have locked on chain). Until the
      // sweep marks the unsigned fills expired, they keep their indexes: the set is exhausted.
      yield* sql`update takes set pay_deadline = now() - interval '1 second'
        where id in (select take_id from fills where order_id = ${M.orderId})`
      yield* sql`update fills set state = 'refunded', final = true where take_id = ${signedTake.take.id}::uuid`
      const early = yield* take(3)
      expect([early.status, code(early)]).toEqual([422, "NO_LIQUIDITY"])
      expect(yield* expireUnsignedTakes()).toBeGreaterThanOrEqual(2)
      const states = yield* sql<{ i: number; state: string; signed: boolean }>`
        select hashlock_index as i, state, signature is not null as signed from fills
        where order_id = ${M.orderId} order by hashlock_index`
      expect(states).toEqual([
        { i: 0, state: "refunded", signed: true },
        { i: 1, state: "expired", signed: false },
        { i: 2, state: "expired", signed: false },
      ])

      // The freed indexes go out lowest first, with their own hashlock and proof; the refunded one's never does.
      const again = yield* take(3)
      expect(indexOf(again)).toEqual([1])
      const [reused] = yield* sql<{ hashlock: string; hashlock_proof: Array<Hex> }>`
        select hashlock, hashlock_proof from fills where id = ${ok(again).take.fills[0]!.fill_id}::uuid`
      expect(reused!.hashlock.toLowerCase()).toBe(M.hashlocks[1]!.toLowerCase())
      const proof = reused!.hashlock_proof
      const root = M.set.hashlockRoot
      expect(verifyHashlockProof({ root, count: 3, index: 1, hashlock: M.hashlocks[1]!, proof })).toBe(true)
      expect(indexOf(yield* take(4))).toEqual([2])
      const exhausted = yield* take(5)
      expect([exhausted.status, code(exhausted)]).toEqual([422, "NO_LIQUIDITY"])
      const held = yield* sql<{ i: number; n: number }>`
        select hashlock_index as i, count(*)::int as n from fills
        where order_id = ${M.orderId} and not (state = 'expired' and signature is null)
        group by hashlock_index order by hashlock_index`
      expect(held).toEqual([
        { i: 0, n: 1 },
        { i: 1, n: 1 },
        { i: 2, n: 1 },
      ])
    }),
  )

  it.effect("a take's free indexes come with its candidates under the lock: gaps first, at most max_parts", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const sql = yield* SqlClient.SqlClient
      const { deployment } = yield* AppConfig
      const M = yield* v2Maker({ amount: 10_000_000n, count: 6 })
      yield* catchUp("hyperliquid")
      yield* only([M.orderId])
      const takers = yield* Effect.all([taker, taker, taker, taker, taker])
      const takeIds: Array<string> = []
      for (const t of takers.slice(0, 4)) {
        const res = yield* post(`${base}/v1/takes`, takeBody(t, { amount_in: "1000", max_parts: 1 }), bearer(t.token))
        takeIds.push(ok(res).take.id)
      }
      // Indexes 0-3 held; the takes holding 1 and 3 expire unsigned: held {0, 2} of 6.
      yield* sql`update takes set pay_deadline = now() - interval '1 second'
        where id in (${takeIds[1]!}::uuid, ${takeIds[3]!}::uuid)`
      expect(yield* expireUnsignedTakes()).toBe(2)

      const from = deployment.venues.find((v) => v.id === "aster")!
      const read = (freeIndexes?: number) =>
        sql.withTransaction(
          loadQuoteCandidatesV2({
            from: { id: from.id, chainId: from.chain_id, token: from.token },
            to: "hyperliquid",
            takerEscrow: from.escrow_v2!.address,
            lockCutoffSeconds: deployment.settlement.lock_cutoff_seconds,
            forUpdate: true,
            ...(freeIndexes === undefined ? {} : { freeIndexes }),
          }),
        )
      const freeOf = (rows: ReadonlyArray<QuoteCandidateV2Row>, held = 2) => {
        expect(rows.length).toBeGreaterThan(0)
        expect(rows.every((r) => r.order_id === M.orderId && r.hashlocks_held === held)).toBe(true)
        return rows[0]!.free_indexes
      }
      // The lowest free ones below held + limit, then the count bounds them; none asked, none read.
      expect(freeOf(yield* read(1))).toEqual([1])
      expect(freeOf(yield* read(3))).toEqual([1, 3, 4])
      expect(freeOf(yield* read(8))).toEqual([1, 3, 4, 5])
      expect(freeOf(yield* read())).toBeNull()

      // The next take gets the lowest: the gap at 1.
      const next = yield* post(
        `${base}/v1/takes`,
        takeBody(takers[4]!, { amount_in: "1000" }),
        bearer(takers[4]!.token),
      )
      expect(ok(next).take.fills.map((f) => f.hashlock_index)).toEqual([1])
      expect(freeOf(yield* read(8), 3)).toEqual([3, 4, 5])
    }),
  )

  it.effect(
    "a set's remaining counts its live reservations and locked or claimed fills, not refunds or other sets",
    () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const sql = yield* SqlClient.SqlClient
        const M = yield* v2Maker({ amount: 10_000_000n, count: 8 })
        yield* catchUp("hyperliquid")
        yield* only([M.orderId])
        const t = yield* taker
        // What a take may route now: the least of the order's quotable and the set's remaining (quotes are 1:1).
        const routable = Effect.map(
          post(`${base}/v1/takes/preview`, { from: "aster", to: "hyperliquid", amount_in: "10000000" }),
          (res) => (res.json as { total_in: string }).total_in,
        )
        expect(yield* routable).toBe("10000000")
        const take = ok(yield* post(`${base}/v1/takes`, takeBody(t, { max_parts: 1 }), bearer(t.token))).take
        // A live reservation: out of the order and of the set.
        expect(yield* routable).toBe("7000000")

        // Its fill names both masters (migrations/0036: set as the take's statement inserts it; trades' scope=mine).
        const masters = yield* sql<{ named: boolean }>`
        select f.taker_master = t.master and f.maker_master = o.master as named
        from fills f join takes t on t.id = f.take_id join orders o on o.id = f.order_id
        where f.take_id = ${take.id}::uuid`
        expect(masters).toEqual([{ named: true }])
        // Its lock indexed (as the watcher writes it): the order's available is the chain's (here unchanged, so the
        // order quotes 10M again), and the set still counts the locked fill: what it caps is the set's remaining.
        const lock = (state: string) => sql`
        insert into escrow_v2_locks (venue, fill_digest, state, order_key, owner, order_id, sequence, payer, recipient,
          amount_in, amount_out, dex, to_margin, hashlock, hashlock_index, expiry, taker_expiry, pay_key, pay_by,
          created_block, tx_hash, block_number, block_hash)
        select f.maker_venue, f.fill_digest, ${state}, ${keccak256(M.orderId)}, f.fill->>'owner', f.order_id,
          f.sequence, f.payer, f.recipient, f.amount_in, f.amount_out, 0, true, f.hashlock, f.hashlock_index,
          f.maker_expiry, f.taker_expiry, t.pay_key_address, f.pay_by, 1, ${zeroHash}, 1, ${zeroHash}
        from fills f join takes t on t.id = f.take_id where f.take_id = ${take.id}::uuid
        on conflict (venue, fill_digest) do update set state = excluded.state`
        const fill = (state: string, sequence = 1) => sql`
        update fills set state = ${state}, final = ${state !== "locked"}, sequence = ${sequence}
        where take_id = ${take.id}::uuid`
        yield* lock("locked")
        yield* fill("locked")
        expect(yield* routable).toBe("7000000")
        // Refunded in the index while the fill is not final yet: the set has it back at once; and once final.
        yield* lock("refunded")
        expect(yield* routable).toBe("10000000")
        yield* fill("refunded")
        expect(yield* routable).toBe("10000000")
        // Claimed and the fill settled (final; hand-written after the refund): the escrow's filledOut keeps it.
        yield* lock("claimed")
        yield* fill("settled")
        expect(yield* routable).toBe("7000000")
        // A settled fill of another set (sequence 0) is not this set's.
        yield* fill("settled", 0)
        expect(yield* routable).toBe("10000000")
        // Hand-written: gone before a watcher's integrity check reads it.
        yield* sql`delete from escrow_v2_locks where order_id = ${M.orderId}`
      }),
  )

  it.effect("pay_authorization once every lock is final (else 409), by the pay key only (else 422); cancels", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const sql = yield* SqlClient.SqlClient
      const { hl } = yield* Chains
      const M = yield* v2Maker({ amount: 10_000_000n, count: 8 })
      yield* catchUp("hyperliquid")
      yield* only([M.orderId])
      const t = yield* taker
      const created = ok(yield* post(`${base}/v1/takes`, takeBody(t, { max_parts: 1 }), bearer(t.token)))
      const takeId = created.take.id
      const moves = created.to_sign.filter((i) => i.kind === "margin_move")
      const digests = moves.map((m) => m.digest as Hex)
      const signatures = {
        permit: yield* Effect.promise(() => t.account.signTypedData(created.to_sign[0]!.typed_data)),
        fills: yield* Effect.forEach(moves, (m) =>
          Effect.promise(async () => ({ fill_id: m.fill_id!, signature: await t.account.signTypedData(m.typed_data) })),
        ),
      }
      const payTake = payTakeTypedData(42161, (yield* Chains).aster.escrowV2!, digests)
      const payAuth = yield* Effect.promise(() => t.payKey.signTypedData(payTake))
      const signTake = (b: unknown) => post(`${base}/v1/takes/${takeId}/signatures`, b, bearer(t.token))

      // The wallet's signatures and a pay-key item together, or neither: 400, nothing changed.
      const before = yield* snapshot(takeId)
      for (const b of [{ ...signatures, pay_authorization: payAuth }, {}, { permit: signatures.permit }]) {
        const res = yield* signTake(b)
        expect([res.status, code(res)], JSON.stringify(Object.keys(b))).toEqual([400, "INVALID_REQUEST"])
      }
      expect(yield* snapshot(takeId)).toEqual(before)
      const signed = ok(yield* signTake(signatures))
      expect(signed.take.state).toBe("signed")

      // No lock yet: no pay item offered, and the authorisation is refused (409), nothing stored.
      expect(signed.to_sign.map((i) => i.kind)).toEqual(["permit", "margin_move"])
      const early = yield* snapshot(takeId)
      const tooEarly = yield* signTake({ pay_authorization: payAuth })
      expect([tooEarly.status, code(tooEarly)]).toEqual([409, "STATE_CONFLICT"])
      // Retryable: a client that read the locks final on its own endpoint retries until this index catches up.
      expect((tooEarly.json as { error: { retryable: boolean } }).error.retryable).toBe(true)
      expect(yield* snapshot(takeId)).toEqual(early)

      // Lock on the maker chain's v2 escrow as the Settlement actor will (the fill, the payer's signature, the
      // maker's set and signature, the stored proof), then let it become final and indexed.
      for (const [i, m] of moves.entries()) {
        const [row] = yield* sql<{ hashlock_proof: Array<Hex>; quote_index: number }>`
          select hashlock_proof, quote_index from fills where id = ${m.fill_id!}::uuid`
        yield* send(hl, operator, hl.escrowV2!, "lock", [
          parseWireFillV2(m.typed_data.message),
          signatures.fills[i]!.signature,
          quoteSetV2AbiArg(M.set),
          BigInt(row!.quote_index),
          M.quoteSig,
          row!.hashlock_proof,
        ])
      }
      // Locked at latest only: still not offered.
      const latest = ok(yield* rawRequest(`${base}/v1/takes/${takeId}`, { headers: bearer(t.token) }))
      expect(latest.to_sign.map((i) => i.kind)).toEqual(["permit", "margin_move"])
      yield* catchUp("hyperliquid")

      // Final: the pay key's item, over the digests in fill order, in the taker v2 escrow's domain.
      const offered = ok(yield* rawRequest(`${base}/v1/takes/${takeId}`, { headers: bearer(t.token) }))
      const item = offered.to_sign.find((i) => i.kind === "pay_authorization")!
      expect(item).toEqual({
        kind: "pay_authorization",
        signer: t.payKey.address.toLowerCase(),
        typed_data: toWireTypedData(payTake),
      })

      // Another key, other digests, a malformed signature: refused, nothing changed.
      const refusals = [
        [yield* Effect.promise(() => t.account.signTypedData(payTake)), 422, "SIGNATURE_INVALID"],
        [
          yield* Effect.promise(() =>
            t.payKey.signTypedData(
              payTakeTypedData(42161, (item.typed_data.domain as { verifyingContract: Address }).verifyingContract, [
                zeroHash,
              ]),
            ),
          ),
          422,
          "SIGNATURE_INVALID",
        ],
        ["0x1234", 422, "SIGNATURE_MALFORMED"],
      ] as const
      const ready = yield* snapshot(takeId)
      for (const [sig, status, c] of refusals) {
        const res = yield* signTake({ pay_authorization: sig })
        expect([res.status, code(res)]).toEqual([status, c])
      }
      expect(yield* snapshot(takeId)).toEqual(ready)
      // payBy passed (the row's pay_by moved into the past for one request): 409, not retryable, nothing stored.
      const [kept] = yield* sql<{ pay_by: string }>`select pay_by::text from takes where id = ${takeId}::uuid`
      yield* sql`update takes set pay_by = 1 where id = ${takeId}::uuid`
      const late = yield* signTake({ pay_authorization: payAuth })
      expect([late.status, code(late), (late.json as { error: { retryable: boolean } }).error.retryable]).toEqual([
        409,
        "STATE_CONFLICT",
        false,
      ])
      yield* sql`update takes set pay_by = ${kept!.pay_by}::bigint where id = ${takeId}::uuid`
      expect(yield* snapshot(takeId)).toEqual(ready)
      // A fill already cancelled by the pay key (stored as a cancels item stores it): one payTake would pay for the
      // lock being released, so 409, not retryable, nothing stored.
      const firstFill = moves[0]!.fill_id!
      const cancelFirst = yield* Effect.promise(() =>
        t.payKey.signTypedData(cancelFillTypedData(999, hl.escrowV2!, digests[0]!)),
      )
      yield* sql`update fills set cancel_signature = ${cancelFirst} where id = ${firstFill}::uuid`
      const cancelled = yield* signTake({ pay_authorization: payAuth })
      expect([
        cancelled.status,
        code(cancelled),
        (cancelled.json as { error: { retryable: boolean } }).error.retryable,
      ]).toEqual([409, "STATE_CONFLICT", false])
      yield* sql`update fills set cancel_signature = null where id = ${firstFill}::uuid`
      expect(yield* snapshot(takeId)).toEqual(ready)

      // A cancel committed while the authorisation waits for the take's row lock (as storeCancels holds it): seen
      // under the lock, 409 Cancelled, nothing stored (the read that waits for the lock must not be the one that
      // looks for cancels: its snapshot predates the cancel).
      const release = yield* Deferred.make<void>()
      const holder = yield* sql
        .withTransaction(
          Effect.gen(function* () {
            yield* sql`select 1 from takes where id = ${takeId}::uuid for update`
            yield* sql`update fills set cancel_signature = ${cancelFirst} where id = ${firstFill}::uuid`
            yield* Deferred.await(release)
          }),
        )
        .pipe(Effect.fork)
      const racing = yield* Effect.fork(signTake({ pay_authorization: payAuth }))
      yield* Effect.repeat(
        sql<{ n: number }>`
          select count(*)::int as n from pg_stat_activity
          where wait_event_type = 'Lock' and query like '%from takes t where id = %for update'`,
        { until: ([w]) => w!.n > 0, schedule: Schedule.spaced("20 millis") },
      ).pipe(Effect.timeout("30 seconds"))
      yield* Deferred.succeed(release, undefined)
      yield* Fiber.join(holder)
      const raced = yield* Fiber.join(racing)
      expect([raced.status, code(raced)], raced.text).toEqual([409, "STATE_CONFLICT"])
      yield* sql`update fills set cancel_signature = null where id = ${firstFill}::uuid`
      expect(yield* snapshot(takeId)).toEqual(ready)

      const authorized = ok(yield* signTake({ pay_authorization: payAuth }))
      expect(authorized.take.pay_authorized_at).not.toBeNull()
      const [stored] = yield* sql<{ pay_authorization: string }>`
        select pay_authorization from takes where id = ${takeId}::uuid`
      expect(stored!.pay_authorization.toLowerCase()).toBe(payAuth.toLowerCase())
      const journaled = yield* sql`select 1 from journal where kind = 'take.pay_authorized' and master = ${t.master}`
      expect(journaled.length).toBe(1)
      // The same again: 200, unchanged.
      const once = yield* snapshot(takeId)
      expect(ok(yield* signTake({ pay_authorization: payAuth })).take.pay_authorized_at).toBe(
        authorized.take.pay_authorized_at,
      )
      expect(yield* snapshot(takeId)).toEqual(once)

      // Cancels: CancelFill by the pay key in the maker v2 escrow's domain; another signer 422, another fill 400.
      const cancel = cancelFillTypedData(999, hl.escrowV2!, digests[0]!)
      const fillId = moves[0]!.fill_id!
      const good = yield* Effect.promise(() => t.payKey.signTypedData(cancel))
      const badCancels: ReadonlyArray<readonly [unknown, number, string]> = [
        [
          [{ fill_id: fillId, signature: yield* Effect.promise(() => t.account.signTypedData(cancel)) }],
          422,
          "SIGNATURE_INVALID",
        ],
        [[{ fill_id: crypto.randomUUID(), signature: good }], 400, "INVALID_REQUEST"],
        [[{ fill_id: fillId, signature: "0x1234" }], 422, "SIGNATURE_MALFORMED"],
        [
          [
            { fill_id: fillId, signature: good },
            { fill_id: fillId, signature: good },
          ],
          400,
          "INVALID_REQUEST",
        ],
        [[{ fill_id: fillId, signature: good, extra: 1 }], 400, "INVALID_REQUEST"],
        [[], 400, "INVALID_REQUEST"],
        [Array.from({ length: 9 }, () => ({ fill_id: fillId, signature: good })), 400, "INVALID_REQUEST"],
      ]
      for (const [cancels, status, c] of badCancels) {
        const res = yield* signTake({ cancels })
        expect([res.status, code(res)], res.text).toEqual([status, c])
      }
      expect(yield* snapshot(takeId)).toEqual(once)
      const cancelSig = yield* Effect.promise(() => t.payKey.signTypedData(cancel))
      ok(yield* signTake({ cancels: [{ fill_id: fillId, signature: cancelSig }] }))
      const [c] = yield* sql<{
        cancel_signature: string
      }>`select cancel_signature from fills where id = ${fillId}::uuid`
      expect(c!.cancel_signature.toLowerCase()).toBe(cancelSig.toLowerCase())
    }),
  )

  it.effect("the taker's flow: checks, signs, waits for final locks on its own endpoint, then authorises", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const sql = yield* SqlClient.SqlClient
      const { hl, aster } = yield* Chains
      const { deployment } = yield* AppConfig
      const M = yield* v2Maker({ amount: 10_000_000n, count: 8 })
      yield* catchUp("hyperliquid")
      yield* only([M.orderId])
      const t = yield* taker
      const api = httpTakerApi(base, t.token)
      const config: TakerConfig = {
        chains: {
          42161: { escrow: aster.escrowV2!, token: aster.token },
          999: { escrow: hl.escrowV2!, token: hl.token },
        },
        minClaimWindowSeconds: BigInt(deployment.settlement.claim_window_seconds),
      }
      const started = yield* Effect.promise(() =>
        startTake(
          api,
          config,
          t.account,
          {
            clientTakeId: `flow-${crypto.randomUUID()}`,
            from: "aster",
            to: "hyperliquid",
            intent: {
              takerChainId: 42161,
              makerChainId: 999,
              payer: t.account.address,
              recipient: t.account.address,
              amountIn: 2_000_000n,
              minOut: 1_000_000n,
              maxParts: 4,
              dex: PERPS_DEX,
              toMargin: true,
            },
          },
          {
            now: () => BigInt(Math.floor(Date.now() / 1000)),
            payByMaxSeconds: BigInt(deployment.settlement.pay_by_max_seconds),
            // Its own taker-chain endpoint: the permit must use the payer's nonce read there (the real token).
            takerChain: aster.pub,
          },
        ),
      )
      expect(started.ok ? [] : started.problems).toEqual([])
      if (!started.ok) return
      const { handle } = started
      const [row] = yield* sql<{ state: string; pay_key_address: string }>`
        select state, pay_key_address from takes where id = ${handle.takeId}::uuid`
      expect(row).toEqual({ state: "signed", pay_key_address: handle.payKey.address.toLowerCase() })

      // Lock every fill (as Settlement will), visible at latest only: the flow signs nothing with the pay key.
      const fills = yield* sql<{ signature: Hex; hashlock_proof: Array<Hex>; quote_index: number; fill: unknown }>`
        select signature, hashlock_proof, quote_index, fill from fills where take_id = ${handle.takeId}::uuid`
      for (const f of fills) {
        yield* send(hl, operator, hl.escrowV2!, "lock", [
          parseWireFillV2(f.fill),
          f.signature,
          quoteSetV2AbiArg(M.set),
          BigInt(f.quote_index),
          M.quoteSig,
          f.hashlock_proof,
        ])
      }
      const early = yield* Effect.promise(() => authorizePayment(api, hl.pub, handle))
      expect(early).toMatchObject({ ok: false, retry: true })
      expect(handle.payTakeSigned).toBe(false)
      const unpaid = yield* sql<{
        a: string | null
      }>`select pay_authorization as a from takes where id = ${handle.takeId}::uuid`
      expect(unpaid[0]!.a).toBeNull()

      // Final on the client's own endpoint and in the service's index: the pay key authorises, the service stores it.
      yield* catchUp("hyperliquid")
      const done = yield* Effect.promise(() => authorizePayment(api, hl.pub, handle))
      expect(done).toEqual({ ok: true })
      const paid = yield* sql<{
        a: string | null
      }>`select pay_authorization as a from takes where id = ${handle.takeId}::uuid`
      expect(paid[0]!.a).not.toBeNull()

      // After authorising, a cancel needs payBy passed at a finalized taker block with no payment: refused now.
      const cancel = yield* Effect.promise(() => cancelFills(api, aster.pub, handle))
      expect(cancel.cancelled).toEqual([])
      expect(cancel.refused.map((r) => r.reason)).toEqual(fills.map(() => "pay_by_not_final"))
      const cancels =
        yield* sql`select 1 from fills where take_id = ${handle.takeId}::uuid and cancel_signature is not null`
      expect(cancels.length).toBe(0)
    }),
  )

  it.effect("not routed: an identity flagged for fading; refused: a taker over max_unpaid_locks (409, nothing)", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const sql = yield* SqlClient.SqlClient
      const { deployment } = yield* AppConfig
      const flagged = yield* v2Maker({ amount: 10_000_000n, count: 4 })
      const good = yield* v2Maker({ amount: 10_000_000n, count: 4 })
      yield* catchUp("hyperliquid")
      yield* only([flagged.orderId, good.orderId])
      yield* sql`update quote_identities set fade_flagged_at = now()
        where id = (select quote_identity_id from orders where id = ${flagged.orderId})`
      const t = yield* taker
      const body = takeBody(t, { amount_in: "12000000" })
      const routed = ok(yield* post(`${base}/v1/takes`, body, bearer(t.token)))
      expect(routed.take.fills.map((f) => f.order_id)).toEqual([good.orderId])

      // The taker's locks left unpaid pass the limit: a new take is refused, a retry of the old one is answered.
      const limit = deployment.settlement.max_unpaid_locks
      for (let i = 0; i <= limit; i++) {
        yield* sql`insert into settlement_v2_marks (fill_id, kind, identity_id, master)
          values (${crypto.randomUUID()}::uuid, 'unpaid', ${crypto.randomUUID()}::uuid, ${t.master})`
      }
      const takes = yield* sql`select id from takes where master = ${t.master}`
      const refused = yield* post(`${base}/v1/takes`, takeBody(t, { amount_in: "1000" }), bearer(t.token))
      expect([refused.status, code(refused)]).toEqual([409, "STATE_CONFLICT"])
      expect(yield* sql`select id from takes where master = ${t.master}`).toEqual(takes)
      expect(ok(yield* post(`${base}/v1/takes`, body, bearer(t.token))).take.id).toBe(routed.take.id)
    }),
  )

  it.effect("a v1 take's route refuses pay-key items (400), nothing changed", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const sql = yield* SqlClient.SqlClient
      const t = yield* taker
      // A v1 take row as the v1 path writes it (settlement.escrow_version 1 when it was created).
      const id = crypto.randomUUID()
      yield* sql`insert into takes (id, master, client_take_id, from_venue, to_venue, amount_in, min_out, payer,
          recipient, max_parts, total_in, total_out, state, pay_deadline, to_sign, created_at, updated_at)
        values (${id}::uuid, ${t.master}, 'v1-take', 'aster', 'hyperliquid', 1, 1, ${t.master}, ${t.master}, 1, 1, 1,
          'reserved', now() + interval '1 minute', '[]'::jsonb, now(), now())`
      const before = yield* snapshot(id)
      const sig = yield* Effect.promise(() => t.payKey.signMessage({ message: "x" }))
      for (const b of [{ pay_authorization: sig }, { cancels: [{ fill_id: crypto.randomUUID(), signature: sig }] }]) {
        const res = yield* post(`${base}/v1/takes/${id}/signatures`, b, bearer(t.token))
        expect([res.status, code(res)]).toEqual([400, "INVALID_REQUEST"])
      }
      expect(yield* snapshot(id)).toEqual(before)
    }),
  )

  it.effect(
    "a fade flag set by evidence stops routing; the owner's session resumes it (new window); others cannot",
    () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const sql = yield* SqlClient.SqlClient
        const { deployment } = yield* AppConfig
        const policy = {
          maxFadeRate: deployment.settlement.max_fade_rate,
          minChances: deployment.settlement.fade_min_chances,
        }
        const faded = yield* v2Maker({ amount: 10_000_000n, count: 4 })
        const good = yield* v2Maker({ amount: 10_000_000n, count: 4 })
        yield* catchUp("hyperliquid")
        yield* only([faded.orderId, good.orderId])
        const [order] = yield* sql<{ id: string }>`select quote_identity_id::text as id from orders
        where id = ${faded.orderId}`
        const identityId = order!.id
        const routedTo = Effect.map(
          post(`${base}/v1/takes/preview`, { from: "aster", to: "hyperliquid", amount_in: "12000000" }),
          (res) => (res.json as { fills: Array<{ order_id: string }> }).fills.map((f) => f.order_id).sort(),
        )
        const both = [faded.orderId, good.orderId].sort()
        expect(yield* routedTo).toEqual(both)

        // Evidence as settlement records it (a chance, then its fill's fade), judged by the store's rule: the fewest
        // fades that cross the configured rate flag the identity, one fewer does not.
        let k = 1
        while (!fadeFlagged(k, k, policy)) k++
        const evidence = (n: number) =>
          Effect.forEach(Array.from({ length: n }), () =>
            Effect.gen(function* () {
              const fill = crypto.randomUUID()
              for (const kind of ["chance", "fade"]) {
                yield* sql`insert into settlement_v2_marks (fill_id, kind, identity_id, master)
                values (${fill}::uuid, ${kind}, ${identityId}::uuid, ${faded.owner.address.toLowerCase()})`
              }
            }),
          )
        const judge = sql.withTransaction(flagIfFading(identityId, policy))
        yield* evidence(k - 1)
        expect(yield* judge).toBe(false)
        yield* evidence(1)
        expect(yield* judge).toBe(true)
        expect(yield* routedTo).toEqual([good.orderId])

        const ownerToken = yield* signIn(base, faded.owner)
        const view = (token: string) =>
          Effect.map(
            rawRequest(`${base}/v1/quote-identities/${identityId}`, { headers: bearer(token) }),
            (res) => (res.json as { fade: Record<string, unknown> }).fade,
          )
        const flagged = yield* view(ownerToken)
        expect(flagged).toMatchObject({ chances: k, fades: k, window_started_at: null })
        expect(typeof flagged.flagged_at).toBe("string")
        const journaled = (kind: string) =>
          sql<{ payload: Record<string, unknown> }>`select payload from journal
          where kind = ${kind} and payload->>'identity_id' = ${identityId} order by id`
        expect((yield* journaled("quote_identity.fade_flagged")).map((r) => r.payload)).toEqual([
          { identity_id: identityId, chances: k, fades: k, flagged_at: flagged.flagged_at },
        ])

        // Not the owner's session: each answers its envelope and changes nothing.
        const state = sql`select fade_flagged_at, fade_window_started_at from quote_identities
        where id = ${identityId}::uuid`
        const before = { state: yield* state, resumed: yield* journaled("quote_identity.fade_resumed") }
        const resume = (id: string, headers: Record<string, string>) =>
          rawRequest(`${base}/v1/quote-identities/${id}/resume`, { method: "POST", headers })
        const credential = yield* issueCredential(base, ownerToken, identityId, ["quote", "read"])
        const stranger = yield* signIn(base, privateKeyToAccount(generatePrivateKey()))
        const refusals: Array<[RawResponse, number, string]> = [
          [yield* resume(identityId, bearer(credential.token)), 403, "FORBIDDEN"],
          [yield* resume(identityId, bearer(stranger)), 404, "NOT_FOUND"],
          [yield* resume(identityId, {}), 401, "UNAUTHORIZED"],
          [yield* resume(identityId, bearer(`mk_${"Z".repeat(43)}`)), 401, "UNAUTHORIZED"],
          [yield* resume("not-a-uuid", bearer(ownerToken)), 400, "INVALID_REQUEST"],
          [yield* resume(`${identityId}x`, bearer(ownerToken)), 400, "INVALID_REQUEST"],
          [yield* resume(crypto.randomUUID(), bearer(ownerToken)), 404, "NOT_FOUND"],
        ]
        for (const [res, status, c] of refusals) expect([res.status, code(res)], res.text).toEqual([status, c])
        expect({ state: yield* state, resumed: yield* journaled("quote_identity.fade_resumed") }).toEqual(before)
        expect(yield* routedTo).toEqual([good.orderId])

        // The owner resumes: routed again, a new window (no counts), one journal row with the closed window's counts.
        const resumed = yield* resume(identityId, bearer(ownerToken))
        expect(resumed.status, resumed.text).toBe(200)
        const fade = (resumed.json as { fade: { flagged_at: string | null; window_started_at: string | null } }).fade
        expect(fade).toMatchObject({ chances: 0, fades: 0, flagged_at: null })
        expect(typeof fade.window_started_at).toBe("string")
        expect(yield* view(ownerToken)).toEqual(fade)
        expect((yield* journaled("quote_identity.fade_resumed")).map((r) => r.payload)).toEqual([
          {
            identity_id: identityId,
            flagged_at: flagged.flagged_at,
            chances: k,
            fades: k,
            window_started_at: fade.window_started_at,
          },
        ])
        expect(yield* routedTo).toEqual(both)
        // A retry (lost answer) is answered unchanged: same window, no second row.
        const again = yield* resume(identityId, bearer(ownerToken))
        expect([again.status, (again.json as { fade: unknown }).fade]).toEqual([200, fade])
        expect((yield* journaled("quote_identity.fade_resumed")).length).toBe(1)

        // The old fades do not flag it again; fades of fills whose chance comes after the resume do.
        expect(yield* judge).toBe(false)
        yield* evidence(k - 1)
        expect(yield* judge).toBe(false)
        yield* evidence(1)
        expect(yield* judge).toBe(true)
        expect(yield* view(ownerToken)).toMatchObject({
          chances: k,
          fades: k,
          window_started_at: fade.window_started_at,
        })
        expect(yield* routedTo).toEqual([good.orderId])

        // A revoked identity is never resumed (409), its flag kept.
        const revoked = yield* rawRequest(`${base}/v1/credentials/${credential.id}`, {
          method: "DELETE",
          headers: bearer(ownerToken),
        })
        expect(revoked.status, revoked.text).toBe(200)
        const kept = yield* state
        const refused = yield* resume(identityId, bearer(ownerToken))
        expect([refused.status, code(refused)]).toEqual([409, "STATE_CONFLICT"])
        expect(yield* state).toEqual(kept)
      }),
  )
})
