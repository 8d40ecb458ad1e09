/**
 * Sign-in and linking through Aster's agent approval, against the Aster simulator on anvil (42161): the challenge
 * answers the approval (typed data naming this service's agent for the account, every permission false, 365
 * days) and its body; verify registers it with the venue within its nonce window, opens the session and links the
 * account with `expires_at` 365 days ahead; the agent key is stored sealed and signs the account's later requests.
 * Signatures older than the venue's window, or ours, are refused without a session; SIWE is unchanged.
 */
import { SqlClient } from "@effect/sql"
import { expect, layer } from "@effect/vitest"
import { Duration, Effect } from "effect"
import { type Hex, hexToBigInt, numberToHex } from "viem"
import { generatePrivateKey, type PrivateKeyAccount, privateKeyToAccount } from "viem/accounts"
import { rawRequest } from "../support/Http.ts"
import { bearer, post, signIn } from "../support/SignIn.ts"
import { baseUrl } from "../support/TestServer.ts"
import {
  asterSignIn,
  code,
  inState,
  USDC,
  WithdrawalDevnet,
  waitFor,
  withdraw,
  withdrawalDevnet,
} from "../support/WithdrawalDevnet.ts"

/** The simulator takes a nonce only within 2 s; the service relays approvals up to 4 s old. */
const VENUE_WINDOW_MS = 2_000
const SERVICE_WINDOW_MS = 4_000
const Live = withdrawalDevnet({
  venues: ["aster"],
  sim: { aster: { nonceWindowMicros: VENUE_WINDOW_MS * 1000 } },
  api: { aster: { agent_approval_window_ms: SERVICE_WINDOW_MS } },
})

const fresh = () => privateKeyToAccount(generatePrivateKey())
const DAY = 86_400_000

interface Challenge {
  readonly message: string
  readonly nonce: string
  readonly expires_at: string
  // biome-ignore lint/suspicious/noExplicitAny: wire typed data
  readonly typed_data: any
}

const challengeFor = (base: string, account: PrivateKeyAccount, venue = "aster") =>
  Effect.map(post(`${base}/v1/auth/challenge`, { address: account.address, venue }), (res) => {
    expect(res.status, res.text).toBe(200)
    return res.json as Challenge
  })

const signChallenge = (account: PrivateKeyAccount, c: Challenge) =>
  Effect.promise(() => account.signTypedData(c.typed_data as Parameters<typeof account.signTypedData>[0]))

const N = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n
const highS = (sig: Hex) => {
  const s = hexToBigInt(`0x${sig.slice(66, 130)}`)
  const v = Number.parseInt(sig.slice(130), 16)
  return `${sig.slice(0, 66)}${numberToHex(N - s, { size: 32 }).slice(2)}${(v === 27 ? 28 : 27).toString(16)}` as Hex
}

const sessionsOf = (master: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<{ n: string }>`select count(*)::text as n from sessions where master = ${master.toLowerCase()}`.pipe(
      Effect.map((rows) => Number(rows[0]!.n)),
    ),
  )

