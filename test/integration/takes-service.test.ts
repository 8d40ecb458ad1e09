/**
 * The Takes service (src/Takes.ts) on its Test layer: a throw-away database, two devnet chains (the payer's permit
 * context is read from the `from` chain) and the development config, no HTTP. The routes' own tests (takes.test.ts,
 * takes-v2.test.ts, take-preview.test.ts) cover the wire; this proves the concept stands alone: bad inputs answer
 * the catalogue's error and write nothing, the checks run before the chain read (a dead node is only reached by a
 * take that passed them), and the main paths of v1 (create, sign) and v2 (the pay key's authorisation).
 */
import { SqlClient } from "@effect/sql"
import { describe, expect, layer } from "@effect/vitest"
import { Chunk, Context, Effect, Exit, Fiber, Layer, Option, TestClock, TestContext } from "effect"
import { type Hex, keccak256, toHex, zeroHash } from "viem"
import { generatePrivateKey, type PrivateKeyAccount, privateKeyToAccount } from "viem/accounts"
import { ChainClients } from "../../src/Chain/ChainClients.ts"
import { AccessRequired } from "../../src/Domain/Errors.ts"
import { payTakeTypedData } from "../../src/Domain/EscrowTypedDataV2.ts"
import { deriveHashlockSet, secretKeyOf } from "../../src/Domain/Hashlocks.ts"
import { SecureRandom } from "../../src/SecureRandom.ts"
import { notifyEscrowIndexed } from "../../src/Settlement/IndexedWake.ts"
import { Settlement } from "../../src/Settlement.ts"
import { PAY_AUTHORIZATION_HOLD } from "../../src/Takes/PayKey.ts"
import { type CreateTakeInput, Takes } from "../../src/Takes.ts"
import { startTestChain, type TestChain, venueEntry } from "../support/ChainDevnet.ts"
import { DeadChainClients } from "../support/ChainFaults.ts"
import { failurePair } from "../support/Exits.ts"
import { testAppConfig } from "../support/TestConfig.ts"

class Chains extends Context.Tag("test/TakesServiceChains")<
  Chains,
  { readonly hl: TestChain; readonly aster: TestChain }
>() {}

const chain = (chainId: number, kind: "hyperliquid" | "aster") =>
  Effect.acquireRelease(
    Effect.promise(() => startTestChain({ chainId, kind })),
    (c) => Effect.promise(() => c.anvil.stop()),
  )

/** The config of both chains: v1 takes, or (v2) each venue naming its SettlementEscrowV2 and escrow_version 2. */
const configOf = (hl: TestChain, aster: TestChain, v2: boolean) =>
  testAppConfig({
    venues: [venueEntry(hl, "hyperliquid", { escrowV2: v2 }), venueEntry(aster, "aster", { escrowV2: v2 })].map(
      ({ legacy_escrow: _l, ...v }) => v,
    ),
    auth: { rpc_urls: [hl.anvil.rpcUrl] },
    ...(v2 ? { settlement: { escrow_version: 2 } } : {}),
  })

/** Takes.Test with the v1 config, the chains' clients, secure randomness and Settlement (on the same database). */
const Live = Layer.unwrapScoped(
  Effect.gen(function* () {
    const [hl, aster] = yield* Effect.all([chain(999, "hyperliquid"), chain(42161, "aster")], { concurrency: 2 })
    return Takes.Test.pipe(
      Layer.provideMerge(Layer.mergeAll(Settlement.Test, ChainClients.Live, SecureRandom.Live)),
      Layer.provideMerge(configOf(hl, aster, false)),
      Layer.merge(Layer.succeed(Chains, { hl, aster })),
    )
  }),
)

/** A second Takes on the same database whose chain clients reach no node (every read fails). */
const withDeadChain = <A, E>(effect: Effect.Effect<A, E, Takes>) =>
  Effect.provide(effect, Takes.Default.pipe(Layer.provide(DeadChainClients)))

/** A second Takes on the same database and chains, configured for settlement v2. */
const withV2 = <A, E, R>(effect: Effect.Effect<A, E, R | Takes>) =>
  Effect.flatMap(Chains, ({ hl, aster }) =>
    Effect.provide(effect, Takes.Default.pipe(Layer.provide(configOf(hl, aster, true)))),
  )

