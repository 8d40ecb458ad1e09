/**
 * Withdrawals end to end on the devnet: the service's HTTP routes, the WithdrawalDesk relaying to the venue
 * simulators, funds paid on the escrow chains (anvil with the real contracts), faults injected in the simulators
 * (refusal, timeouts applied or not), reconciliation by venue evidence, and every bad input answered with its
 * envelope and without a change.
 */
import { SqlClient } from "@effect/sql"
import { expect, layer } from "@effect/vitest"
import { Duration, Effect } from "effect"
import { type Hex, hexToBigInt, numberToHex } from "viem"
import { generatePrivateKey, type PrivateKeyAccount, privateKeyToAccount } from "viem/accounts"
import { Supervision } from "../../src/Cluster/Supervision.ts"
import { rawRequest } from "../support/Http.ts"
import { bearer, post, signIn } from "../support/SignIn.ts"
import { baseUrl } from "../support/TestServer.ts"
import type { VenueNode } from "../support/VenueNode.ts"
import {
  asterSignIn,
  code,
  get,
  inState,
  lower,
  type Prepared,
  prepare,
  prepareOk,
  signPrepared,
  submit,
  USDC,
  WithdrawalDevnet,
  type WithdrawalView,
  waitFor,
  withdraw,
  withdrawalDevnet,
} from "../support/WithdrawalDevnet.ts"

/** Hyperliquid's nonce window is shortened (sim and adapter alike) so that "never applied" becomes final quickly. */
const HL_WINDOW_MS = 5_000
const Live = withdrawalDevnet({
  venues: ["hyperliquid", "aster"],
  sim: { hyperliquid: { nonceWindow: { pastMs: HL_WINDOW_MS, futureMs: 86_400_000 } } },
  api: { hyperliquid: { nonce_window_past_ms: HL_WINDOW_MS } },
})

const fresh = () => privateKeyToAccount(generatePrivateKey())

const N = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n
const highS = (sig: Hex) => {
  const s = hexToBigInt(`0x${sig.slice(66, 130)}`)
  const v = Number.parseInt(sig.slice(130), 16)
  return `${sig.slice(0, 66)}${numberToHex(N - s, { size: 32 }).slice(2)}${(v === 27 ? 28 : 27).toString(16)}` as Hex
}

const tokenBalance = (node: VenueNode, owner: string) =>
  Effect.promise(() =>
    node.chain.pub.readContract({
      address: node.chain.token,
      abi: [
        {
          type: "function",
          name: "balanceOf",
          stateMutability: "view",
          inputs: [{ name: "a", type: "address" }],
          outputs: [{ type: "uint256" }],
        },
      ] as const,
      functionName: "balanceOf",
      args: [owner as Hex],
    }),
  )

/** A Hyperliquid account: SIWE sign-in, the master address linked, margin credited at the venue. */
const hyperliquidAccount = (base: string, node: VenueNode, credit: bigint) =>
  Effect.gen(function* () {
    const account = fresh()
    const token = yield* signIn(base, account)
    const link = yield* post(`${base}/v1/accounts`, { venue: "hyperliquid", address: account.address }, bearer(token))
    expect(link.status).toBe(201)
    node.sim.control.credit(account.address, credit)
    return { account, token, address: lower(account.address) }
  })

/** An Aster account: sign-in through the agent approval (which links it), margin credited at the venue. */
const asterAccount = (base: string, node: VenueNode, credit: bigint) =>
  Effect.gen(function* () {
    const account = fresh()
    const token = yield* asterSignIn(base, account)
    node.sim.control.credit(account.address, credit)
    return { account, token, address: lower(account.address) }
  })

const journalOf = (id: string) =>
  Effect.flatMap(
    SqlClient.SqlClient,
    (sql) =>
      sql<{ kind: string; payload: { revision: string; state: string; withdrawal_id: string } }>`
      select kind, payload from journal where payload->>'withdrawal_id' = ${id} order by id`,
  )

