import { spawn } from "node:child_process"
import { SqlClient } from "@effect/sql"
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { loadQuoteCandidates } from "../../src/Takes/QuoteCandidates.ts"
import { Chains, devnetStack } from "../support/DevnetStack.ts"
import { rawRequest } from "../support/Http.ts"
import { pollUntil } from "../support/Poll.ts"
import { issueCredential, registerIdentity } from "../support/QuoteIdentities.ts"
import { bearer, post, signIn } from "../support/SignIn.ts"
import { baseUrl } from "../support/TestServer.ts"

/**
 * This file's lock cutoff: 8 s instead of the default 60, so a quote set's whole life (validity 16 s) fits in a test.
 * The maker reads it from /v1/info as a real one does.
 */
const LOCK_CUTOFF = 8
const Live = devnetStack({ settlement: { lock_cutoff_seconds: LOCK_CUTOFF } })

/** Runs `npm run maker` (its script) as a child process; resolves with its exit code and output. */
const runMaker = (args: Array<string>, env: Record<string, string>) => {
  const child = spawn(process.execPath, ["--import", "tsx", "infra/maker/Maker.ts", ...args], {
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  })
  let output = ""
  child.stdout.on("data", (d: Buffer) => (output += d.toString()))
  child.stderr.on("data", (d: Buffer) => (output += d.toString()))
  const exited = new Promise<number>((resolve) => child.on("exit", (code) => resolve(code ?? -1)))
  return { child, exited, output: () => output }
}

/**
 * A signed-in owner with an identity, a `quote` credential and a funded order whose funding the escrow index already
 * shows (the chain layer's tests cover indexing); `tag` makes its ids.
 */
const makerOrder = (tag: string) =>
  Effect.gen(function* () {
    const base = yield* baseUrl
    const sql = yield* SqlClient.SqlClient
    const owner = privateKeyToAccount(generatePrivateKey())
    const token = yield* signIn(base, owner)
    yield* post(`${base}/v1/accounts`, { venue: "hyperliquid", address: owner.address }, bearer(token))
    const signerKey = generatePrivateKey()
    const identity = yield* registerIdentity(base, token, privateKeyToAccount(signerKey))
    const credential = yield* issueCredential(base, token, identity.id, ["quote"])
    const orderId = `0x${tag.repeat(32)}`
    const m = owner.address.toLowerCase()
    yield* sql`insert into orders (id, master, venue, receive_venue, owner_address, state, amount, created_at,
        updated_at, client_order_id, quote_identity_id, quote_signer, to_sign)
      values (${orderId}, ${m}, 'hyperliquid', 'aster', ${m}, 'funded', 4000000, now(), now(), ${`bot-${tag}`},
        ${identity.id}, ${privateKeyToAccount(signerKey).address.toLowerCase()}, '[]')`
    yield* sql`insert into escrow_orders (venue, order_id, owner, operator, quote_signer, available, locked,
        created_block, block_number, block_hash)
      values ('hyperliquid', ${orderId}, ${m}, ${m}, ${privateKeyToAccount(signerKey).address.toLowerCase()},
        4000000, 0, 1, 1, ${`0x${"00".repeat(32)}`})`
    return { base, sql, owner, token, signerKey, identity, credential, orderId }
  })

