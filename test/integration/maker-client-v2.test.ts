import { SqlClient } from "@effect/sql"
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { getAddress, type Hex, keccak256, toHex } from "viem"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { escrowV2ReadAbi } from "../../src/Client/EscrowReadsV2.ts"
import { orderKey } from "../../src/Domain/EscrowTypedDataV2.ts"
import { deriveHashlockSet, secretKeyOf } from "../../src/Domain/Hashlocks.ts"
import { account } from "../support/ChainDevnet.ts"
import { Chains } from "../support/DevnetStack.ts"
import { fundOrderOnChain, holdPaymentForMaker, MakerV2Live, runMaker } from "../support/MakerClientV2.ts"
import { pollUntil } from "../support/Poll.ts"
import { issueCredential, registerIdentity } from "../support/QuoteIdentities.ts"
import { signIn } from "../support/SignIn.ts"
import { baseUrl } from "../support/TestServer.ts"

const Live = MakerV2Live

const ZERO_HASH = `0x${"00".repeat(32)}`

layer(Live, { timeout: "180 seconds", excludeTestServices: true })("maker client, v2 order", (it) => {
  it.effect("publishes v2 sets with the hashlocks its key derives, never a secret", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const { hl, aster } = yield* Chains
      const sql = yield* SqlClient.SqlClient
      const owner = privateKeyToAccount(generatePrivateKey())
      const m = owner.address.toLowerCase()
      const token = yield* signIn(base, owner)
      const signerKey = generatePrivateKey()
      const signer = privateKeyToAccount(signerKey).address.toLowerCase()
      const identity = yield* registerIdentity(base, token, privateKeyToAccount(signerKey))
      const credential = yield* issueCredential(base, token, identity.id, ["quote"])
      const orderId = keccak256(toHex(`maker v2 ${m}`))
      yield* sql`insert into orders (id, master, venue, receive_venue, owner_address, state, amount, created_at,
          updated_at, client_order_id, quote_identity_id, quote_signer, to_sign, escrow_version)
        values (${orderId}, ${m}, 'hyperliquid', 'aster', ${m}, 'funded', 4000000, now(), now(), 'bot-v2',
          ${identity.id}, ${signer}, '[]', 2)`
      yield* sql`insert into escrow_v2_orders (venue, owner, order_id, order_key, operator, quote_signer, available,
          locked, created_block, block_number, block_hash)
        values ('hyperliquid', ${m}, ${orderId}, ${orderKey(owner.address, orderId)},
          ${hl.deployment.operator.toLowerCase()}, ${signer}, 4000000, 0, 1, 1, ${ZERO_HASH})`
      const payeeKey = generatePrivateKey()
      const args = [
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
        "--owner",
        owner.address,
        "--escrow-v2",
        `hyperliquid=${hl.escrowV2!}`,
        "--escrow-v2",
        `aster=${aster.escrowV2!}`,
        "--rpc",
        `hyperliquid=${hl.anvil.rpcUrl}`,
        "--rpc",
        `aster=${aster.anvil.rpcUrl}`,
        "--hashlocks",
        "16",
        "--from-block",
        "aster=1",
      ]
      const env = { MAKER_CREDENTIAL: credential.token, MAKER_SIGNER_KEY: signerKey, MAKER_PAYEE_KEY: payeeKey }
      const bot = runMaker(args, env)
      const active = sql<{
        sequence: string
        hashlock_root: string | null
        hashlock_count: number | null
        hashlocks: Array<string> | null
        quotes: Array<{ escrow?: string }>
      }>`select sequence::text, hashlock_root, hashlock_count, hashlocks, quotes from quote_sets
        where order_id = ${orderId} and active`
      const [set] = yield* pollUntil(active, (rows) => rows.length === 1, { within: "20 seconds" })
      bot.child.kill("SIGTERM")
      yield* Effect.promise(() => bot.exited)
      // The hashlocks are exactly those the maker's key derives for this set: a restarted bot finds the secrets.
      const derived = deriveHashlockSet(
        secretKeyOf(signerKey),
        {
          chainId: 999n,
          makerEscrow: getAddress(hl.escrowV2!),
          owner: owner.address,
          orderId: orderId as Hex,
          sequence: BigInt(set!.sequence),
        },
        16,
      )
      expect(set).toMatchObject({
        hashlock_root: derived.root,
        hashlock_count: 16,
        hashlocks: derived.hashlocks.map((h) => h.toLowerCase()),
        quotes: [{ escrow: aster.escrowV2!.toLowerCase() }],
      })
      // No secret in the database or the bot's output; no key in its output.
      const [dump] = yield* sql<{ text: string }>`select coalesce(string_agg(q::text, ' '), '') as text
        from quote_sets q where order_id = ${orderId}`
      for (const secret of derived.secrets) {
        expect(dump!.text).not.toContain(secret.slice(2))
        expect(bot.output()).not.toContain(secret.slice(2))
      }
      expect(bot.output()).toContain("published quote set")
      // Its reveal loop read its own endpoints without failing (no payment to it: nothing else to say).
      expect(bot.output()).not.toContain("reveal loop: pass failed")
      for (const secretText of [signerKey.slice(2), payeeKey.slice(2), credential.token]) {
        expect(bot.output()).not.toContain(secretText)
      }
    }),
  )

  it.effect("--reveal-only: with no credential and no state, the bot reveals a held payment matched by its lock", () =>
    Effect.gen(function* () {
      const base = yield* baseUrl
      const { hl, aster } = yield* Chains
      const operator = account(9)
      const owner = account(8)
      const payer = account(7)
      const signerKey = generatePrivateKey()
      const quoteSigner = privateKeyToAccount(signerKey)
      const payeeKey = generatePrivateKey()
      const payee = privateKeyToAccount(payeeKey).address
      const M = getAddress(hl.escrowV2!)
      const T = getAddress(aster.escrowV2!)
      // The owner funds its order on the maker chain's v2 escrow, naming the operator and the maker's quote signer.
      const orderId = keccak256(toHex("reveal-only order"))
      yield* fundOrderOnChain(hl, { operator, owner, quoteSigner: quoteSigner.address }, orderId, 1_000_000n)
      // The maker's set (as the bot would publish it) and an honest Fill under its hashlock 2.
      const { digest, hashlocks } = yield* holdPaymentForMaker(
        { hl, aster },
        { operator, payer, owner: owner.address, signerKey, payee },
        orderId,
        "reveal-only fill",
      )
      // Both final (these chains' finalized tag lags latest by 64 blocks); the payee has gas for its reveal.
      yield* Effect.promise(() => Promise.all([hl.test.mine({ blocks: 70 }), aster.test.mine({ blocks: 70 })]))
      yield* Effect.promise(() => aster.test.setBalance({ address: payee, value: 10n ** 18n }))
      const bot = runMaker(
        [
          "--api",
          base,
          "--order",
          orderId,
          "--venue",
          "hyperliquid",
          "--quote",
          `aster:${payee}:1:1:1`,
          "--renew",
          "1",
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
          "--reveal-only",
        ],
        { MAKER_CREDENTIAL: "", MAKER_SIGNER_KEY: signerKey, MAKER_PAYEE_KEY: payeeKey },
      )
      const payment = Effect.promise(() =>
        aster.pub.readContract({ address: T, abi: escrowV2ReadAbi, functionName: "getPayment", args: [digest] }),
      )
      yield* pollUntil(payment, (p) => p.state === 2, { within: "30 seconds" })
      bot.child.kill("SIGTERM")
      yield* Effect.promise(() => bot.exited)
      // Paid to the payee; the line names the digest and index, never the secret.
      expect(bot.output()).toContain(`reveal loop: reveal: claimPayment ${digest} (hashlock index 2)`)
      for (const secret of hashlocks.secrets) expect(bot.output()).not.toContain(secret.slice(2))
      expect(bot.output()).not.toContain(payeeKey.slice(2))
    }),
  )

  it.effect("v2 flags without what a v2 order needs exit 64 with a usage message", () =>
    Effect.gen(function* () {
      const common = [
        "--api",
        "http://127.0.0.1:9",
        "--identity",
        "x",
        "--order",
        `0x${"11".repeat(32)}`,
        "--venue",
        "hyperliquid",
        "--quote",
        `aster:0x${"22".repeat(20)}:1:1:1`,
        "--quote-size",
        "1",
      ]
      const env = { MAKER_CREDENTIAL: "mk_x", MAKER_SIGNER_KEY: `0x${"33".repeat(32)}` }
      const escrow = `0x${"44".repeat(20)}`
      for (const [extra, message] of [
        [["--escrow-v2", `hyperliquid=${escrow}`], "a v2 order needs --escrow-v2 aster="],
        [
          ["--escrow-v2", `hyperliquid=${escrow}`, "--escrow-v2", `aster=${escrow}`],
          "a v2 order needs --rpc hyperliquid=URL",
        ],
        [
          [
            "--escrow-v2",
            `hyperliquid=${escrow}`,
            "--escrow-v2",
            `aster=${escrow}`,
            "--rpc",
            "hyperliquid=http://127.0.0.1:1",
            "--rpc",
            "aster=http://127.0.0.1:2",
          ],
          "a v2 order needs --owner",
        ],
        [["--escrow-v2", `aster=${escrow}`], "--escrow-v2 must name the order's venue hyperliquid"],
        [["--escrow-v2", "hyperliquid=0x12"], "bad --escrow-v2 hyperliquid=0x12"],
        [["--reveal-only"], "--reveal-only is for a v2 order"],
        [
          [
            "--escrow-v2",
            `hyperliquid=${escrow}`,
            "--escrow-v2",
            `aster=${escrow}`,
            "--rpc",
            "hyperliquid=http://127.0.0.1:1",
            "--rpc",
            "aster=http://127.0.0.1:2",
            "--from-block",
            "aster=-1",
          ],
          "bad --from-block aster=-1",
        ],
      ] as const) {
        const bot = runMaker([...common, ...extra], env)
        const code = yield* Effect.promise(() => bot.exited)
        expect([code, bot.output()]).toEqual([64, expect.stringContaining(message)])
      }
    }),
  )
})