const counts = Effect.flatMap(SqlClient.SqlClient, (sql) =>
  sql<{ w: string; p: string; j: string }>`
    select (select count(*) from withdrawals)::text as w, (select count(*) from withdrawal_preparations)::text as p,
           (select count(*) from journal)::text as j`.pipe(Effect.map((rows) => rows[0]!)),
)

layer(Live, { timeout: "240 seconds", excludeTestServices: true })("withdrawals", (it) => {
  it.effect("Hyperliquid to: signer: queued → submitting → relayed, funds arrive on the escrow chain (999)", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const { hl } = yield* WithdrawalDevnet
      const { account, token, address } = yield* hyperliquidAccount(base, hl!, 100n * USDC)
      const before = yield* tokenBalance(hl!, address)
      const prepared = yield* prepareOk(base, token, { venue: "hyperliquid", amount: "25000000", to: "signer" })
      expect(prepared).toMatchObject({ venue: "hyperliquid", amount: "25000000", to: "signer", destination: address })
      expect(prepared.typed_data.primaryType).toBe("HyperliquidTransaction:SendAsset")
      expect(prepared.typed_data.domain).toMatchObject({ name: "HyperliquidSignTransaction", chainId: 42161 })
      expect(prepared.typed_data.message).toMatchObject({ amount: "25", sourceDex: "", destinationDex: "spot" })
      const signature = yield* signPrepared(account, prepared)
      const queued = yield* submit(base, token, prepared, signature)
      expect(queued.status).toBe(200)
      const created = queued.json as WithdrawalView
      expect(created).toMatchObject({
        venue: "hyperliquid",
        address,
        amount: "25000000",
        to: "signer",
        destination: address,
        state: "queued",
        revision: "1",
      })
      // Not acknowledged yet: venue_ref and relayed_at are absent, never null (the spec types them
      // string and timestamp), here, in GET /v1/withdrawals/{id} and in history rows.
      expect(Object.keys(created)).not.toContain("venue_ref")
      expect(Object.keys(created)).not.toContain("relayed_at")
      const history = (yield* get(`${base}/v1/withdrawals/history`, token)).json as { data: Array<WithdrawalView> }
      for (const row of history.data.filter((r) => r.state === "queued" || r.state === "submitting")) {
        expect(Object.values(row)).not.toContain(null)
      }
      const relayed = yield* waitFor(base, token, created.id, inState("relayed", "failed", "unknown"))
      expect(relayed).toMatchObject({ state: "relayed", revision: "3", error: "" })
      expect(relayed.venue_ref).toMatch(/^0x[0-9a-f]{40}:[0-9]+$/)
      expect(relayed.relayed_at).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/)
      yield* Effect.promise(() => hl!.sim.control.payoutsSettled())
      expect((yield* tokenBalance(hl!, address)) - before).toBe(25n * USDC)
      expect(hl!.sim.control.balance(address)).toBe(75n * USDC)
      // One journal row per change, in revision order.
      const journal = yield* journalOf(created.id)
      expect(journal.map((j) => [j.kind, j.payload.state, j.payload.revision])).toEqual([
        ["withdrawal.queued", "queued", "1"],
        ["withdrawal.submitting", "submitting", "2"],
        ["withdrawal.relayed", "relayed", "3"],
      ])
      // The same signed preparation again: the same withdrawal, nothing new.
      const again = yield* submit(base, token, prepared, signature)
      expect([again.status, (again.json as WithdrawalView).id]).toEqual([200, created.id])
      expect((yield* journalOf(created.id)).length).toBe(3)
      const one = yield* get(`${base}/v1/withdrawals/${created.id}`, token)
      expect(one.headers["x-event-cursor"]).toMatch(/^[0-9]+$/)
    }),
  )

  it.effect(
    "Aster to: signer after the agent-approval sign-in: relayed, funds arrive on the escrow chain (42161)",
    () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const { aster } = yield* WithdrawalDevnet
        const { account, token, address } = yield* asterAccount(base, aster!, 50n * USDC)
        const before = yield* tokenBalance(aster!, address)
        const prepared = yield* prepareOk(base, token, { venue: "aster", amount: "10000000", to: "signer" })
        expect(prepared.typed_data.primaryType).toBe("Action")
        expect(prepared.typed_data.domain).toMatchObject({ name: "Aster", chainId: 42161 })
        expect(prepared.typed_data.message).toMatchObject({ destination: address, amount: "10", type: "Withdraw" })
        const w = yield* withdraw(base, token, account, { venue: "aster", amount: "10000000", to: "signer" })
        const relayed = yield* waitFor(base, token, w.id, inState("relayed", "failed", "unknown"))
        expect(relayed.state).toBe("relayed")
        expect(relayed.venue_ref).toMatch(/^[0-9]+$/)
        yield* Effect.promise(() => aster!.sim.control.payoutsSettled())
        expect((yield* tokenBalance(aster!, address)) - before).toBe(10n * USDC)
        // The unsubmitted preparation above is simply never used.
        expect(aster!.sim.control.balance(address)).toBe(40n * USDC)
      }),
  )

  it.effect("Hyperliquid to: wallet pays the venue wallet route (withdraw3) to the linked address", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const { hl } = yield* WithdrawalDevnet
      const { account, token, address } = yield* hyperliquidAccount(base, hl!, 10n * USDC)
      const before = yield* tokenBalance(hl!, address)
      const w = yield* withdraw(base, token, account, { venue: "hyperliquid", amount: "2500000", to: "wallet" })
      expect(w.to).toBe("wallet")
      expect((yield* waitFor(base, token, w.id, inState("relayed", "failed", "unknown"))).state).toBe("relayed")
      yield* Effect.promise(() => hl!.sim.control.payoutsSettled())
      expect((yield* tokenBalance(hl!, address)) - before).toBe(2_500_000n)
    }),
  )

  it.effect("a venue refusal: failed with the venue's error, nothing moved, the next withdrawal is allowed", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const { hl } = yield* WithdrawalDevnet
      const { account, token, address } = yield* hyperliquidAccount(base, hl!, 20n * USDC)
      hl!.sim.control.refuseNext(1, { message: "Insufficient balance for withdrawal." })
      const w = yield* withdraw(base, token, account, { venue: "hyperliquid", amount: "5000000", to: "signer" })
      const failed = yield* waitFor(base, token, w.id, inState("relayed", "failed", "unknown"))
      expect(failed.state).toBe("failed")
      expect(failed.error).toContain("Insufficient balance for withdrawal.")
      expect(failed.revision).toBe("3")
      expect(hl!.sim.control.balance(address)).toBe(20n * USDC)
      const next = yield* withdraw(base, token, account, { venue: "hyperliquid", amount: "5000000", to: "signer" })
      expect((yield* waitFor(base, token, next.id, inState("relayed", "failed", "unknown"))).state).toBe("relayed")
    }),
  )

  it.effect("timeout after the venue applied it → unknown, blocks the next withdrawal, reconciled to relayed", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const { hl } = yield* WithdrawalDevnet
      const { account, token, address } = yield* hyperliquidAccount(base, hl!, 30n * USDC)
      // Two preparations first: the second is submitted while the first is unknown.
      const first = yield* prepareOk(base, token, { venue: "hyperliquid", amount: "7000000", to: "signer" })
      const second = yield* prepareOk(base, token, { venue: "hyperliquid", amount: "1000000", to: "signer" })
      hl!.sim.control.timeoutNext(1, { holdMs: 4_000, apply: true })
      const res = yield* submit(base, token, first, yield* signPrepared(account, first))
      const id = (res.json as WithdrawalView).id
      // The venue's ledger is unreadable for now: the withdrawal stays unknown while the blocking is checked.
      hl!.sim.control.refuseNext(10_000, { scope: "read" })
      const unknown = yield* waitFor(base, token, id, inState("unknown", "relayed", "failed"))
      expect(unknown.state).toBe("unknown")
      expect(unknown.error).toMatch(/no answer/)
      // Blocked both ways while unknown: prepare and submit answer WITHDRAWAL_PENDING.
      const blocked = yield* prepare(base, token, { venue: "hyperliquid", amount: "1000000", to: "signer" })
      expect([blocked.status, code(blocked)]).toEqual([409, "WITHDRAWAL_PENDING"])
      const blockedSubmit = yield* submit(base, token, second, yield* signPrepared(account, second))
      expect([blockedSubmit.status, code(blockedSubmit)]).toEqual([409, "WITHDRAWAL_PENDING"])
      // The unlink is refused too.
      const unlink = yield* rawRequest(`${base}/v1/accounts/hyperliquid`, { method: "DELETE", headers: bearer(token) })
      expect(code(unlink)).toBe("ACCOUNT_IN_USE")
      expect((yield* get(`${base}/v1/withdrawals/${id}`, token)).json).toMatchObject({ state: "unknown" })
      hl!.sim.control.clearFaults()
      const relayed = yield* waitFor(base, token, id, inState("relayed", "failed"))
      expect(relayed.state).toBe("relayed")
      expect(relayed.venue_ref).toMatch(/^0x/)
      expect(relayed.revision).toBe("4")
      const journal = yield* journalOf(id)
      expect(journal.map((j) => j.payload.state)).toEqual(["queued", "submitting", "unknown", "relayed"])
      // Applied exactly once.
      expect(hl!.sim.control.balance(address)).toBe(23n * USDC)
    }),
  )

  it.effect("a desk per venue account: one account's held send does not hold another account's withdrawal", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const { hl } = yield* WithdrawalDevnet
      const a = yield* hyperliquidAccount(base, hl!, 30n * USDC)
      const b = yield* hyperliquidAccount(base, hl!, 30n * USDC)
      const preparedA = yield* prepareOk(base, a.token, { venue: "hyperliquid", amount: "2000000", to: "signer" })
      const preparedB = yield* prepareOk(base, b.token, { venue: "hyperliquid", amount: "3000000", to: "signer" })
      // A's send gets no answer for 4 s (the venue applies it); B is submitted while A's desk waits on it.
      hl!.sim.control.timeoutNext(1, { holdMs: 4_000, apply: true })
      const idA = (
        (yield* submit(base, a.token, preparedA, yield* signPrepared(a.account, preparedA))).json as WithdrawalView
      ).id
      // The venue's ledger is unreadable for now, so A cannot resolve before B is looked at.
      hl!.sim.control.refuseNext(10_000, { scope: "read" })
      yield* waitFor(base, a.token, idA, inState("submitting", "unknown", "relayed", "failed"))
      const idB = (
        (yield* submit(base, b.token, preparedB, yield* signPrepared(b.account, preparedB))).json as WithdrawalView
      ).id
      const relayedB = yield* waitFor(base, b.token, idB, inState("relayed", "failed"))
      expect(relayedB.state).toBe("relayed")
      expect(hl!.sim.control.balance(b.address)).toBe(27n * USDC)
      // A is still with its own desk (held or unknown), then resolves from evidence: applied once.
      expect(["submitting", "unknown"]).toContain(
        ((yield* get(`${base}/v1/withdrawals/${idA}`, a.token)).json as WithdrawalView).state,
      )
      hl!.sim.control.clearFaults()
      const relayedA = yield* waitFor(base, a.token, idA, inState("relayed", "failed"))
      expect(relayedA.state).toBe("relayed")
      expect(hl!.sim.control.balance(a.address)).toBe(28n * USDC)
      // Two entities of the withdrawal-desk kind ran here (one per account; the runner counts them).
      const board = (yield* Effect.flatMap(Supervision, (s) => s.snapshot)).find((r) => r.kind === "withdrawal-desk")
      expect(board?.instances ?? 0).toBeGreaterThanOrEqual(2)
    }),
  )

  it.effect("timeout without the venue applying it → unknown → failed once the nonce window closed; no transfer", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const { hl } = yield* WithdrawalDevnet
      const { account, token, address } = yield* hyperliquidAccount(base, hl!, 30n * USDC)
      const before = yield* tokenBalance(hl!, address)
      hl!.sim.control.timeoutNext(1, { holdMs: 3_000, apply: false })
      const w = yield* withdraw(base, token, account, { venue: "hyperliquid", amount: "9000000", to: "signer" })
      expect((yield* waitFor(base, token, w.id, inState("unknown", "relayed", "failed"))).state).toBe("unknown")
      const failed = yield* waitFor(base, token, w.id, inState("relayed", "failed"), HL_WINDOW_MS + 15_000)
      expect(failed.state).toBe("failed")
      expect(failed.error).toMatch(/nonce window/)
      expect(hl!.sim.control.balance(address)).toBe(30n * USDC)
      yield* Effect.promise(() => hl!.sim.control.payoutsSettled())
      expect(yield* tokenBalance(hl!, address)).toBe(before)
    }),
  )

  it.effect("Aster: accept then an unknown-outcome error → unknown → reconciled to relayed by the history", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const { aster } = yield* WithdrawalDevnet
      const { account, token, address } = yield* asterAccount(base, aster!, 40n * USDC)
      aster!.sim.control.acceptThenErrorNext(1)
      const w = yield* withdraw(base, token, account, { venue: "aster", amount: "3300000", to: "signer" })
      const final = yield* waitFor(base, token, w.id, inState("relayed", "failed"))
      expect(final.state).toBe("relayed")
      expect((yield* journalOf(w.id)).map((j) => j.payload.state)).toEqual([
        "queued",
        "submitting",
        "unknown",
        "relayed",
      ])
      expect(aster!.sim.control.balance(address)).toBe(40n * USDC - 3_300_000n)
    }),
  )

  it.effect("Aster: the agent store unreadable is the service's fault: prepare 503, the desk's send waits for it", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const { aster } = yield* WithdrawalDevnet
      const sql = yield* SqlClient.SqlClient
      const { account, token, address } = yield* asterAccount(base, aster!, 40n * USDC)
      const body = { venue: "aster", amount: "1500000", to: "signer" } as const
      const prepared = yield* prepareOk(base, token, body)
      const signature = yield* signPrepared(account, prepared)
      // A fault injected on purpose: the agents' table is out of reach (as while the database fails over).
      const outage = <A, E, R>(during: Effect.Effect<A, E, R>) =>
        Effect.acquireUseRelease(
          sql`alter table venue_agents rename to venue_agents_unreachable`,
          () => during,
          () => sql`alter table venue_agents_unreachable rename to venue_agents`.pipe(Effect.orDie),
        )
      const submitted = yield* outage(
        Effect.gen(function* () {
          // Before, 409 STATE_CONFLICT "no live agent approval": the user was told to link again.
          const refused = yield* prepare(base, token, body)
          expect([refused.status, code(refused)]).toEqual([503, "SERVICE_UNAVAILABLE"])
          expect((refused.json as { error: { retryable: boolean } }).error.retryable).toBe(true)
          const res = yield* submit(base, token, prepared, signature)
          expect(res.status, res.text).toBe(200)
          const w = res.json as WithdrawalView
          // The desk claimed it and cannot resolve the agent; before, it failed at once (sign and submit again).
          yield* waitFor(base, token, w.id, inState("submitting", "failed"))
          yield* Effect.sleep("1500 millis")
          return w
        }),
      )
      const final = yield* waitFor(base, token, submitted.id, inState("relayed", "failed"))
      expect(final.state, final.error).toBe("relayed")
      expect((yield* journalOf(submitted.id)).map((j) => j.payload.state)).toEqual(["queued", "submitting", "relayed"])
      expect(aster!.sim.control.balance(address)).toBe(40n * USDC - 1_500_000n)
    }),
  )

  it.effect(
    "Aster: a second withdrawal of the same amount, unknown, is reconciled to its own record, not the first's",
    () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const { aster } = yield* WithdrawalDevnet
        const { account, token, address } = yield* asterAccount(base, aster!, 40n * USDC)
        const body = { venue: "aster", amount: "2200000", to: "signer" } as const
        const first = yield* withdraw(base, token, account, body)
        const done = yield* waitFor(base, token, first.id, inState("relayed", "failed"))
        expect(done.state).toBe("relayed")
        // The history names no nonce: both records match asset, chain, amount and time. The first is the first
        // withdrawal's; the second, applied behind an unknown-outcome answer, must be found as its own.
        aster!.sim.control.acceptThenErrorNext(1)
        const second = yield* withdraw(base, token, account, body)
        const final = yield* waitFor(base, token, second.id, inState("relayed", "failed"))
        expect(final.state).toBe("relayed")
        expect(final.venue_ref).not.toBe(done.venue_ref)
        expect((yield* journalOf(second.id)).map((j) => j.payload.state)).toEqual([
          "queued",
          "submitting",
          "unknown",
          "relayed",
        ])
        expect(aster!.sim.control.balance(address)).toBe(40n * USDC - 4_400_000n)
      }),
  )

  it.effect("the balance counts transfers acknowledged since the venue's figure was read (prepare rule 3)", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const { hl } = yield* WithdrawalDevnet
      const sql = yield* SqlClient.SqlClient
      const { token, address } = yield* hyperliquidAccount(base, hl!, 10n * USDC)
      const over = yield* prepare(base, token, { venue: "hyperliquid", amount: "10000001", to: "signer" })
      expect([over.status, code(over)]).toEqual([422, "INSUFFICIENT_BALANCE"])
      // A transfer the venue acknowledged "after" the next read started (not yet in its figure): deducted.
      const master = address
      yield* sql`insert into withdrawals (id, master, venue, address, amount, destination, state, created_at,
          updated_at, relayed_at)
        values (gen_random_uuid(), ${master}, 'hyperliquid', ${address}, 4000000, ${address}, 'relayed', now(), now(),
          now() + interval '1 hour')`
      const short = yield* prepare(base, token, { venue: "hyperliquid", amount: "6000001", to: "signer" })
      expect([short.status, code(short)]).toEqual([422, "INSUFFICIENT_BALANCE"])
      expect((short.json as { error: { message: string } }).error.message).toContain("6000000")
      expect((yield* prepare(base, token, { venue: "hyperliquid", amount: "6000000", to: "signer" })).status).toBe(200)
    }),
  )

  it.effect("every bad input answers its envelope and changes nothing", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const { hl } = yield* WithdrawalDevnet
      const { account, token } = yield* hyperliquidAccount(base, hl!, 50n * USDC)
      const auth = bearer(token)
      const other = yield* hyperliquidAccount(base, hl!, 50n * USDC)
      const stranger = fresh()
      const prepared = yield* prepareOk(base, token, { venue: "hyperliquid", amount: "1000000", to: "signer" })
      const theirs = yield* prepareOk(base, other.token, { venue: "hyperliquid", amount: "1000000", to: "signer" })
      const signature = yield* signPrepared(account, prepared)
      const before = yield* counts
      const expectError = (res: { status: number; json: unknown; text: string }, status: number, c: string) => {
        expect([res.status, code(res)], res.text).toEqual([status, c])
        const body = res.json as { error: { request_id: string; retryable: boolean; message: string } }
        expect(body.error.request_id).toMatch(/^[0-9a-f-]{36}$/)
        expect(typeof body.error.retryable).toBe("boolean")
      }
      const prep = (body: unknown) => post(`${base}/v1/withdrawals/prepare`, body, auth)
      const good = { venue: "hyperliquid", amount: "1000000", to: "signer" }
      expectError(yield* prep({ ...good, extra: 1 }), 400, "INVALID_REQUEST")
      expectError(yield* prep({ ...good, amount: "1.5" }), 400, "INVALID_REQUEST")
      expectError(yield* prep({ ...good, amount: 1000000 }), 400, "INVALID_REQUEST")
      expectError(yield* prep({ ...good, amount: "0" }), 400, "INVALID_REQUEST")
      expectError(yield* prep({ ...good, amount: (2n ** 256n).toString() }), 400, "INVALID_REQUEST")
      expectError(yield* prep({ ...good, to: "elsewhere" }), 400, "INVALID_REQUEST")
      expectError(yield* prep({ venue: "hyperliquid", amount: "1" }), 400, "INVALID_REQUEST")
      expectError(yield* prep({ ...good, venue: "nowhere" }), 404, "NOT_FOUND")
      expectError(yield* prep({ ...good, venue: "Bad Venue" }), 400, "INVALID_REQUEST")
      expectError(yield* prep({ ...good, amount: "999000000000" }), 422, "INSUFFICIENT_BALANCE")
      expectError(yield* prep({ ...good, venue: "aster" }), 404, "NOT_FOUND")
      const badJson = yield* rawRequest(`${base}/v1/withdrawals/prepare`, {
        method: "POST",
        headers: { ...auth, "content-type": "application/json" },
        body: "{not json",
      })
      expectError(badJson, 400, "INVALID_REQUEST")

      const sub = (patch: object, sig: Hex = signature, p: Prepared = prepared) => submit(base, token, p, sig, patch)
      expectError(yield* sub({ extra: true }), 400, "INVALID_REQUEST")
      expectError(yield* sub({ signature: "0x1234" }), 400, "INVALID_REQUEST")
      expectError(yield* sub({}, `0x${"11".repeat(64)}1f` as Hex), 422, "SIGNATURE_MALFORMED")
      expectError(yield* sub({}, highS(signature)), 422, "SIGNATURE_MALLEABLE")
      const bySomeoneElse = yield* Effect.promise(() =>
        stranger.signTypedData(prepared.typed_data as Parameters<typeof stranger.signTypedData>[0]),
      )
      expectError(yield* sub({}, bySomeoneElse), 422, "SIGNATURE_INVALID")
      expectError(yield* sub({ amount: "2000000" }), 400, "INVALID_REQUEST")
      expectError(yield* sub({ to: "wallet" }), 400, "INVALID_REQUEST")
      expectError(yield* sub({ venue: "aster" }), 404, "NOT_FOUND")
      expectError(yield* sub({ venue: "nowhere" }), 404, "NOT_FOUND")
      // Typed data the service did not build for this account: edited, arbitrary, or another account's.
      const edited = {
        ...prepared.typed_data,
        message: { ...prepared.typed_data.message, amount: "2" },
      }
      const editedSig = yield* Effect.promise(() =>
        account.signTypedData(edited as Parameters<typeof account.signTypedData>[0]),
      )
      expectError(yield* sub({ typed_data: edited }, editedSig), 400, "INVALID_REQUEST")
      const rerouted = {
        ...prepared.typed_data,
        message: { ...prepared.typed_data.message, destination: lower(stranger.address) },
      }
      const reroutedSig = yield* Effect.promise(() =>
        account.signTypedData(rerouted as Parameters<typeof account.signTypedData>[0]),
      )
      expectError(yield* sub({ typed_data: rerouted }, reroutedSig), 400, "INVALID_REQUEST")
      expectError(yield* sub({ typed_data: { hello: "world" } }), 400, "INVALID_REQUEST")
      expectError(yield* sub({ typed_data: "text" }), 400, "INVALID_REQUEST")
      const theirSig = yield* signPrepared(other.account, theirs)
      expectError(yield* submit(base, token, theirs, theirSig), 400, "INVALID_REQUEST")

      const getAs = (path: string, t = token) => get(`${base}${path}`, t)
      expectError(yield* getAs("/v1/withdrawals/not-a-uuid"), 400, "INVALID_REQUEST")
      expectError(yield* getAs("/v1/withdrawals/7d4f2a3e-1b2c-4d5e-8f90-123456789abc"), 404, "NOT_FOUND")
      expectError(yield* getAs("/v1/withdrawals/history?limit=0"), 400, "INVALID_REQUEST")
      expectError(yield* getAs("/v1/withdrawals/history?limit=501"), 400, "INVALID_REQUEST")
      expectError(yield* getAs("/v1/withdrawals/history?limit=ten"), 400, "INVALID_REQUEST")
      expectError(yield* getAs("/v1/withdrawals/history?limit=1.5"), 400, "INVALID_REQUEST")
      expectError(yield* getAs("/v1/withdrawals/history?after=garbage"), 400, "INVALID_REQUEST")
      expectError(yield* getAs(`/v1/withdrawals/history?after=${"a".repeat(513)}`), 400, "INVALID_REQUEST")
      const del = yield* rawRequest(`${base}/v1/withdrawals/history`, { method: "DELETE", headers: auth })
      expectError(del, 405, "METHOD_NOT_ALLOWED")
      expect(yield* counts).toEqual(before)

      // Another account's withdrawal is not found; a withdrawal of mine is.
      // (Hyperliquid's window is 5 s here: the preparation above may have expired meanwhile; prepare afresh.)
      const again = yield* prepareOk(base, token, { venue: "hyperliquid", amount: "1000000", to: "signer" })
      const mine = yield* submit(base, token, again, yield* signPrepared(account, again))
      expect(mine.status, mine.text).toBe(200)
      const id = (mine.json as WithdrawalView).id
      expectError(yield* getAs(`/v1/withdrawals/${id}`, other.token), 404, "NOT_FOUND")
      expect((yield* getAs(`/v1/withdrawals/${id}`)).status).toBe(200)
      yield* waitFor(base, token, id, inState("relayed", "failed", "unknown"))
    }),
  )

  it.effect("a preparation past its validity (here Hyperliquid's 5 s nonce window) is refused: CHALLENGE_EXPIRED", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const { hl } = yield* WithdrawalDevnet
      const { account, token } = yield* hyperliquidAccount(base, hl!, 5n * USDC)
      const prepared = yield* prepareOk(base, token, { venue: "hyperliquid", amount: "1000000", to: "signer" })
      expect(Date.parse(prepared.expires_at) - Date.now()).toBeLessThanOrEqual(HL_WINDOW_MS)
      const signature = yield* signPrepared(account, prepared)
      yield* Effect.sleep(Duration.millis(Date.parse(prepared.expires_at) - Date.now() + 200))
      const late = yield* submit(base, token, prepared, signature)
      expect([late.status, code(late)]).toEqual([422, "CHALLENGE_EXPIRED"])
      expect(hl!.sim.control.balance(lower(account.address))).toBe(5n * USDC)
    }),
  )

  it.effect("access: without it no new withdrawal is prepared or submitted; a repeat is answered as before", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const { hl } = yield* WithdrawalDevnet
      const sql = yield* SqlClient.SqlClient
      const { account, token, address } = yield* hyperliquidAccount(base, hl!, 5n * USDC)
      const first = yield* prepareOk(base, token, { venue: "hyperliquid", amount: "1000000", to: "signer" })
      const second = yield* prepareOk(base, token, { venue: "hyperliquid", amount: "1000000", to: "wallet" })
      const made = yield* submit(base, token, first, yield* signPrepared(account, first))
      expect(made.status, made.text).toBe(200)
      yield* sql`update accounts set access = 'suspended' where master = ${address}`
      const before = (yield* counts).w
      const res = yield* prepare(base, token, { venue: "hyperliquid", amount: "1000000", to: "signer" })
      expect([res.status, code(res)]).toEqual([403, "ACCESS_REQUIRED"])
      // A new commitment is refused; the lost answer of an earlier one is not (spec: access gates new commitments).
      const fresh = yield* submit(base, token, second, yield* signPrepared(account, second))
      expect([fresh.status, code(fresh)]).toEqual([403, "ACCESS_REQUIRED"])
      const again = yield* submit(base, token, first, yield* signPrepared(account, first))
      expect(again.status, again.text).toBe(200)
      expect((again.json as WithdrawalView).id).toBe((made.json as WithdrawalView).id)
      expect((yield* counts).w).toBe(before)
    }),
  )
})

export type { PrivateKeyAccount }
