/**
 * The Escrow service (src/Escrow.ts) on its Test layer, no HTTP: a throw-away database, an anvil chain with the
 * devnet contracts (the real chain clients: contract-owner checks and the legacy scan of its LegacyEscrow, whose
 * offers anvil accounts #1 and #2 made), and the CloseQueue entity (with the Relayer's outbox) on an in-memory
 * cluster runner. The escrow index rows are written as the watcher writes them. The routes' own tests
 * (closes*.test.ts, legacy-scan.test.ts) cover the wire and finality; this proves the concept stands alone: bad
 * inputs answer their catalogue error and write nothing, a close is accepted through one persisted queue message,
 * an identical repeat is answered from the closes table without a message (and before the access gate).
 */
import { randomUUID } from "node:crypto"
import { MessageStorage, TestRunner } from "@effect/cluster"
import { SqlClient } from "@effect/sql"
import { expect, layer } from "@effect/vitest"
import { Context, Effect, Layer } from "effect"
import { type Hex, hexToBigInt, numberToHex, zeroHash } from "viem"
import { generatePrivateKey, type PrivateKeyAccount, privateKeyToAccount } from "viem/accounts"
import { CloseQueueLive } from "../../actors/CloseQueue.ts"
import { insertLinkedAccount } from "../../src/Accounts/LinkedAccounts.ts"
import { ensureAccount } from "../../src/Accounts/Repo.ts"
import { ChainClients } from "../../src/Chain/ChainClients.ts"
import { Supervision } from "../../src/Cluster/Supervision.ts"
import { AppConfig } from "../../src/Config.ts"
import { closeOffer, ZERO_ADDRESS, ZERO_ORDER_ID } from "../../src/Domain/Close.ts"
import { AccessRequired } from "../../src/Domain/Errors.ts"
import { SPOT_DEX } from "../../src/Domain/EscrowTypedData.ts"
import { Escrow } from "../../src/Escrow.ts"
import { Relayer } from "../../src/Relayer.ts"
import { SecureRandom } from "../../src/SecureRandom.ts"
import { SqlTest } from "../../src/Sql/TestDatabase.ts"
import { account, key, startTestChain, type TestChain, venueEntry } from "../support/ChainDevnet.ts"
import { failedWith, tagOf } from "../support/Exits.ts"
import { testAppConfig } from "../support/TestConfig.ts"

class Chain extends Context.Tag("test/EscrowServiceChain")<Chain, TestChain>() {}

const Live = Layer.unwrapScoped(
  Effect.gen(function* () {
    const chain = yield* Effect.acquireRelease(
      Effect.promise(() => startTestChain({ chainId: 999, kind: "hyperliquid" })),
      (c) => Effect.promise(() => c.anvil.stop()),
    )
    const config = testAppConfig({
      venues: [venueEntry(chain, "hyperliquid")],
      auth: { rpc_urls: [chain.anvil.rpcUrl] },
      operator_key: key(9),
    })
    // The close queues register on the runner before the service takes its client; all share SqlTest's database.
    return Escrow.Test.pipe(
      Layer.provideMerge(CloseQueueLive),
      Layer.provideMerge(Layer.mergeAll(Relayer.Live, ChainClients.Live)),
      Layer.provideMerge(Layer.mergeAll(TestRunner.layer, Supervision.Live, SecureRandom.Live)),
      Layer.provide(SqlTest),
      Layer.provideMerge(config),
      Layer.merge(Layer.succeed(Chain, chain)),
    )
  }),
)

const USDC = 1_000_000n
const VENUE = "hyperliquid"
/** An operator other than this service's (an order it does not manage). */
const ELSEWHERE = "0x00000000000000000000000000000000000bee01"
type Gate = Effect.Effect<void, AccessRequired>
const granted: Gate = Effect.void
const denied: Gate = Effect.fail(new AccessRequired({ message: "access has not been granted to this account yet" }))

const fresh = () => privateKeyToAccount(generatePrivateKey())
const lower = (a: string) => a.toLowerCase()
const randomOrderId = () => `0x${randomUUID().replaceAll("-", "")}${randomUUID().replaceAll("-", "")}`

