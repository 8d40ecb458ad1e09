/**
 * The Withdrawals service (src/Withdrawals.ts) on its Test layer, no HTTP: a throw-away database, a Hyperliquid-like
 * venue simulator paying on its anvil chain (the venue adapters are the real ones, VenueAdaptersLive), and the
 * WithdrawalDesk entity on an in-memory cluster runner. The routes' own tests (withdrawals*.test.ts) cover the
 * wire; this proves the concept stands alone: bad inputs answer their catalogue error and write nothing, a signed
 * preparation is queued through one persisted desk message and relayed, an identical repeat sends none.
 */
import { randomUUID } from "node:crypto"
import { MessageStorage, TestRunner } from "@effect/cluster"
import { SqlClient } from "@effect/sql"
import { expect, layer } from "@effect/vitest"
import { Context, Effect, Layer, Ref } from "effect"
import { type Hex, hexToBigInt, numberToHex } from "viem"
import { generatePrivateKey, type PrivateKeyAccount, privateKeyToAccount } from "viem/accounts"
import { WithdrawalDeskLive } from "../../actors/WithdrawalDesk.ts"
import { insertLinkedAccount } from "../../src/Accounts/LinkedAccounts.ts"
import { ensureAccount } from "../../src/Accounts/Repo.ts"
import { VenueAdaptersLive } from "../../src/Accounts/VenueAdaptersLive.ts"
import { Supervision } from "../../src/Cluster/Supervision.ts"
import { AccessRequired } from "../../src/Domain/Errors.ts"
import { SecureRandom } from "../../src/SecureRandom.ts"
import { SqlTest } from "../../src/Sql/TestDatabase.ts"
import { Withdrawals } from "../../src/Withdrawals.ts"
import { failedWith, tagOf } from "../support/Exits.ts"
import { pollUntil } from "../support/Poll.ts"
import { testAppConfig } from "../support/TestConfig.ts"
import { startVenueNode, type VenueNode } from "../support/VenueNode.ts"
import { USDC, venueConfigOf } from "../support/WithdrawalDevnet.ts"

class Node extends Context.Tag("test/WithdrawalsServiceNode")<Node, VenueNode>() {}

const Live = Layer.unwrapScoped(
  Effect.gen(function* () {
    const hl = yield* startVenueNode("hyperliquid")
    const config = testAppConfig({
      venues: [venueConfigOf("hyperliquid", hl)],
      auth: { rpc_urls: [hl.chain.anvil.rpcUrl] },
      withdrawals: { poll_ms: 100, reconcile_ms: 300, reconcile_max_ms: 1_000 },
    })
    // The desk registers on the runner before the service takes its client; both share SqlTest's one database.
    return Withdrawals.Test.pipe(
      Layer.provideMerge(Layer.merge(VenueAdaptersLive, WithdrawalDeskLive)),
      Layer.provideMerge(Layer.mergeAll(TestRunner.layer, Supervision.Live, SecureRandom.Live)),
      Layer.provide(SqlTest),
      Layer.provideMerge(config),
      Layer.merge(Layer.succeed(Node, hl)),
    )
  }),
)

const fresh = () => privateKeyToAccount(generatePrivateKey())
const lower = (a: string) => a.toLowerCase()

const N = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n
const highS = (sig: Hex) => {
  const s = hexToBigInt(`0x${sig.slice(66, 130)}`)
  const v = Number.parseInt(sig.slice(130), 16)
  return `${sig.slice(0, 66)}${numberToHex(N - s, { size: 32 }).slice(2)}${(v === 27 ? 28 : 27).toString(16)}` as Hex
}

/** A master (signed in once) with `account` linked on the venue (as POST /v1/accounts leaves it) and `credit` at the venue. */
const linkedMaster = (account: PrivateKeyAccount, credit: bigint) =>
  Effect.gen(function* () {
    const master = lower(fresh().address)
    yield* ensureAccount({ master, access: "granted", identityId: randomUUID(), nowMs: Date.now() })
    const linked = yield* insertLinkedAccount({
      master,
      venue: "hyperliquid",
      address: lower(account.address),
      venueWallet: null,
      expiresMs: null,
      nowMs: Date.now(),
    })
    expect(linked._tag).toBe("Linked")
    ;(yield* Node).sim.control.credit(account.address, credit)
    return master
  })

