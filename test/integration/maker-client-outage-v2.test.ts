import { createServer, request } from "node:http"
import type { AddressInfo } from "node:net"
import { SqlClient } from "@effect/sql"
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { getAddress, keccak256, toHex } from "viem"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { escrowV2ReadAbi } from "../../src/Client/EscrowReadsV2.ts"
import { orderKey } from "../../src/Domain/EscrowTypedDataV2.ts"
import { account } from "../support/ChainDevnet.ts"
import { Chains } from "../support/DevnetStack.ts"
import { fundOrderOnChain, holdPaymentForMaker, MakerV2Live, runMaker } from "../support/MakerClientV2.ts"
import { pollUntil } from "../support/Poll.ts"
import { issueCredential, registerIdentity } from "../support/QuoteIdentities.ts"
import { signIn } from "../support/SignIn.ts"
import { baseUrl } from "../support/TestServer.ts"

const Live = MakerV2Live

const ZERO_HASH = `0x${"00".repeat(32)}`

/** A relay to the service that can be cut: while down, every connection is reset (the client sees a network fault). */
const relay = (target: string) =>
  Effect.acquireRelease(
    Effect.promise(async () => {
      const to = new URL(target)
      let down = false
      const server = createServer((req, res) => {
        if (down) return req.socket.destroy()
        const upstream = request(
          { host: to.hostname, port: to.port, path: req.url, method: req.method, headers: req.headers },
          (answer) => {
            res.writeHead(answer.statusCode ?? 502, answer.headers)
            answer.pipe(res)
          },
        )
        upstream.on("error", () => req.socket.destroy())
        req.pipe(upstream)
      })
      await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
      return {
        url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
        setDown: (d: boolean) => {
          down = d
          if (d) server.closeAllConnections()
        },
        server,
      }
    }),
    (r) => Effect.promise(() => new Promise<void>((resolve) => r.server.close(() => resolve()))),
  )