const N = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n
const highS = (sig: Hex) => {
  const s = hexToBigInt(`0x${sig.slice(66, 130)}`)
  const v = Number.parseInt(sig.slice(130), 16)
  return `${sig.slice(0, 66)}${numberToHex(N - s, { size: 32 }).slice(2)}${(v === 27 ? 28 : 27).toString(16)}` as Hex
}

/** A master (signed in once) with `owner` linked on the venue, as POST /v1/accounts leaves it. */
const linkedMaster = (owner: PrivateKeyAccount) =>
  Effect.gen(function* () {
    const master = lower(fresh().address)
    yield* ensureAccount({ master, access: "granted", identityId: randomUUID(), nowMs: Date.now() })
    const linked = yield* insertLinkedAccount({
      master,
      venue: VENUE,
      address: lower(owner.address),
      venueWallet: null,
      expiresMs: null,
      nowMs: Date.now(),
    })
    expect(linked._tag).toBe("Linked")
    return master
  })

/** A v1 order as the watcher indexes it (finalized). */
const indexOrder = (p: { owner: string; operator: string; available: bigint; locked?: bigint }) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const orderId = randomOrderId()
    yield* sql`
      insert into escrow_orders (venue, order_id, owner, operator, quote_signer, available, locked, created_block,
        block_number, block_hash)
      values (${VENUE}, ${orderId}, ${lower(p.owner)}, ${lower(p.operator)}, ${ZERO_ADDRESS},
        ${p.available.toString()}, ${(p.locked ?? 0n).toString()}, 1, 1, ${zeroHash})`
    return orderId
  })

const indexBalance = (owner: string, balance: bigint) =>
  Effect.flatMap(
    SqlClient.SqlClient,
    (sql) => sql`
      insert into escrow_balances (venue, owner, balance, block_number, block_hash)
      values (${VENUE}, ${lower(owner)}, ${balance.toString()}, 1, ${zeroHash})`,
  )

const counts = Effect.flatMap(SqlClient.SqlClient, (sql) =>
  sql<{ c: string; j: string; r: string }>`
    select (select count(*) from closes)::text as c, (select count(*) from journal)::text as j,
           (select count(*) from relayer_requests)::text as r`.pipe(Effect.map((rows) => rows[0]!)),
)

/** The close queues' persisted Enqueue messages so far (the runner's in-memory message storage). */
const enqueueMessages = Effect.map(
  MessageStorage.MemoryDriver,
  (driver) => driver.journal.filter((e) => e._tag === "Request" && e.tag === "Enqueue").length,
)

const sign = (owner: PrivateKeyAccount, typedData: unknown) =>
  Effect.promise(() => owner.signTypedData(typedData as Parameters<typeof owner.signTypedData>[0]))

/** A CloseOffer of `owner` in the venue's v1 escrow domain, signed by `signer` (the owner unless given). */
const signedOffer = (
  chain: TestChain,
  owner: PrivateKeyAccount,
  terms: { orderId: string; deadline: number },
  signer: PrivateKeyAccount = owner,
) =>
  Effect.gen(function* () {
    const nonce = hexToBigInt(`0x${randomUUID().replaceAll("-", "")}`)
    const offer = closeOffer(999, chain.escrow, {
      orderId: terms.orderId,
      owner: owner.address,
      dex: 0,
      toMargin: true,
      nonce,
      deadline: BigInt(terms.deadline),
    })
    const signature = yield* sign(signer, offer.typedData)
    return { venue: VENUE, orderId: terms.orderId, dex: 0, nonce, deadline: terms.deadline, signature }
  })

const nowSeconds = () => Math.floor(Date.now() / 1000)

