/**
 * The Transfers service (src/Transfers.ts) on its Test layer: a throw-away database, the two venue chains with their
 * venue simulators (real venue adapters prepare a shortfall's withdrawal; the payer's balance is read from the
 * `from` chain) and the development config, no HTTP. The routes' own tests (transfers.test.ts, transfers-v2.test.ts)
 * cover the wire and the desk; this proves the concept stands alone: bad inputs answer the catalogue's error and
 * write nothing, and the main paths (the take at once, a shortfall's preparation, cancel, pages, the v2 pay key).
 */
import { SqlClient } from "@effect/sql"
import { describe, expect, layer } from "@effect/vitest"
import { Context, Effect, Exit, Layer, Option } from "effect"
import { encodeFunctionData, type Hex, keccak256, toHex, zeroHash } from "viem"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { VenueAdaptersLive } from "../../src/Accounts/VenueAdaptersLive.ts"
import { mockUSDCAbi } from "../../src/Chain/artifacts/index.ts"
import { ChainClients } from "../../src/Chain/ChainClients.ts"
import { deriveHashlockSet, secretKeyOf } from "../../src/Domain/Hashlocks.ts"
import { SecureRandom } from "../../src/SecureRandom.ts"
import { Settlement } from "../../src/Settlement.ts"
import { findTransfer } from "../../src/Transfers/Repo.ts"
import { type TransferRequest, Transfers, takeForTransfer } from "../../src/Transfers.ts"
import { account, sendCalls } from "../support/ChainDevnet.ts"
import { DeadChainClients } from "../support/ChainFaults.ts"
import { TestDatabaseLive } from "../support/Database.ts"
import { failurePair } from "../support/Exits.ts"
import { testAppConfig } from "../support/TestConfig.ts"
import { startVenueNode, type VenueNode } from "../support/VenueNode.ts"
import { USDC, venueConfigOf } from "../support/WithdrawalDevnet.ts"

class Nodes extends Context.Tag("test/TransfersServiceNodes")<
  Nodes,
  { readonly hl: VenueNode; readonly aster: VenueNode }
>() {}

/** The config of both venues with their simulators: v1 takes, or (v2) escrow_version 2 and each v2 escrow named. */
const configOf = (hl: VenueNode, aster: VenueNode, v2: boolean) =>
  testAppConfig({
    venues: [venueConfigOf("hyperliquid", hl, {}, v2), venueConfigOf("aster", aster, {}, v2)],
    auth: { rpc_urls: [hl.chain.anvil.rpcUrl] },
    ...(v2 ? { settlement: { escrow_version: 2 } } : {}),
  })

/** Transfers.Test with the v1 config, real venue adapters, Settlement, the chains' clients, secure randomness. */
const Live = Layer.unwrapScoped(
  Effect.gen(function* () {
    const hl = yield* startVenueNode("hyperliquid")
    const aster = yield* startVenueNode("aster")
    return Transfers.Test.pipe(
      Layer.provideMerge(Layer.mergeAll(VenueAdaptersLive, Settlement.Test, ChainClients.Live, SecureRandom.Live)),
      Layer.provideMerge(TestDatabaseLive),
      Layer.provideMerge(configOf(hl, aster, false)),
      Layer.merge(Layer.succeed(Nodes, { hl, aster })),
    )
  }),
)

/** A second Transfers on the same database whose chain clients reach no node (every read fails). */
const withDeadChain = <A, E>(effect: Effect.Effect<A, E, Transfers>) =>
  Effect.provide(effect, Transfers.Default.pipe(Layer.provide(DeadChainClients)))

/** A second Transfers on the same database and venues, configured for settlement v2. */
const withV2 = <A, E, R>(effect: Effect.Effect<A, E, R | Transfers>) =>
  Effect.flatMap(Nodes, ({ hl, aster }) =>
    Effect.provide(effect, Transfers.Default.pipe(Layer.provide(configOf(hl, aster, true)))),
  )

const retryable = <A, E>(exit: Exit.Exit<A, E>) =>
  Exit.isFailure(exit) && exit.cause._tag === "Fail" && (exit.cause.error as { retryable?: boolean }).retryable

const fresh = () => privateKeyToAccount(generatePrivateKey())