layer(Live, { timeout: "180 seconds", excludeTestServices: true })("maker client", (it) => {
  it.effect("keeps the lease and a quote set alive, and exits non-zero once the credential is revoked", () =>
    Effect.gen(function* () {
      const { base, sql, owner, token, signerKey, identity, credential, orderId } = yield* makerOrder("5a")
      const bot = runMaker(
        [
          "--api",
          base,
          "--identity",
          identity.id,
          "--order",
          orderId,
          "--venue",
          "hyperliquid",
          "--quote",
          `aster:${owner.address}:1000000:1000200:100000`,
          "--quote-size",
          "2000000",
          "--ttl",
          "6",
          "--renew",
          "1",
          "--validity",
          "120",
        ],
        { MAKER_CREDENTIAL: credential.token, MAKER_SIGNER_KEY: signerKey },
      )
      // Within a few seconds: the lease is live and a quote set is active.
      const active = sql<{
        n: string
      }>`select count(*)::text as n from quote_sets where order_id = ${orderId} and active`
      yield* pollUntil(active, (rows) => rows[0]!.n === "1", { within: "20 seconds" })
      yield* Effect.sleep("2500 millis")
      const [lease] = yield* sql<{ live: boolean }>`select lease_expires_at > now() + interval '3 seconds' as live
        from quote_identities where id = ${identity.id}`
      expect(lease!.live).toBe(true)
      expect(bot.child.exitCode).toBeNull()
      // Revocation: the bot notices at its next renewal and stops with a clear message.
      const revoked = yield* rawRequest(`${base}/v1/credentials/${credential.id}`, {
        method: "DELETE",
        headers: bearer(token),
      })
      expect(revoked.status).toBe(200)
      const code = yield* Effect.promise(() => bot.exited).pipe(Effect.timeout("15 seconds"))
      expect(code).toBe(2)
      expect(bot.output()).toContain("maker: lease refused (401")
      expect(bot.output()).not.toContain(credential.token)
      expect(bot.output()).not.toContain(signerKey.slice(2))
    }),
  )

  it.effect("replaces its quote set before takes stop using it: a live quote at every moment", () =>
    Effect.gen(function* () {
      const { base, sql, owner, signerKey, identity, credential, orderId } = yield* makerOrder("5b")
      const { aster } = yield* Chains
      // Validity twice the cutoff: a set is usable by takes for its first 8 s. The former rule (replace at half the
      // validity, i.e. exactly at the cutoff) replaced a set only once takes had stopped seeing it: a gap per set.
      const validity = 2 * LOCK_CUTOFF
      const bot = runMaker(
        [
          ...["--api", base, "--identity", identity.id, "--order", orderId, "--venue", "hyperliquid"],
          ...["--quote", `aster:${owner.address}:1000000:1000200:100000`, "--quote-size", "2000000"],
          ...["--ttl", "10", "--renew", "1", "--validity", String(validity)],
        ],
        { MAKER_CREDENTIAL: credential.token, MAKER_SIGNER_KEY: signerKey },
      )
      // What a take from aster would be offered now: the service's own candidate query, with its cutoff.
      const offered = loadQuoteCandidates({
        from: { id: "aster", chainId: 42161, token: aster.token },
        to: "hyperliquid",
        lockCutoffSeconds: LOCK_CUTOFF,
      }).pipe(Effect.map((rows) => rows.filter((r) => r.order_id === orderId)))
      yield* pollUntil(offered, (rows) => rows.length === 1, { within: "20 seconds" })
      // Three usable lives of a set, sampled every 200 ms: never a moment with nothing offered.
      const gaps: Array<number> = []
      const end = Date.now() + 3 * (validity - LOCK_CUTOFF) * 1000
      while (Date.now() < end) {
        if ((yield* offered).length === 0) gaps.push(Date.now())
        yield* Effect.sleep("200 millis")
      }
      bot.child.kill("SIGTERM")
      yield* Effect.promise(() => bot.exited)
      const [sets] = yield* sql<{ n: number }>`select count(*)::int as n from quote_sets where order_id = ${orderId}`
      expect(gaps, bot.output().slice(-3000)).toEqual([])
      // It did replace sets meanwhile (about every 4 s: when less than 8 + 4 s of 16 s is left).
      expect(sets!.n).toBeGreaterThanOrEqual(4)
      expect(bot.output()).toContain(`sets valid ${validity} s and replaced when less than 12 s is left`)
    }),
  )

  it.effect("bad usage exits 64 with a usage message and no request", () =>
    Effect.gen(function* () {
      const bot = runMaker(["--api", "http://127.0.0.1:9"], { MAKER_CREDENTIAL: "nope", MAKER_SIGNER_KEY: "0x1" })
      const code = yield* Effect.promise(() => bot.exited)
      expect(code).toBe(64)
      expect(bot.output()).toContain("MAKER_CREDENTIAL must be an mk_ credential")
    }),
  )
})