layer(Live, { timeout: "240 seconds", excludeTestServices: true })("Escrow service", (it) => {
  it.effect("bad inputs answer their catalogue error and write nothing", () =>
    Effect.gen(function* () {
      const escrow = yield* Escrow
      const chain = yield* Chain
      const { operator } = yield* AppConfig
      const owner = fresh()
      const master = yield* linkedMaster(owner)
      const stranger = lower(fresh().address)
      const plain = yield* indexOrder({ owner: owner.address, operator: ELSEWHERE, available: 5n * USDC })
      const small = yield* indexOrder({ owner: owner.address, operator: ELSEWHERE, available: USDC / 2n })
      const managed = yield* indexOrder({ owner: owner.address, operator, available: 3n * USDC })
      const drained = yield* indexOrder({ owner: owner.address, operator, available: 0n, locked: USDC })
      yield* indexBalance(owner.address, USDC / 2n)
      const before = yield* counts
      const messages = yield* enqueueMessages

      const prepare = (m: string, terms: Partial<Parameters<typeof escrow.prepareClose>[1]>, gate: Gate = granted) =>
        Effect.exit(escrow.prepareClose(m, { venue: VENUE, orderId: plain, ...terms }, gate))
      // The venue and the link are checked before the access gate.
      expect(failedWith(yield* prepare(master, { venue: "nowhere" }, denied))).toMatchObject({
        _tag: "NotFound",
        message: "unknown venue nowhere; see GET /v1/venues",
      })
      expect(tagOf(yield* prepare(stranger, {}, denied))).toBe("NotFound")
      expect(failedWith(yield* prepare(master, { toMargin: false, dex: SPOT_DEX }))).toMatchObject({
        _tag: "InvalidRequest",
        message: "to_margin false (to the wallet) requires dex 0",
      })
      expect(tagOf(yield* prepare(master, { dex: 7 }))).toBe("InvalidRequest")
      expect(tagOf(yield* prepare(master, {}, denied))).toBe("AccessRequired")
      expect(tagOf(yield* prepare(master, { orderId: randomOrderId() }))).toBe("NotFound")
      expect(tagOf(yield* prepare(master, { orderId: managed }))).toBe("OrderManaged")
      expect(tagOf(yield* prepare(master, { orderId: small }))).toBe("BelowMinimum")
      expect(tagOf(yield* prepare(master, { orderId: ZERO_ORDER_ID }))).toBe("BelowMinimum")

      const close = (m: string, signed: Parameters<typeof escrow.closeBySignature>[1], gate: Gate = granted) =>
        Effect.exit(escrow.closeBySignature(m, signed, gate))
      const good = yield* signedOffer(chain, owner, { orderId: plain, deadline: nowSeconds() + 600 })
      expect(tagOf(yield* close(master, { ...good, signature: `0x${"11".repeat(64)}05` }))).toBe("SignatureMalformed")
      expect(tagOf(yield* close(master, { ...good, signature: highS(good.signature as Hex) }))).toBe(
        "SignatureMalleable",
      )
      // Not the owner's signature: the owner is no contract (its code is read on the chain), so it is invalid.
      const forged = yield* signedOffer(chain, owner, { orderId: plain, deadline: nowSeconds() + 600 }, fresh())
      expect(failedWith(yield* close(master, forged))).toMatchObject({
        _tag: "SignatureInvalid",
        message: "the CloseOffer is not signed by the order's owner",
      })
      // Terms other than those signed: the signature no longer recovers to the owner.
      expect(tagOf(yield* close(master, { ...good, nonce: good.nonce + 1n }))).toBe("SignatureInvalid")
      expect(tagOf(yield* close(master, good, denied))).toBe("AccessRequired")
      const expired = yield* signedOffer(chain, owner, { orderId: plain, deadline: nowSeconds() - 10 })
      expect(tagOf(yield* close(master, expired))).toBe("ChallengeExpired")
      const far = yield* signedOffer(chain, owner, { orderId: plain, deadline: nowSeconds() + 7_200 })
      expect(tagOf(yield* close(master, far))).toBe("InvalidRequest")
      const tooSmall = yield* signedOffer(chain, owner, { orderId: small, deadline: nowSeconds() + 600 })
      expect(tagOf(yield* close(master, tooSmall))).toBe("BelowMinimum")

      const managedClose = (terms: Partial<Parameters<typeof escrow.managedClose>[1]>, gate: Gate = granted) =>
        Effect.exit(escrow.managedClose(master, { venue: VENUE, orderId: managed, ...terms }, gate))
      expect(tagOf(yield* managedClose({ orderId: ZERO_ORDER_ID }))).toBe("InvalidRequest")
      expect(tagOf(yield* managedClose({ orderId: plain }))).toBe("StateConflict")
      expect(tagOf(yield* managedClose({ orderId: drained }))).toBe("BelowMinimum")
      expect(tagOf(yield* managedClose({}, denied))).toBe("AccessRequired")

      expect(tagOf(yield* Effect.exit(escrow.legacyPage(master, "not-a-cursor")))).toBe("InvalidRequest")

      expect(yield* counts).toEqual(before)
      expect(yield* enqueueMessages).toBe(messages)
    }),
  )

  it.effect("lists, prepares and closes through the queue (one message each); a repeat sends none; legacy scan", () =>
    Effect.gen(function* () {
      const escrow = yield* Escrow
      const sql = yield* SqlClient.SqlClient
      const { operator } = yield* AppConfig
      // Anvil account #1 made LegacyEscrow offers when the chain was deployed.
      const owner = account(1)
      const address = lower(owner.address)
      const master = yield* linkedMaster(owner)
      const plain = yield* indexOrder({ owner: owner.address, operator: ELSEWHERE, available: 5n * USDC })
      const managed = yield* indexOrder({ owner: owner.address, operator, available: 3n * USDC })
      const messages = yield* enqueueMessages

      const listed = yield* escrow.list(master)
      expect(listed.map((o) => [o.order_id, o.owner, o.available, o.managed, o.closing])).toEqual(
        [
          [plain, address, "5000000", false, false],
          [managed, address, "3000000", true, false],
        ].sort((a, b) => (String(a[0]) < String(b[0]) ? -1 : 1)),
      )

      const prepared = yield* escrow.prepareClose(master, { venue: VENUE, orderId: plain, toMargin: false }, granted)
      expect(prepared).toMatchObject({ venue: VENUE, order_id: plain, dex: 0, to_margin: false })
      expect(prepared.to_sign.map((s) => [s.kind, s.signer])).toEqual([["close_offer", address]])
      const signed = {
        venue: VENUE,
        orderId: plain,
        toMargin: false,
        dex: prepared.dex,
        nonce: BigInt(prepared.nonce),
        deadline: prepared.deadline,
        signature: yield* sign(owner, prepared.to_sign[0]!.typed_data),
      }
      const closing = yield* escrow.closeBySignature(master, signed, granted)
      expect(closing).toMatchObject({ order_id: plain, owner: address, available: "5000000", closing: true })
      expect(yield* enqueueMessages).toBe(messages + 1)
      const [row] = yield* sql<{ id: string; kind: string; state: string; relay_key: string; digest: string }>`
        select id::text, kind, state, relay_key, digest from closes where order_id = ${plain}`
      expect(row).toMatchObject({ kind: "signed", state: "pending", relay_key: `close:${row!.digest}` })
      const relayed = yield* sql`select 1 from relayer_requests where idempotency_key = ${row!.relay_key}`
      expect(relayed.length).toBe(1)
      const journaled =
        yield* sql`select 1 from journal where kind = 'close.pending' and payload->>'close_id' = ${row!.id}`
      expect(journaled.length).toBe(1)

      // The same signed terms again: the same close from the table, no message, even with the access gate shut.
      expect(yield* escrow.closeBySignature(master, signed, denied)).toEqual(closing)
      expect(yield* enqueueMessages).toBe(messages + 1)
      expect((yield* sql`select 1 from closes where order_id = ${plain}`).length).toBe(1)

      const managedClosing = yield* escrow.managedClose(master, { venue: VENUE, orderId: managed }, granted)
      expect(managedClosing).toMatchObject({ order_id: managed, managed: true, closing: true })
      expect(yield* enqueueMessages).toBe(messages + 2)
      expect(yield* escrow.managedClose(master, { venue: VENUE, orderId: managed }, denied)).toEqual(managedClosing)
      expect(yield* enqueueMessages).toBe(messages + 2)
      const other = yield* Effect.exit(
        escrow.managedClose(master, { venue: VENUE, orderId: managed, toMargin: false }, granted),
      )
      expect(tagOf(other)).toBe("ClosePending")
      expect((yield* escrow.list(master)).every((o) => o.closing)).toBe(true)

      // The legacy scan, page by page to the end: account #1's offers on the chain's LegacyEscrow.
      const items: Array<{ owner: string; chain_id: number }> = []
      let cursor: string | undefined
      for (let page = 0; page < 50; page++) {
        const next = yield* escrow.legacyPage(master, cursor)
        items.push(...next.data)
        cursor = next.next_cursor
        if (!next.has_more) break
      }
      expect(items.length).toBeGreaterThan(0)
      expect(items.every((i) => lower(i.owner) === address && i.chain_id === 999)).toBe(true)
    }),
  )
})