const fresh = () => privateKeyToAccount(generatePrivateKey())

/** The effect on a test clock of its own (the suite runs on the live clock: chains and database). */
const onTestClock = <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.provide(effect, TestContext.TestContext)

/** Until a forked call waits on the test clock (a held payment authorisation): 10 ms polls, at most 10 s real. */
const heldOnClock = Effect.gen(function* () {
  for (let i = 0; Chunk.isEmpty(yield* TestClock.sleeps()); i++) {
    if (i === 1_000) return yield* Effect.dieMessage("the call never waited on the clock")
    yield* Effect.promise(() => new Promise((r) => setTimeout(r, 10)))
  }
})

/** Rows every write of a take touches. */
const counts = Effect.flatMap(SqlClient.SqlClient, (sql) =>
  sql<{ takes: number; fills: number; journal: number }>`
    select (select count(*) from takes)::int as takes, (select count(*) from fills)::int as fills,
           (select count(*) from journal)::int as journal`.pipe(Effect.map((rows) => rows[0]!)),
)

/** A taker: an account with access and its own address linked on aster (the `from` venue). */
const taker = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const account = fresh()
  const master = account.address.toLowerCase()
  yield* sql`insert into accounts (master, access, created_at) values (${master}, 'granted', now())`
  yield* sql`insert into linked_accounts (master, venue, address, linked_at)
    values (${master}, 'aster', ${master}, now())`
  return { account, master }
})

/** Only these orders' sets are live (the tests share one database). */
const only = (orderIds: ReadonlyArray<string>) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    (orderIds.length === 0
      ? sql`update quote_sets set active = false`
      : sql`update quote_sets set active = (order_id in ${sql.in(orderIds)})`
    ).pipe(Effect.asVoid),
  )

/** The maker side as the funding path and the quotes route leave it (rows only: routing reads nothing else). */
const makerRows = (p: { readonly v2: boolean; readonly available: bigint }) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const { hl, aster } = yield* Chains
    const owner = fresh()
    const signerKey = generatePrivateKey()
    const master = owner.address.toLowerCase()
    const orderId = keccak256(toHex(`service-order-${master}`))
    const identityId = crypto.randomUUID()
    yield* sql`insert into accounts (master, access, created_at) values (${master}, 'granted', now())`
    yield* sql`insert into quote_identities (id, master, signer, kind, generation, lease_expires_at, created_at)
      values (${identityId}, ${master}, ${privateKeyToAccount(signerKey).address.toLowerCase()}, 'credential', 1,
        now() + interval '1 hour', now())`
    yield* sql`insert into orders (id, master, venue, receive_venue, owner_address, state, amount, created_at,
        updated_at, client_order_id, quote_identity_id, quote_signer, fund_deadline, to_sign, escrow_version)
      values (${orderId}, ${master}, 'hyperliquid', 'aster', ${master}, 'funded', ${p.available.toString()}, now(),
        now(), ${`o-${orderId.slice(2, 12)}`}, ${identityId}, ${master}, 0, '[]'::jsonb, ${p.v2 ? 2 : 1})`
    const quote = {
      venue: "aster",
      chain_id: 42161,
      token: aster.token.toLowerCase(),
      ...(p.v2 ? { escrow: aster.escrowV2!.toLowerCase() } : {}),
      recipient: fresh().address.toLowerCase(),
      supply: "1",
      receive: "1",
      min_fill: "1",
    }
    if (!p.v2) {
      yield* sql`insert into escrow_orders (venue, order_id, owner, operator, quote_signer, available, locked,
          created_block, block_number, block_hash)
        values ('hyperliquid', ${orderId}, ${master}, ${master}, ${master}, ${p.available.toString()}, 0, 1, 1,
          ${zeroHash})`
      yield* sql`insert into quote_sets (id, order_id, quote_identity_id, identity_generation, cancel_epoch, sequence,
          valid_until, quote_size, quotes, signature, active, created_at)
        values (${crypto.randomUUID()}, ${orderId}, ${identityId}, 1, 0, 1, now() + interval '1 hour',
          ${p.available.toString()}, ${JSON.stringify([quote])}::jsonb, ${`0x${"11".repeat(65)}`}, true, now())`
      return orderId
    }
    const hashlocks = deriveHashlockSet(
      secretKeyOf(signerKey),
      { chainId: 999n, makerEscrow: hl.escrowV2!, owner: owner.address, orderId, sequence: 1n },
      4,
    )
    yield* sql`insert into escrow_v2_orders (venue, owner, order_id, order_key, operator, quote_signer, available,
        locked, created_block, block_number, block_hash)
      values ('hyperliquid', ${master}, ${orderId}, ${keccak256(orderId)}, ${master}, ${master},
        ${p.available.toString()}, 0, 1, 1, ${zeroHash})`
    yield* sql`insert into quote_sets (id, order_id, quote_identity_id, identity_generation, cancel_epoch, sequence,
        valid_until, quote_size, quotes, signature, active, created_at, issued_at, hashlock_root, hashlock_count,
        hashlocks)
      values (${crypto.randomUUID()}, ${orderId}, ${identityId}, 1, 0, 1, now() + interval '1 hour',
        ${p.available.toString()}, ${JSON.stringify([quote])}::jsonb, ${`0x${"11".repeat(65)}`}, true, now(),
        ${Math.floor(Date.now() / 1000)}, ${hashlocks.root}, ${hashlocks.count},
        ${JSON.stringify(hashlocks.hashlocks)}::jsonb)`
    return orderId
  })