/** Rows every write of a transfer touches. */
const counts = Effect.flatMap(SqlClient.SqlClient, (sql) =>
  sql<{ transfers: number; takes: number; preparations: number; journal: number }>`
    select (select count(*) from transfers)::int as transfers, (select count(*) from takes)::int as takes,
           (select count(*) from withdrawal_preparations)::int as preparations,
           (select count(*) from journal)::int as journal`.pipe(Effect.map((rows) => rows[0]!)),
)

const journalOf = (transferId: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<{ kind: string }>`select kind from journal where payload->>'transfer_id' = ${transferId} order by id`.pipe(
      Effect.map((rows) => rows.map((r) => r.kind)),
    ),
  )

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

/** A payer: an account with access, its own address linked on hyperliquid (the `from` venue). */
const payer = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const master = fresh().address.toLowerCase()
  yield* sql`insert into accounts (master, access, created_at) values (${master}, 'granted', now())`
  yield* sql`insert into linked_accounts (master, venue, address, linked_at)
    values (${master}, 'hyperliquid', ${master}, now())`
  return master
})

/** Only these orders' sets are live (the tests share one database). */
const only = (orderIds: ReadonlyArray<string>) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    (orderIds.length === 0
      ? sql`update quote_sets set active = false`
      : sql`update quote_sets set active = (order_id in ${sql.in(orderIds)})`
    ).pipe(Effect.asVoid),
  )

/** A funded maker order on aster quoting payment on hyperliquid at 1:1, as rows (routing reads nothing else). */
const maker = (p: { readonly v2: boolean }) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const { hl, aster } = yield* Nodes
    const owner = fresh()
    const signerKey = generatePrivateKey()
    const master = owner.address.toLowerCase()
    const orderId = keccak256(toHex(`transfer-service-order-${master}`))
    const identityId = crypto.randomUUID()
    const available = (100n * USDC).toString()
    yield* sql`insert into accounts (master, access, created_at) values (${master}, 'granted', now())`
    yield* sql`insert into quote_identities (id, master, signer, kind, generation, lease_expires_at, created_at)
      values (${identityId}, ${master}, ${master}, 'credential', 1, now() + interval '1 hour', now())`
    yield* sql`insert into orders (id, master, venue, receive_venue, owner_address, state, amount, created_at,
        updated_at, client_order_id, quote_identity_id, quote_signer, fund_deadline, to_sign, escrow_version)
      values (${orderId}, ${master}, 'aster', 'hyperliquid', ${master}, 'funded', ${available}, now(), now(),
        ${`o-${orderId.slice(2, 12)}`}, ${identityId}, ${master}, 4102444800, '[]'::jsonb, ${p.v2 ? 2 : 1})`
    const quote = {
      venue: "hyperliquid",
      chain_id: hl.chain.chain.id,
      token: hl.chain.token.toLowerCase(),
      ...(p.v2 ? { escrow: hl.chain.escrowV2!.toLowerCase() } : {}),
      recipient: master,
      supply: "1",
      receive: "1",
      min_fill: "1",
    }
    const signature = `0x${"11".repeat(65)}`
    if (!p.v2) {
      yield* sql`insert into escrow_orders (venue, order_id, owner, operator, quote_signer, available, locked,
          created_block, block_number, block_hash)
        values ('aster', ${orderId}, ${master}, ${master}, ${master}, ${available}, 0, 1, 1, ${zeroHash})`
      yield* sql`insert into quote_sets (id, order_id, quote_identity_id, identity_generation, cancel_epoch, sequence,
          valid_until, quote_size, quotes, signature, active, created_at)
        values (${crypto.randomUUID()}, ${orderId}, ${identityId}, 1, 0, 1, now() + interval '1 hour', ${available},
          ${JSON.stringify([quote])}::jsonb, ${signature}, true, now())`
      return orderId
    }
    const hashlocks = deriveHashlockSet(
      secretKeyOf(signerKey),
      { chainId: 42161n, makerEscrow: aster.chain.escrowV2!, owner: owner.address, orderId, sequence: 1n },
      4,
    )
    yield* sql`insert into escrow_v2_orders (venue, owner, order_id, order_key, operator, quote_signer, available,
        locked, created_block, block_number, block_hash)
      values ('aster', ${master}, ${orderId}, ${keccak256(orderId)}, ${master}, ${master}, ${available}, 0, 1, 1,
        ${zeroHash})`
    yield* sql`insert into quote_sets (id, order_id, quote_identity_id, identity_generation, cancel_epoch, sequence,
        valid_until, quote_size, quotes, signature, active, created_at, issued_at, hashlock_root, hashlock_count,
        hashlocks)
      values (${crypto.randomUUID()}, ${orderId}, ${identityId}, 1, 0, 1, now() + interval '1 hour', ${available},
        ${JSON.stringify([quote])}::jsonb, ${signature}, true, now(), ${Math.floor(Date.now() / 1000)},
        ${hashlocks.root}, ${hashlocks.count}, ${JSON.stringify(hashlocks.hashlocks)}::jsonb)`
    return orderId
  })