layer(Live, { timeout: "180 seconds", excludeTestServices: true })("aster agent-approval sign-in", (it) => {
  it.effect("challenge → signed approval → verify: venue registers the agent, session, link with 365 days", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const { aster } = yield* WithdrawalDevnet
      const sql = yield* SqlClient.SqlClient
      const user = fresh()
      const address = user.address.toLowerCase()
      const c = yield* challengeFor(base, user)
      expect(c.typed_data).toMatchObject({
        primaryType: "Message",
        domain: {
          name: "AsterSignTransaction",
          version: "1",
          chainId: 42161,
          verifyingContract: "0x0000000000000000000000000000000000000000",
        },
        types: { Message: [{ name: "msg", type: "string" }] },
      })
      expect(c.message).toBe(c.typed_data.message.msg)
      const fields = Object.fromEntries(c.message.split("&").map((kv) => kv.split("=") as [string, string]))
      expect(Object.keys(fields)).toEqual([
        "user",
        "nonce",
        "agentName",
        "agentAddress",
        "expired",
        "signatureChainId",
        "canSpotTrade",
        "canPerpTrade",
        "canWithdraw",
        "ipWhitelist",
      ])
      expect(fields).toMatchObject({
        user: address,
        signatureChainId: "42161",
        canSpotTrade: "false",
        canPerpTrade: "false",
        canWithdraw: "false",
        ipWhitelist: "",
      })
      const agent = fields.agentAddress!
      expect(agent).toMatch(/^0x[0-9a-f]{40}$/)
      expect(agent).not.toBe(address)
      expect(Number(fields.expired) - Math.floor(Number(fields.nonce) / 1000)).toBe(365 * DAY)
      expect(Date.parse(c.expires_at) - Date.now()).toBeLessThanOrEqual(SERVICE_WINDOW_MS)

      const verified = yield* post(`${base}/v1/auth/verify`, {
        nonce: c.nonce,
        signature: yield* signChallenge(user, c),
      })
      expect(verified.status, verified.text).toBe(200)
      const session = verified.json as { token: string; master_address: string; expires_at: string }
      expect(session.master_address).toBe(address)
      // The venue holds the approval: this service's agent, no permission, 365 days.
      const [registered] = aster!.sim.control.agents(user.address)
      expect(registered).toMatchObject({
        agent,
        name: "settler",
        canSpotTrade: false,
        canPerpTrade: false,
        canWithdraw: false,
        ipWhitelist: "",
        expiresAtMs: Number(fields.expired),
      })
      const me = (yield* rawRequest(`${base}/v1/me`, { headers: bearer(session.token) })).json as {
        accounts: Array<{ venue: string; address: string; expires_at: string | null }>
      }
      expect(me.accounts).toHaveLength(1)
      expect(me.accounts[0]).toMatchObject({ venue: "aster", address })
      expect(Date.parse(me.accounts[0]!.expires_at!)).toBe(Number(fields.expired))
      // The key is stored sealed, never in clear, never in the journal.
      const [row] = yield* sql<{ agent_address: string; key_ciphertext: Buffer }>`
        select agent_address, key_ciphertext from venue_agents where venue = 'aster' and address = ${address}`
      expect(row!.agent_address).toBe(agent)
      expect(row!.key_ciphertext.length).toBe(1 + 12 + 32 + 16)
      const journal = yield* sql<{ payload: unknown }>`select payload from journal where master = ${address}`
      expect(JSON.stringify(journal)).not.toContain(row!.key_ciphertext.toString("hex"))
      // The agent signs the account's requests: a withdrawal is prepared (balance read) and relayed.
      aster!.sim.control.credit(user.address, 20n * USDC)
      const w = yield* withdraw(base, session.token, user, { venue: "aster", amount: "5000000", to: "signer" })
      expect((yield* waitFor(base, session.token, w.id, inState("relayed", "failed", "unknown"))).state).toBe("relayed")

      // Signing in again re-approves the same agent (no new key) and renews the link.
      const again = yield* challengeFor(base, user)
      expect(again.message).toContain(`agentAddress=${agent}&`)
      const token2 = yield* asterSignIn(base, user)
      expect(token2).not.toBe(session.token)
      expect(aster!.sim.control.agents(user.address).map((a) => a.agent)).toEqual([agent])
    }),
  )

  it.effect("a signature older than the venue's nonce window, or ours, is refused: no session, no agent", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const { aster } = yield* WithdrawalDevnet
      // Older than the venue's 2 s but within our 4 s: relayed, and the venue refuses it (Nonce Expired).
      const slow = fresh()
      const c1 = yield* challengeFor(base, slow)
      const sig1 = yield* signChallenge(slow, c1)
      yield* Effect.sleep(Duration.millis(VENUE_WINDOW_MS + 500))
      const late = yield* post(`${base}/v1/auth/verify`, { nonce: c1.nonce, signature: sig1 })
      expect([late.status, code(late)], late.text).toEqual([422, "CHALLENGE_EXPIRED"])
      expect((late.json as { error: { message: string } }).error.message).toMatch(/Nonce Expired/)
      // Older than ours: refused before anything is sent.
      const c2 = yield* challengeFor(base, slow)
      const sig2 = yield* signChallenge(slow, c2)
      yield* Effect.sleep(Duration.millis(SERVICE_WINDOW_MS + 300))
      const later = yield* post(`${base}/v1/auth/verify`, { nonce: c2.nonce, signature: sig2 })
      expect([later.status, code(later)]).toEqual([422, "CHALLENGE_EXPIRED"])
      expect(aster!.sim.control.agents(slow.address)).toEqual([])
      expect(yield* sessionsOf(slow.address)).toBe(0)
      // Each challenge was spent.
      const reuse = yield* post(`${base}/v1/auth/verify`, { nonce: c1.nonce, signature: sig1 })
      expect([reuse.status, code(reuse)]).toEqual([409, "CHALLENGE_USED"])
      // A fresh one, signed at once, goes through.
      expect((yield* asterSignIn(base, slow)).startsWith("st_")).toBe(true)
    }),
  )

  it.effect("wrong signer, high s, and a venue refusal never open a session", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const { aster } = yield* WithdrawalDevnet
      const user = fresh()
      const c = yield* challengeFor(base, user)
      const byOther = yield* signChallenge(fresh(), c)
      const own = yield* signChallenge(user, c)
      const malleable = yield* post(`${base}/v1/auth/verify`, { nonce: c.nonce, signature: highS(own) })
      expect([malleable.status, code(malleable)]).toEqual([422, "SIGNATURE_MALLEABLE"])
      const wrong = yield* post(`${base}/v1/auth/verify`, { nonce: c.nonce, signature: byOther })
      expect([wrong.status, code(wrong)]).toEqual([422, "SIGNATURE_INVALID"])
      const c2 = yield* challengeFor(base, user)
      aster!.sim.control.refuseNext(1, { message: "Agent registration is paused." })
      const refused = yield* post(`${base}/v1/auth/verify`, {
        nonce: c2.nonce,
        signature: yield* signChallenge(user, c2),
      })
      expect([refused.status, code(refused)]).toEqual([422, "VENUE_REFUSED"])
      const c3 = yield* challengeFor(base, user)
      aster!.sim.control.timeoutNext(1, { holdMs: 3_000, apply: false })
      const unknown = yield* post(`${base}/v1/auth/verify`, {
        nonce: c3.nonce,
        signature: yield* signChallenge(user, c3),
      })
      expect([unknown.status, code(unknown)]).toEqual([503, "VENUE_UNAVAILABLE"])
      expect((unknown.json as { error: { retryable: boolean } }).error.retryable).toBe(true)
      // What the transport said (the venue's host, the timeout) is the operator's log line, not the client's text.
      expect((unknown.json as { error: { message: string } }).error.message).toBe(
        "the venue did not confirm the approval; ask for a new challenge and sign again",
      )
      expect(yield* sessionsOf(user.address)).toBe(0)
      expect(aster!.sim.control.agents(user.address)).toEqual([])
    }),
  )

  it.effect("challenge inputs: unknown venue 404, bad venue 400, no venue or a venue without agents is SIWE", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const user = fresh()
      const unknown = yield* post(`${base}/v1/auth/challenge`, { address: user.address, venue: "nowhere" })
      expect([unknown.status, code(unknown)]).toEqual([404, "NOT_FOUND"])
      const bad = yield* post(`${base}/v1/auth/challenge`, { address: user.address, venue: "Not A Venue" })
      expect([bad.status, code(bad)]).toEqual([400, "INVALID_REQUEST"])
      const siwe = yield* post(`${base}/v1/auth/challenge`, { address: user.address })
      expect(siwe.status).toBe(200)
      expect((siwe.json as { typed_data?: unknown }).typed_data).toBeUndefined()
      expect((siwe.json as { message: string }).message).toContain("wants you to sign in with your Ethereum account")
      // SIWE sign-in is unchanged.
      expect((yield* signIn(base, fresh())).startsWith("st_")).toBe(true)
    }),
  )

  it.effect("linking another address on Aster uses the venue's approval; the master needs a live agent", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const { aster } = yield* WithdrawalDevnet
      const master = fresh()
      const token = yield* signIn(base, master)
      const auth = bearer(token)
      // The master address cannot link itself on Aster without an approved agent.
      const bare = yield* post(`${base}/v1/accounts`, { venue: "aster", address: master.address }, auth)
      expect([bare.status, code(bare)]).toEqual([400, "INVALID_REQUEST"])
      const wallet = fresh()
      const res = yield* post(`${base}/v1/accounts/challenge`, { venue: "aster", address: wallet.address }, auth)
      expect(res.status).toBe(200)
      const c = res.json as Challenge
      expect(c.typed_data.primaryType).toBe("Message")
      expect(c.message).toContain(`user=${wallet.address.toLowerCase()}&`)
      // Signed by someone else: refused, nothing linked.
      const wrong = yield* post(
        `${base}/v1/accounts`,
        { venue: "aster", address: wallet.address, nonce: c.nonce, signature: yield* signChallenge(master, c) },
        auth,
      )
      expect([wrong.status, code(wrong)]).toEqual([422, "SIGNATURE_INVALID"])
      const c2 = (yield* post(`${base}/v1/accounts/challenge`, { venue: "aster", address: wallet.address }, auth))
        .json as Challenge
      const linked = yield* post(
        `${base}/v1/accounts`,
        { venue: "aster", address: wallet.address, nonce: c2.nonce, signature: yield* signChallenge(wallet, c2) },
        auth,
      )
      expect(linked.status, linked.text).toBe(201)
      const account = linked.json as { venue: string; address: string; expires_at: string }
      expect(account).toMatchObject({ venue: "aster", address: wallet.address.toLowerCase() })
      expect(Date.parse(account.expires_at) - Date.now()).toBeGreaterThan(364 * DAY)
      expect(aster!.sim.control.agents(wallet.address)).toHaveLength(1)
    }),
  )
})