const takeInput = (master: string, over: Partial<CreateTakeInput> = {}): CreateTakeInput => ({
  master,
  clientTakeId: `take-${crypto.randomUUID()}`,
  from: "aster",
  to: "hyperliquid",
  amountIn: 3_000_000n,
  minOut: 1n,
  payer: master,
  recipient: master,
  maxParts: 8,
  ...over,
})

/** The payer's signatures over `to_sign` as returned: the permit, then each fill's margin_move. */
const payerSignatures = (
  payer: PrivateKeyAccount,
  toSign: ReadonlyArray<{ readonly kind: string; readonly typed_data: never; readonly fill_id?: string }>,
) =>
  Effect.promise(async () => ({
    permit: await payer.signTypedData(toSign.find((i) => i.kind === "permit")!.typed_data),
    fills: await Promise.all(
      toSign
        .filter((i) => i.kind === "margin_move")
        .map(async (i) => ({ fill_id: i.fill_id!, signature: await payer.signTypedData(i.typed_data) })),
    ),
  }))

describe("Takes service", () => {
  layer(Live, { timeout: "240 seconds", excludeTestServices: true })((it) => {
    it.effect("refuses bad inputs with the catalogue's error, checks before the chain read, writes nothing", () =>
      Effect.gen(function* () {
        const takes = yield* Takes
        const t = yield* taker
        const stranger = fresh().address.toLowerCase()
        const before = yield* counts
        const preview = (p: Partial<Parameters<typeof takes.preview>[0]>) =>
          Effect.exit(takes.preview({ from: "aster", to: "hyperliquid", amountIn: 1n, ...p }))
        expect(failurePair(yield* preview({ from: "nowhere" }))).toEqual(["NotFound", "unknown venue nowhere"])
        expect(failurePair(yield* preview({ to: "aster" }))).toEqual([
          "InvalidRequest",
          "from and to must be different venues",
        ])
        expect(failurePair(yield* preview({ amountIn: 0n }))).toEqual(["InvalidRequest", "amount_in must be positive"])

        const create = (over: Partial<CreateTakeInput>) =>
          Effect.exit(takes.create(takeInput(t.master, over), Effect.void))
        const refusals: Array<[Partial<CreateTakeInput>, [string, string]]> = [
          [{ to: "nowhere" }, ["NotFound", "unknown venue nowhere"]],
          [{ to: "aster" }, ["InvalidRequest", "from and to must be different venues"]],
          [{ amountIn: 0n }, ["InvalidRequest", "amount_in must be positive and at most 2^256 - 1"]],
          [{ amountIn: 2n ** 256n }, ["InvalidRequest", "amount_in must be positive and at most 2^256 - 1"]],
          [{ minOut: -1n }, ["InvalidRequest", "min_out must be at most 2^256 - 1"]],
          [{ maxParts: 9 }, ["InvalidRequest", "max_parts must be an integer from 1 to 8"]],
          [{ payer: "nope" }, ["InvalidRequest", "payer and recipient must be addresses"]],
          [{ recipient: `0x${"0".repeat(40)}` }, ["InvalidRequest", "recipient must not be zero"]],
          [{ payer: stranger }, ["PayerNotLinked", `payer is not your linked account on aster`]],
          [{}, ["NoLiquidity", "no live quote can fill this take now"]],
        ]
        yield* only([])
        for (const [over, expected] of refusals)
          expect(failurePair(yield* create(over)), Object.keys(over).join() || "liquidity").toEqual(expected)

        // The from chain's node does not answer: a take that passed every check is refused as retryable; one that
        // fails a check is refused for it, without reaching the node.
        const dead = yield* withDeadChain(
          Effect.gen(function* () {
            const deadTakes = yield* Takes
            return {
              linked: yield* Effect.exit(deadTakes.create(takeInput(t.master), Effect.void)),
              unlinked: yield* Effect.exit(deadTakes.create(takeInput(t.master, { payer: stranger }), Effect.void)),
            }
          }),
        )
        expect(failurePair(dead.linked)).toEqual(["ChainUnavailable", "the from chain's node did not answer; retry"])
        expect(
          Exit.isFailure(dead.linked) && dead.linked.cause._tag === "Fail" && dead.linked.cause.error,
        ).toMatchObject({ retryable: true })
        expect(failurePair(dead.unlinked)).toEqual(["PayerNotLinked", "payer is not your linked account on aster"])

        const id = crypto.randomUUID()
        expect(failurePair(yield* Effect.exit(takes.get(t.master, id)))).toEqual(["NotFound", "no such take"])
        expect(failurePair(yield* Effect.exit(takes.get(t.master, "not-an-id")))).toEqual(["NotFound", "no such take"])
        expect(failurePair(yield* Effect.exit(takes.sign(t.master, id, { permit: "0x" })))).toEqual([
          "NotFound",
          "no such take",
        ])
        expect(yield* counts).toEqual(before)
      }),
    )

    it.effect("v1: preview, create (permit nonce from the chain), repeat, conflict, the payer's signatures, get", () =>
      Effect.gen(function* () {
        const takes = yield* Takes
        const sql = yield* SqlClient.SqlClient
        const { aster } = yield* Chains
        const orderId = yield* makerRows({ v2: false, available: 10_000_000n })
        yield* only([orderId])
        const t = yield* taker

        // The preview routes without writing anything.
        const before = yield* counts
        const preview = yield* takes.preview({ from: "aster", to: "hyperliquid", amountIn: 3_000_000n })
        expect(preview).toMatchObject({ total_in: "3000000", total_out: "3000000" })
        expect(preview.fills.map((f) => [f.order_id, f.amount_in])).toEqual([[orderId, "3000000"]])
        expect(yield* counts).toEqual(before)

        const input = takeInput(t.master)
        const created = yield* takes.create(input, Effect.void)
        expect(created.created).toBe(true)
        expect(created.take).toMatchObject({ state: "reserved", total_in: "3000000", total_out: "3000000" })
        expect(created.toSign.map((i) => i.kind)).toEqual(["permit", "margin_move"])
        // The permit names the token's own domain and the payer's nonce, both read from the aster chain.
        const permit = created.toSign[0]!.typed_data as { domain: { verifyingContract: string }; message: object }
        expect(permit.domain.verifyingContract.toLowerCase()).toBe(aster.token.toLowerCase())
        expect(permit.message).toMatchObject({ owner: t.account.address, value: "3000000", nonce: "0" })
        const after = yield* counts
        expect([after.takes - before.takes, after.fills - before.fills]).toEqual([1, 1])
        const journal = yield* sql<{ kind: string }>`
          select kind from journal where payload->>'take_id' = ${created.take.id} order by id`
        expect(journal.map((j) => j.kind)).toEqual(["take.created"])

        // The same client id: the same take, even with the chain's node down (no chain read for a repeat);
        // other parameters: STATE_CONFLICT. Nothing new either way.
        const again = yield* withDeadChain(Effect.flatMap(Takes, (d) => d.create(input, Effect.void)))
        expect(again.created).toBe(false)
        expect([again.take.id, again.toSign]).toEqual([created.take.id, created.toSign])
        expect(failurePair(yield* Effect.exit(takes.create({ ...input, amountIn: 3_000_001n }, Effect.void)))).toEqual([
          "StateConflict",
          "client_take_id was used with other parameters",
        ])
        // Access gates new takes only: with the account's access gone, the repeat is still answered (spec,
        // ACCESS_REQUIRED is for a new commitment), and a new client id is refused.
        const closed = Effect.fail(new AccessRequired({ message: "access required" }))
        const repeated = yield* takes.create(input, closed)
        expect([repeated.created, repeated.take.id]).toEqual([false, created.take.id])
        const refusedNew = yield* Effect.exit(takes.create({ ...input, clientTakeId: "take-after-access" }, closed))
        expect(failurePair(refusedNew)).toEqual(["AccessRequired", "access required"])
        expect(yield* counts).toEqual(after)

        // Signatures: another key's, a fill twice, the pay key's form on a v1 take: refused, nothing stored.
        const stranger = yield* payerSignatures(fresh(), created.toSign as never)
        expect(failurePair(yield* Effect.exit(takes.sign(t.master, created.take.id, stranger)))).toEqual([
          "SignatureInvalid",
          "the permit is not signed by the payer",
        ])
        const good = yield* payerSignatures(t.account, created.toSign as never)
        const twice = { permit: good.permit, fills: [...good.fills, ...good.fills] }
        expect(failurePair(yield* Effect.exit(takes.sign(t.master, created.take.id, twice)))[0]).toBe("InvalidRequest")
        expect(failurePair(yield* Effect.exit(takes.sign(t.master, created.take.id, { permit: good.permit })))).toEqual(
          ["InvalidRequest", "permit and fills go together"],
        )
        expect(failurePair(yield* Effect.exit(takes.authorizePay(t.master, created.take.id, good.permit)))).toEqual([
          "InvalidRequest",
          "pay_authorization and cancels belong to settlement v2 takes",
        ])
        expect(
          failurePair(yield* Effect.exit(takes.sign(t.master, created.take.id, { ...good, cancels: [] }))),
        ).toEqual([
          "InvalidRequest",
          "give either permit and fills (the payer's), or pay_authorization, or cancels (the pay key's)",
        ])
        expect(yield* counts).toEqual(after)
        expect((yield* takes.get(t.master, created.take.id)).take.state).toBe("reserved")

        const signed = yield* takes.sign(t.master, created.take.id, good)
        expect(signed.take.state).toBe("signed")
        expect(signed.take.signed_at).not.toBeNull()
        // A repeat changes nothing; another master sees no such take.
        expect((yield* takes.sign(t.master, created.take.id, good)).take.signed_at).toBe(signed.take.signed_at)
        expect(failurePair(yield* Effect.exit(takes.get(fresh().address.toLowerCase(), created.take.id)))).toEqual([
          "NotFound",
          "no such take",
        ])
        const kinds = yield* sql<{ kind: string }>`
          select kind from journal where payload->>'take_id' = ${created.take.id} order by id`
        expect(kinds.map((j) => j.kind)).toEqual(["take.created", "take.signed"])
      }),
    )

    it.effect("v2: the pay key is required; its authorisation waits for final locks, then is stored once", () =>
      withV2(
        Effect.gen(function* () {
          const takes = yield* Takes
          const sql = yield* SqlClient.SqlClient
          const { aster } = yield* Chains
          const orderId = yield* makerRows({ v2: true, available: 10_000_000n })
          yield* only([orderId])
          const t = yield* taker
          const payKey = fresh()
          const before = yield* counts
          expect(failurePair(yield* Effect.exit(takes.create(takeInput(t.master), Effect.void)))).toEqual([
            "InvalidRequest",
            "pay_key is required: settlement v2 Fills name the client's pay key",
          ])
          expect(yield* counts).toEqual(before)

          const created = yield* takes.create(takeInput(t.master, { payKey: payKey.address }), Effect.void)
          expect(created.take).toMatchObject({ escrow_version: 2, pay_key: payKey.address.toLowerCase() })
          const moves = created.toSign.filter((i) => i.kind === "margin_move")
          expect(moves.length).toBe(1)
          yield* takes.sign(t.master, created.take.id, yield* payerSignatures(t.account, created.toSign as never))

          const payTake = (key: PrivateKeyAccount) =>
            Effect.promise(() =>
              key.signTypedData(
                payTakeTypedData(
                  42161,
                  aster.escrowV2!,
                  moves.map((m) => m.digest as Hex),
                ),
              ),
            )
          const stored = sql<{ pay_authorization: string | null }>`
            select pay_authorization from takes where id = ${created.take.id}::uuid`
          // Another key's signature: 422; the pay key's before every lock is final here: 409, retryable.
          expect(
            failurePair(yield* Effect.exit(takes.authorizePay(t.master, created.take.id, yield* payTake(fresh())))),
          ).toEqual(["SignatureInvalid", "the payment authorisation is not the pay key's over this take's Fills"])
          // Held for the index (PAY_AUTHORIZATION_HOLD), then refused: no page of the maker venue came.
          const early = yield* onTestClock(
            Effect.gen(function* () {
              const held = yield* Effect.fork(takes.authorizePay(t.master, created.take.id, yield* payTake(payKey)))
              yield* heldOnClock
              yield* TestClock.adjust(PAY_AUTHORIZATION_HOLD)
              return yield* Fiber.await(held)
            }),
          )
          expect(failurePair(early)).toEqual([
            "StateConflict",
            "not every lock of the take is final yet here; retry the same request shortly",
          ])
          expect(Exit.isFailure(early) && early.cause._tag === "Fail" && early.cause.error).toMatchObject({
            retryable: true,
          })
          expect((yield* stored)[0]!.pay_authorization).toBeNull()

          // Posted before the index has the lock, the authorisation waits for the venue's next index page.
          const signature = yield* payTake(payKey)
          const authorized = yield* onTestClock(
            Effect.gen(function* () {
              const waiting = yield* Effect.fork(takes.authorizePay(t.master, created.take.id, signature))
              yield* heldOnClock
              // The fill's lock final and `locked` in the v2 index (as the watcher writes it): the take offers the pay
              // key's item, and the authorisation is stored once with its journal row.
              yield* sql`
                insert into escrow_v2_locks (venue, fill_digest, state, order_key, owner, order_id, sequence, payer,
                  recipient, amount_in, amount_out, dex, to_margin, hashlock, hashlock_index, expiry, taker_expiry,
                  pay_key, pay_by, created_block, tx_hash, block_number, block_hash)
                select f.maker_venue, f.fill_digest, 'locked', ${keccak256(orderId)}, f.fill->>'owner', f.order_id,
                  f.sequence, f.payer, f.recipient, f.amount_in, f.amount_out, 0, true, f.hashlock, f.hashlock_index,
                  f.maker_expiry, f.taker_expiry, t.pay_key_address, f.pay_by, 1, ${zeroHash}, 1, ${zeroHash}
                from fills f join takes t on t.id = f.take_id where f.take_id = ${created.take.id}::uuid`
              const offered = yield* takes.get(t.master, created.take.id)
              expect(offered.toSign.map((i) => i.kind)).toEqual(["permit", "margin_move", "pay_authorization"])
              expect(offered.toSign[2]!.signer).toBe(payKey.address.toLowerCase())
              expect(yield* Fiber.poll(waiting)).toEqual(Option.none())
              // The watcher's notification after the page commits wakes it (no clock moved).
              yield* notifyEscrowIndexed(created.take.to, [moves[0]!.digest!.toLowerCase()])
              return yield* Fiber.join(waiting)
            }),
          )
          expect(authorized.take.pay_authorized_at).not.toBeNull()
          expect((yield* stored)[0]!.pay_authorization).toBe(signature.toLowerCase())
          const again = yield* takes.authorizePay(t.master, created.take.id, signature)
          expect(again.take.pay_authorized_at).toBe(authorized.take.pay_authorized_at)
          const kinds = yield* sql<{ kind: string }>`
            select kind from journal where payload->>'take_id' = ${created.take.id} order by id`
          expect(kinds.map((j) => j.kind)).toEqual(["take.created", "take.signed", "take.pay_authorized"])
        }),
      ),
    )
  })
})