const request = (master: string, over: Partial<TransferRequest> = {}): TransferRequest => ({
  clientTransferId: `transfer-${crypto.randomUUID()}`,
  from: "hyperliquid",
  to: "aster",
  amountIn: 2n * USDC,
  minOut: 1n,
  payer: master,
  recipient: master,
  ...over,
})

describe("Transfers service", () => {
  layer(Live, { timeout: "240 seconds", excludeTestServices: true })((it) => {
    it.effect("refuses bad inputs with the catalogue's error and writes nothing", () =>
      Effect.gen(function* () {
        const transfers = yield* Transfers
        const sql = yield* SqlClient.SqlClient
        const { hl } = yield* Nodes
        const me = yield* payer
        const pending = yield* payer
        yield* mint(hl, me, 10n * USDC)
        yield* sql`insert into withdrawals (id, master, venue, address, amount, destination, state, created_at,
            updated_at, target)
          values (${crypto.randomUUID()}, ${pending}, 'hyperliquid', ${pending}, 1, ${pending}, 'unknown', now(),
            now(), 'signer')`
        yield* only([])
        const before = yield* counts

        const create = (master: string, over: Partial<TransferRequest>) =>
          Effect.exit(transfers.create(master, request(master, over)))
        const refusals: Array<[string, Partial<TransferRequest>, [string, string]]> = [
          ["from", { from: "nowhere" }, ["NotFound", "unknown venue nowhere; see GET /v1/venues"]],
          ["to", { to: "nowhere" }, ["NotFound", "unknown venue nowhere; see GET /v1/venues"]],
          ["same venue", { to: "hyperliquid" }, ["InvalidRequest", "from and to must be different venues"]],
          ["amount", { amountIn: 0n }, ["InvalidRequest", "amount_in must be positive"]],
          ["parts", { maxParts: 9 }, ["InvalidRequest", "max_parts is at most 8"]],
          ["recipient", { recipient: `0x${"0".repeat(40)}` }, ["InvalidRequest", "recipient must not be zero"]],
          ["payer", { payer: fresh().address }, ["PayerNotLinked", "payer is not your linked account on hyperliquid"]],
          // The wallet covers amount_in, so the take is tried at once: no live quote, no intent either.
          ["liquidity", {}, ["NoLiquidity", "no live quote can fill this take now"]],
        ]
        for (const [what, over, expected] of refusals)
          expect(failurePair(yield* create(me, over)), what).toEqual(expected)
        const unknown = yield* create(pending, {})
        expect(failurePair(unknown)[0]).toBe("WithdrawalPending")
        expect(failurePair(unknown)[1]).toMatch(/^withdrawal .* on hyperliquid is unknown; it must resolve/)

        // The from chain's node does not answer: the balance cannot be read (retryable); the checks before it
        // still answer for themselves.
        const dead = yield* withDeadChain(
          Effect.gen(function* () {
            const deadTransfers = yield* Transfers
            return {
              linked: yield* Effect.exit(deadTransfers.create(me, request(me))),
              unlinked: yield* Effect.exit(deadTransfers.create(me, request(me, { payer: fresh().address }))),
            }
          }),
        )
        expect(failurePair(dead.linked)).toEqual([
          "ChainUnavailable",
          "could not read the payer's balance on hyperliquid",
        ])
        expect(retryable(dead.linked)).toBe(true)
        expect(failurePair(dead.unlinked)[0]).toBe("PayerNotLinked")

        const id = crypto.randomUUID()
        expect(failurePair(yield* Effect.exit(transfers.list(me, "x", 10)))).toEqual([
          "InvalidRequest",
          "cursor must be the next_cursor of a previous page",
        ])
        expect(failurePair(yield* Effect.exit(transfers.list(me, id, 10)))).toEqual([
          "InvalidRequest",
          "cursor is not one of your transfers; follow next_cursor",
        ])
        for (const bad of [id, "nope"]) {
          expect(failurePair(yield* Effect.exit(transfers.cancel(me, bad)))).toEqual(["NotFound", "no such transfer"])
          expect(failurePair(yield* Effect.exit(transfers.givePayKey(me, bad, fresh().address, Effect.void)))).toEqual([
            "NotFound",
            "no such transfer",
          ])
        }
        expect(
          failurePair(yield* Effect.exit(transfers.givePayKey(me, id, `0x${"0".repeat(40)}`, Effect.void))),
        ).toEqual(["InvalidRequest", "pay_key must not be zero"])
        expect(yield* counts).toEqual(before)
      }),
    )

    it.effect("the wallet covers amount_in: the take at once; repeat, conflict, no cancel, no pay key, one page", () =>
      Effect.gen(function* () {
        const transfers = yield* Transfers
        const sql = yield* SqlClient.SqlClient
        const { hl } = yield* Nodes
        const me = yield* payer
        yield* mint(hl, me, 10n * USDC)
        yield* only([yield* maker({ v2: false })])
        const asked = request(me, { amountIn: 4n * USDC, minOut: 3n * USDC, maxParts: 2 })
        expect(yield* transfers.findRepeat(me, asked)).toEqual(Option.none())

        const out = yield* transfers.create(me, asked)
        expect(out.created).toBe(true)
        const t = out.transfer
        expect(t).toMatchObject({
          client_transfer_id: asked.clientTransferId,
          client_take_id: `transfer:${t.id}`,
          from: "hyperliquid",
          to: "aster",
          amount_in: "4000000",
          min_out: "3000000",
          max_parts: 2,
          payer: me,
          withdrawal_preparation: null,
          withdrawal: null,
          take_final: false,
          cancelled_at: null,
        })
        const [take] = yield* sql<{ client_take_id: string; state: string }>`
          select client_take_id, state from takes where id = ${t.take_id!}::uuid`
        expect(take).toEqual({ client_take_id: `transfer:${t.id}`, state: "reserved" })
        expect(yield* journalOf(t.id)).toEqual(["transfer.created", "transfer.take_created"])

        // The same client id: the same intent (found before anything else is checked); other parameters: 409.
        const mid = yield* counts
        expect(yield* transfers.findRepeat(me, asked)).toEqual(Option.some(t))
        expect(yield* transfers.create(me, asked)).toEqual({ created: false, transfer: t })
        for (const over of [{ amountIn: 4n * USDC + 1n }, { maxParts: undefined }, { recipient: fresh().address }]) {
          expect(failurePair(yield* Effect.exit(transfers.create(me, { ...asked, ...over })))).toEqual([
            "StateConflict",
            "client_transfer_id was used with other parameters",
          ])
        }
        // The take exists: no cancel, no pay key (v1), and the desk's attempt skips it.
        expect(failurePair(yield* Effect.exit(transfers.cancel(me, t.id)))).toEqual([
          "StateConflict",
          `the transfer's take ${t.take_id} is already created; it can no longer be cancelled`,
        ])
        expect(failurePair(yield* Effect.exit(transfers.givePayKey(me, t.id, fresh().address, Effect.void)))).toEqual([
          "InvalidRequest",
          "this transfer's take is on settlement v1: it names no pay key",
        ])
        expect(yield* takeForTransfer(Option.getOrThrow(yield* findTransfer(t.id)))).toEqual({ _tag: "Skipped" })
        expect(yield* counts).toEqual(mid)
        expect(yield* transfers.list(me, undefined, 10)).toEqual({ items: [t], next_cursor: null })
      }),
    )

    it.effect("a shortfall: the venue withdrawal's preparation, no take; cancel; pages newest first", () =>
      Effect.gen(function* () {
        const transfers = yield* Transfers
        const { hl } = yield* Nodes
        const me = yield* payer
        const other = yield* payer
        hl.sim.control.credit(me as Hex, 100n * USDC)
        yield* mint(hl, me, 2n * USDC)
        const first = yield* transfers.create(me, request(me, { clientTransferId: undefined, amountIn: 5n * USDC }))
        expect(first.created).toBe(true)
        const t = first.transfer
        expect(t.client_transfer_id).toMatch(/^[0-9a-f-]{36}$/)
        expect(t).toMatchObject({ max_parts: 8, take_id: null, take_final: null, withdrawal: null })
        // 5 asked, 2 in the wallet: the venue withdrawal of 3 to the payer (to: signer).
        expect(t.withdrawal_preparation?.amount).toBe("3000000")
        expect((t.withdrawal_preparation!.typed_data as { primaryType: string }).primaryType).toBe(
          "HyperliquidTransaction:SendAsset",
        )
        expect(yield* journalOf(t.id)).toEqual(["transfer.created"])

        // Another master cannot cancel it; its owner can, once (a repeat answers the same), and the desk skips it.
        expect(failurePair(yield* Effect.exit(transfers.cancel(other, t.id)))).toEqual(["NotFound", "no such transfer"])
        const cancelled = yield* transfers.cancel(me, t.id)
        expect(cancelled.cancelled_at).not.toBeNull()
        expect(yield* transfers.cancel(me, t.id)).toEqual(cancelled)
        expect(yield* journalOf(t.id)).toEqual(["transfer.created", "transfer.cancelled"])
        expect(yield* takeForTransfer(Option.getOrThrow(yield* findTransfer(t.id)))).toEqual({ _tag: "Skipped" })

        const second = yield* transfers.create(me, request(me, { amountIn: 4n * USDC }))
        expect(second.transfer.withdrawal_preparation?.amount).toBe("2000000")
        const page1 = yield* transfers.list(me, undefined, 1)
        expect(page1).toEqual({ items: [second.transfer], next_cursor: second.transfer.id })
        expect(yield* transfers.list(me, page1.next_cursor!.toUpperCase(), 1)).toEqual({
          items: [cancelled],
          next_cursor: null,
        })
        expect(yield* transfers.list(other, undefined, 10)).toEqual({ items: [], next_cursor: null })
      }),
    )

    it.effect("v2: the take waits for the pay key; a refused take stores no key; the key once, then the take", () =>
      withV2(
        Effect.gen(function* () {
          const transfers = yield* Transfers
          const sql = yield* SqlClient.SqlClient
          const { hl } = yield* Nodes
          const me = yield* payer
          yield* mint(hl, me, 10n * USDC)
          yield* only([])
          const { transfer: t } = yield* transfers.create(me, request(me))
          expect([t.take_id, t.withdrawal_preparation]).toEqual([null, null])
          const row = sql<{ pay_key: string | null; take_version: number }>`
            select pay_key, take_version::int as take_version from transfers where id = ${t.id}::uuid`
          expect((yield* row)[0]).toEqual({ pay_key: null, take_version: 2 })

          const key = fresh().address
          const before = yield* counts
          expect(failurePair(yield* Effect.exit(transfers.givePayKey(me, t.id, key, Effect.void)))).toEqual([
            "NoLiquidity",
            "no live quote can fill this take now",
          ])
          expect(yield* counts).toEqual(before)
          expect((yield* row)[0]!.pay_key).toBeNull()

          yield* only([yield* maker({ v2: true })])
          const keyed = yield* transfers.givePayKey(me, t.id, key, Effect.void)
          expect(keyed.take_id).toMatch(/^[0-9a-f-]{36}$/)
          expect((yield* row)[0]!.pay_key).toBe(key.toLowerCase())
          const [take] = yield* sql<{ pay_key_address: string; escrow_version: number }>`
            select pay_key_address, escrow_version::int as escrow_version from takes where id = ${keyed.take_id!}::uuid`
          expect(take).toEqual({ pay_key_address: key.toLowerCase(), escrow_version: 2 })
          expect(yield* journalOf(t.id)).toEqual([
            "transfer.created",
            "transfer.pay_key_given",
            "transfer.take_created",
          ])

          // The same key again: unchanged; another key: 409; nothing new either way.
          const after = yield* counts
          expect(yield* transfers.givePayKey(me, t.id, key.toLowerCase(), Effect.void)).toEqual(keyed)
          expect(failurePair(yield* Effect.exit(transfers.givePayKey(me, t.id, fresh().address, Effect.void)))).toEqual(
            ["StateConflict", "another pay key was already given for this transfer's take"],
          )
          expect(yield* counts).toEqual(after)
        }),
      ),
    )
  })
})
