import { spawn } from "node:child_process"
import { SqlClient } from "@effect/sql"
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { devnetStack } from "../support/DevnetStack.ts"
import { rawRequest } from "../support/Http.ts"
import { pollUntil } from "../support/Poll.ts"
import { issueCredential, registerIdentity } from "../support/QuoteIdentities.ts"
import { bearer, post, signIn } from "../support/SignIn.ts"
import { baseUrl } from "../support/TestServer.ts"

const Live = devnetStack()

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

layer(Live, { timeout: "180 seconds", excludeTestServices: true })("maker client", (it) => {
  it.effect("keeps the lease and a quote set alive, and exits non-zero once the credential is revoked", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const sql = yield* SqlClient.SqlClient
      const owner = privateKeyToAccount(generatePrivateKey())
      const token = yield* signIn(base, owner)
      yield* post(`${base}/v1/accounts`, { venue: "hyperliquid", address: owner.address }, bearer(token))
      const signerKey = generatePrivateKey()
      const identity = yield* registerIdentity(base, token, privateKeyToAccount(signerKey))
      const credential = yield* issueCredential(base, token, identity.id, ["quote"])
      // An order whose funding the escrow index already shows (the chain layer's tests cover indexing).
      const orderId = `0x${"5a".repeat(32)}`
      const m = owner.address.toLowerCase()
      yield* sql`insert into orders (id, master, venue, receive_venue, owner_address, state, amount, created_at,
          updated_at, client_order_id, quote_identity_id, quote_signer, to_sign)
        values (${orderId}, ${m}, 'hyperliquid', 'aster', ${m}, 'funded', 4000000, now(), now(), 'bot-1',
          ${identity.id}, ${privateKeyToAccount(signerKey).address.toLowerCase()}, '[]')`
      yield* sql`insert into escrow_orders (venue, order_id, owner, operator, quote_signer, available, locked,
          created_block, block_number, block_hash)
        values ('hyperliquid', ${orderId}, ${m}, ${m}, ${privateKeyToAccount(signerKey).address.toLowerCase()},
          4000000, 0, 1, 1, ${`0x${"00".repeat(32)}`})`
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

  it.effect("bad usage exits 64 with a usage message and no request", () =>
    Effect.gen(function* () {
      const bot = runMaker(["--api", "http://127.0.0.1:9"], { MAKER_CREDENTIAL: "nope", MAKER_SIGNER_KEY: "0x1" })
      const code = yield* Effect.promise(() => bot.exited)
      expect(code).toBe(64)
      expect(bot.output()).toContain("MAKER_CREDENTIAL must be an mk_ credential")
    }),
  )
})