const counts = Effect.flatMap(SqlClient.SqlClient, (sql) =>
  sql<{ w: string; p: string; j: string }>`
    select (select count(*) from withdrawals)::text as w, (select count(*) from withdrawal_preparations)::text as p,
           (select count(*) from journal)::text as j`.pipe(Effect.map((rows) => rows[0]!)),
)

/** The desk's persisted Submit messages so far (the runner's in-memory message storage). */
const submitMessages = Effect.map(
  MessageStorage.MemoryDriver,
  (driver) => driver.journal.filter((e) => e._tag === "Request" && e.tag === "Submit").length,
)

const sign = (account: PrivateKeyAccount, typedData: unknown) =>
  Effect.promise(() => account.signTypedData(typedData as Parameters<typeof account.signTypedData>[0]))

layer(Live, { timeout: "240 seconds", excludeTestServices: true })("Withdrawals service", (it) => {
  it.effect("bad inputs answer their catalogue error and write nothing", () =>
    Effect.gen(function* () {
      const withdrawals = yield* Withdrawals
      const owner = fresh()
      const master = yield* linkedMaster(owner, 10n * USDC)
      const stranger = lower(fresh().address)
      const other = yield* linkedMaster(fresh(), 0n)
      const before = yield* counts
      const messages = yield* submitMessages
      const ask = (m: string, venue: string, amount: bigint) =>
        Effect.exit(withdrawals.prepare(m, { venue, amount, to: "signer" }))
      expect(failedWith(yield* ask(master, "nowhere", USDC))).toMatchObject({
        _tag: "NotFound",
        message: "unknown venue nowhere; see GET /v1/venues",
      })
      expect(failedWith(yield* ask(stranger, "hyperliquid", USDC))).toMatchObject({
        _tag: "NotFound",
        message: "no account is linked on hyperliquid; POST /v1/accounts first",
      })
      expect(tagOf(yield* ask(master, "hyperliquid", 0n))).toBe("InvalidRequest")
      expect(failedWith(yield* ask(master, "hyperliquid", 11n * USDC))).toMatchObject({
        _tag: "InsufficientBalance",
        message: `at most ${10n * USDC} base units can be withdrawn now`,
      })
      expect(yield* counts).toEqual(before)

      // A real preparation (one row), then every bad submit of it: no withdrawal, no journal row, no message.
      const prepared = yield* withdrawals.prepare(master, { venue: "hyperliquid", amount: 2n * USDC, to: "signer" })
      const signature = yield* sign(owner, prepared.typed_data)
      const good = {
        venue: "hyperliquid",
        amount: 2n * USDC,
        to: "signer",
        typedData: prepared.typed_data,
        signature,
      } as const
      const submit = (m: string, patch: Partial<Parameters<typeof withdrawals.submit>[1]>) =>
        Effect.exit(withdrawals.submit(m, { ...good, ...patch }, Effect.void))
      expect(tagOf(yield* submit(stranger, {}))).toBe("NotFound")
      expect(tagOf(yield* submit(master, { signature: `0x${"11".repeat(64)}05` }))).toBe("SignatureMalformed")
      expect(tagOf(yield* submit(master, { signature: highS(signature) }))).toBe("SignatureMalleable")
      const tampered = structuredClone(prepared.typed_data) as { message: Record<string, unknown> }
      tampered.message.amount = "3"
      expect(tagOf(yield* submit(master, { typedData: tampered }))).toBe("InvalidRequest")
      expect(failedWith(yield* submit(master, { amount: 3n * USDC }))).toMatchObject({
        _tag: "InvalidRequest",
        message: "venue, amount and to must be those the typed data was prepared for",
      })
      expect(tagOf(yield* submit(master, { to: "wallet" }))).toBe("InvalidRequest")
      expect(failedWith(yield* submit(master, { signature: yield* sign(fresh(), prepared.typed_data) }))).toMatchObject(
        {
          _tag: "SignatureInvalid",
          message: `the typed data must be signed by the linked address ${lower(owner.address)}`,
        },
      )
      // Another master's session holding this typed data: not a preparation of its account.
      expect(tagOf(yield* submit(other, {}))).toBe("InvalidRequest")

      // Reads: another master's (or no) withdrawal is not found; a bad cursor is refused before the snapshot.
      expect(tagOf(yield* Effect.exit(withdrawals.get(master, "00000000-0000-4000-8000-000000000000")))).toBe(
        "NotFound",
      )
      const snapshots = yield* Ref.make(0)
      const history = (after: string | undefined) =>
        Effect.exit(
          withdrawals.history(
            master,
            { after, limit: 10 },
            Ref.update(snapshots, (n) => n + 1),
          ),
        )
      expect(tagOf(yield* history("not-a-cursor"))).toBe("InvalidRequest")
      expect(yield* Ref.get(snapshots)).toBe(0)

      const after = yield* counts
      expect({ ...after, p: before.p }).toEqual(before)
      expect(Number(after.p)).toBe(Number(before.p) + 1)
      expect(yield* submitMessages).toBe(messages)
    }),
  )

  it.effect("prepare, submit through the desk (one message), relayed; an identical repeat sends none; history", () =>
    Effect.gen(function* () {
      const withdrawals = yield* Withdrawals
      const hl = yield* Node
      const owner = fresh()
      const address = lower(owner.address)
      const master = yield* linkedMaster(owner, 50n * USDC)
      const messages = yield* submitMessages

      const prepared = yield* withdrawals.prepare(master, { venue: "hyperliquid", amount: 5n * USDC, to: "signer" })
      expect(prepared).toMatchObject({ venue: "hyperliquid", amount: "5000000", to: "signer", destination: address })
      const input = {
        venue: "hyperliquid",
        amount: 5n * USDC,
        to: "signer",
        typedData: prepared.typed_data,
        signature: yield* sign(owner, prepared.typed_data),
      } as const
      const queued = yield* withdrawals.submit(master, input, Effect.void)
      expect(queued).toMatchObject({ venue: "hyperliquid", address, amount: "5000000", to: "signer" })
      expect(yield* submitMessages).toBe(messages + 1)

      // The same signed preparation again: the same withdrawal, from the table, without a message, and whatever
      // the account's access since (a repeat is no new commitment: the gate is not run).
      const suspended = Effect.fail(new AccessRequired({ message: "access is suspended for this account" }))
      const again = yield* withdrawals.submit(master, input, suspended)
      expect(again.id).toBe(queued.id)
      expect(yield* submitMessages).toBe(messages + 1)

      const relayed = yield* pollUntil(
        withdrawals.get(master, queued.id),
        (w) => w.state !== "queued" && w.state !== "submitting",
        {
          every: "100 millis",
          within: "30 seconds",
        },
      )
      expect(relayed).toMatchObject({ state: "relayed", revision: "3", error: "" })
      expect(hl.sim.control.balance(owner.address)).toBe(45n * USDC)
      expect(yield* Effect.exit(withdrawals.get(lower(fresh().address), queued.id)).pipe(Effect.map(tagOf))).toBe(
        "NotFound",
      )

      // A second withdrawal once the first ended; history pages newest first, the snapshot taken once per page.
      const second = yield* withdrawals.prepare(master, { venue: "hyperliquid", amount: USDC, to: "wallet" })
      const secondInput = {
        venue: "hyperliquid",
        amount: USDC,
        to: "wallet",
        typedData: second.typed_data,
        signature: yield* sign(owner, second.typed_data),
      } as const
      // A new intent while access is suspended: refused by the gate before the desk hears of it.
      expect(tagOf(yield* Effect.exit(withdrawals.submit(master, secondInput, suspended)))).toBe("AccessRequired")
      expect(yield* submitMessages).toBe(messages + 1)
      const made = yield* withdrawals.submit(master, secondInput, Effect.void)
      expect(yield* submitMessages).toBe(messages + 2)
      const snapshots = yield* Ref.make(0)
      const snapshot = Ref.update(snapshots, (n) => n + 1)
      const first = yield* withdrawals.history(master, { after: undefined, limit: 1 }, snapshot)
      expect(first.data.map((w) => w.id)).toEqual([made.id])
      expect(first.has_more).toBe(true)
      const rest = yield* withdrawals.history(master, { after: first.next_cursor!, limit: 1 }, snapshot)
      expect(rest.data.map((w) => w.id)).toEqual([queued.id])
      expect([rest.has_more, typeof rest.next_cursor]).toEqual([false, "string"])
      expect(yield* Ref.get(snapshots)).toBe(2)
    }),
  )
})