layer(Live, { timeout: "180 seconds", excludeTestServices: true })("maker client, service outage", (it) => {
  it.effect("stays up through an outage, reveals a payment held meanwhile, and publishes again when it is back", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const proxy = yield* relay(base)
      const { hl, aster } = yield* Chains
      const sql = yield* SqlClient.SqlClient
      const operator = account(9)
      const payer = account(7)
      const owner = privateKeyToAccount(generatePrivateKey())
      const m = owner.address.toLowerCase()
      const token = yield* signIn(base, owner)
      const signerKey = generatePrivateKey()
      const quoteSigner = privateKeyToAccount(signerKey)
      const identity = yield* registerIdentity(base, token, quoteSigner)
      const credential = yield* issueCredential(base, token, identity.id, ["quote"])
      const payeeKey = generatePrivateKey()
      const payee = privateKeyToAccount(payeeKey).address
      const orderId = keccak256(toHex(`maker outage ${m}`))
      const M = getAddress(hl.escrowV2!)
      const T = getAddress(aster.escrowV2!)
      // The order on chain: funded by its owner on the maker chain's v2 escrow, naming the maker's quote signer.
      yield* Effect.promise(() => hl.test.setBalance({ address: owner.address, value: 10n ** 18n }))
      yield* fundOrderOnChain(hl, { operator, owner, quoteSigner: quoteSigner.address }, orderId, 4_000_000n)
      // The same order as the service knows it (fixture rows), so the bot's sets are admitted.
      yield* sql`insert into orders (id, master, venue, receive_venue, owner_address, state, amount, created_at,
          updated_at, client_order_id, quote_identity_id, quote_signer, to_sign, escrow_version)
        values (${orderId}, ${m}, 'hyperliquid', 'aster', ${m}, 'funded', 4000000, now(), now(), 'bot-outage',
          ${identity.id}, ${quoteSigner.address.toLowerCase()}, '[]', 2)`
      yield* sql`insert into escrow_v2_orders (venue, owner, order_id, order_key, operator, quote_signer, available,
          locked, created_block, block_number, block_hash)
        values ('hyperliquid', ${m}, ${orderId}, ${orderKey(owner.address, orderId)},
          ${hl.deployment.operator.toLowerCase()}, ${quoteSigner.address.toLowerCase()}, 4000000, 0, 1, 1,
          ${ZERO_HASH})`
      const bot = runMaker(
        [
          "--api",
          proxy.url,
          "--identity",
          identity.id,
          "--order",
          orderId,
          "--venue",
          "hyperliquid",
          "--quote",
          `aster:${payee}:1000000:1000200:100000`,
          "--quote-size",
          "2000000",
          "--ttl",
          "6",
          "--renew",
          "1",
          "--validity",
          "120",
          "--owner",
          owner.address,
          "--escrow-v2",
          `hyperliquid=${M}`,
          "--escrow-v2",
          `aster=${T}`,
          "--rpc",
          `hyperliquid=${hl.anvil.rpcUrl}`,
          "--rpc",
          `aster=${aster.anvil.rpcUrl}`,
          "--hashlocks",
          "4",
          "--from-block",
          "aster=1",
        ],
        { MAKER_CREDENTIAL: credential.token, MAKER_SIGNER_KEY: signerKey, MAKER_PAYEE_KEY: payeeKey },
      )
      const active = sql<{ sequence: string; generation: string }>`select q.sequence::text,
          q.identity_generation::text as generation from quote_sets q where q.order_id = ${orderId} and q.active`
      const [first] = yield* pollUntil(active, (rows) => rows.length === 1, { within: "30 seconds" })
      // The service goes away; the lease (6 s) lapses while the maker cannot reach it.
      proxy.setDown(true)
      const output = Effect.sync(() => bot.output())
      yield* pollUntil(output, (o) => o.includes("service unreachable"), { within: "20 seconds" })
      const lapsed = sql<{ lapsed: boolean }>`select lease_expires_at < now() as lapsed from quote_identities
        where id = ${identity.id}`
      yield* pollUntil(lapsed, (rows) => rows[0]?.lapsed === true, { within: "30 seconds" })
      // A payment held for the maker meanwhile: a lock under a set of its key (hashlock 2), then payTake.
      const { digest, hashlocks } = yield* holdPaymentForMaker(
        { hl, aster },
        { operator, payer, owner: owner.address, signerKey, payee },
        orderId,
        `outage fill ${m}`,
      )
      yield* Effect.promise(() => Promise.all([hl.test.mine({ blocks: 70 }), aster.test.mine({ blocks: 70 })]))
      yield* Effect.promise(() => aster.test.setBalance({ address: payee, value: 10n ** 18n }))
      const payment = Effect.promise(() =>
        aster.pub.readContract({ address: T, abi: escrowV2ReadAbi, functionName: "getPayment", args: [digest] }),
      )
      // Revealed by the maker's own claimPayment while the service is still unreachable; the process is up.
      yield* pollUntil(payment, (p) => p.state === 2, { within: "60 seconds" })
      // Its line follows the receipt (the payment may read claimed first).
      const line = `reveal loop: reveal: claimPayment ${digest} (hashlock index 2)`
      yield* pollUntil(output, (o) => o.includes(line), { within: "20 seconds" })
      expect(bot.child.exitCode).toBe(null)
      // One line for the whole outage, not one per retry.
      expect(bot.output().split("service unreachable").length - 1).toBe(1)
      // The service answers again: a new lease generation, and a new set published under it.
      proxy.setDown(false)
      const [again] = yield* pollUntil(
        active,
        (rows) => rows.length === 1 && rows[0]!.generation !== first!.generation,
        { within: "30 seconds" },
      )
      expect(BigInt(again!.sequence) > BigInt(first!.sequence)).toBe(true)
      expect(bot.output()).toContain("service reachable again")
      bot.child.kill("SIGTERM")
      expect(yield* Effect.promise(() => bot.exited)).toBe(0)
      for (const secret of [...hashlocks.secrets, signerKey, payeeKey, credential.token]) {
        expect(bot.output()).not.toContain(secret.replace(/^0x/, ""))
      }
    }).pipe(Effect.scoped),
  )
})
