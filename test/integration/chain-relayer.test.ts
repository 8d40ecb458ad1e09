import { SqlClient } from "@effect/sql"
import { expect, layer } from "@effect/vitest"
import { Effect, Either, Fiber, Option } from "effect"
import { type Address, encodeFunctionData, type Hex, zeroHash } from "viem"
import { makeTxRelayer } from "../../actors/TxRelayer.ts"
import { mockUSDCAbi, settlementEscrowAbi } from "../../src/Chain/artifacts/index.ts"
import { AppConfig } from "../../src/Config.ts"
import { Relayer } from "../../src/Relayer.ts"
import { account, key, type TestChain } from "../support/ChainDevnet.ts"
import { chainStack, TestChainTag } from "../support/ChainStack.ts"
import { mintData, recipientFrom, relayerVenue, rpc } from "../support/RelayerFixtures.ts"

// The relayer signs with anvil account #9 (untouched by the deployment), so its nonces start at 0.
const OPERATOR = 9
const sameChainVenue = (c: TestChain) => {
  const { legacy_escrow: _legacy, ...entry } = relayerVenue(c, "aster")
  return entry
}
const Live = chainStack({
  anvil: { slotsInAnEpoch: 1 },
  config: (c) => ({
    venues: [
      relayerVenue(c, "hyperliquid"),
      // A second venue on the same chain with the same operator key: its relayer shares the nonces.
      {
        ...sameChainVenue(c),
        kind: "aster",
      },
    ],
    operator_key: key(OPERATOR),
  }),
})

const operator = account(OPERATOR).address
const recipient = recipientFrom(0xbeef0000)

const relayer = Effect.gen(function* () {
  const { deployment } = yield* AppConfig
  return yield* makeTxRelayer(deployment.venues[0])
})

/** Mines a block every `ms` in the background while `effect` runs (finality needs new blocks). */
const whileMining = <A, E, R>(c: TestChain, effect: Effect.Effect<A, E, R>, ms = 100) =>
  Effect.gen(function* () {
    const miner = yield* Effect.fork(
      Effect.promise(() => c.test.mine({ blocks: 1 })).pipe(
        Effect.zipRight(Effect.sleep(`${ms} millis`)),
        Effect.forever,
      ),
    )
    return yield* effect.pipe(Effect.ensuring(Fiber.interrupt(miner)))
  })

const balanceOf = (c: TestChain, who: Address) =>
  Effect.promise(() =>
    c.pub.readContract({ abi: mockUSDCAbi, address: c.token, functionName: "balanceOf", args: [who] }),
  )

const chainNonce = (c: TestChain) =>
  Effect.promise(() => c.pub.getTransactionCount({ address: operator, blockTag: "latest" }))

/** Runs with automine off, then restores automine and a low base fee whatever happened. */
const manualMining = <A, E, R>(c: TestChain, effect: Effect.Effect<A, E, R>) =>
  Effect.promise(() => c.test.setAutomine(false)).pipe(
    Effect.zipRight(effect),
    Effect.ensuring(
      Effect.promise(async () => {
        await c.test.request({ method: "anvil_setNextBlockBaseFeePerGas", params: ["0x3b9aca00"] } as never)
        await c.test.mine({ blocks: 1 })
        await c.test.setAutomine(true)
      }),
    ),
  )

layer(Live, { timeout: "180 seconds", excludeTestServices: true })("transaction relayer", (it) => {
  it.effect("many concurrent requests get gapless nonces and exactly one on-chain effect each", () =>
    Effect.gen(function* () {
      const c = yield* TestChainTag
      const r = yield* Relayer
      const sql = yield* SqlClient.SqlClient
      const { run } = yield* relayer
      const N = 60
      const start = yield* chainNonce(c)
      const headBefore = yield* Effect.promise(() => c.pub.getBlockNumber())
      const keys = Array.from({ length: N }, (_, i) => `mint-${i}`)
      yield* Effect.forEach(
        keys,
        (k, i) =>
          r.submit({
            idempotencyKey: k,
            venue: "hyperliquid",
            to: c.token,
            data: mintData(recipient(i), 1000n + BigInt(i)),
          }),
        { concurrency: "unbounded" },
      )
      const fiber = yield* Effect.fork(run)
      const outcomes = yield* whileMining(
        c,
        Effect.forEach(keys, (k) => r.awaitOutcome(k, { timeout: "60 seconds" }), { concurrency: "unbounded" }),
      )
      yield* Fiber.interrupt(fiber)
      expect(outcomes.every((o) => o.status === "final")).toBe(true)
      const nonces = outcomes.map((o) => Number(o.nonce)).sort((a, b) => a - b)
      expect(nonces).toEqual(Array.from({ length: N }, (_, i) => start + i))
      expect(yield* chainNonce(c)).toBe(start + N)
      for (let i = 0; i < N; i++) expect(yield* balanceOf(c, recipient(i))).toBe(1000n + BigInt(i))
      // A replacement is made only for a nonce that really waited: the lowest open one, unmined, for
      // bump_after_blocks (2) blocks. Its transaction is then mined at least 3 blocks after the nonce below it (or
      // after the head before the first send). anvil (automine) now and then holds a ready transaction while it
      // mines others (foundry-rs/foundry#10122): then a replacement is due, and this still holds. A replacement of
      // a nonce that had not waited (blocks mined while a pass read the chain counted as waited) fails here.
      const byNonce = [...outcomes].sort((a, b) => Number(a.nonce) - Number(b.nonce))
      for (const [i, o] of byNonce.entries()) {
        expect(o.blockNumber).not.toBeNull()
        expect(o.attempts).toContain(o.txHash)
        expect(new Set(o.attempts).size).toBe(o.attempts.length)
        if (o.attempts.length > 1) {
          const below = i === 0 ? headBefore : (byNonce[i - 1]!.blockNumber as bigint)
          expect(o.blockNumber! - below).toBeGreaterThanOrEqual(3n)
          for (const other of o.attempts.filter((h) => h !== o.txHash)) {
            const mined = yield* Effect.promise(() =>
              c.pub.getTransactionReceipt({ hash: other }).then(
                () => true,
                () => false,
              ),
            )
            expect(mined).toBe(false)
          }
        }
      }
      // The journal tells exactly that story: each request queued, sent, included and final once, and one
      // `tx.bumped` per replacement the outcomes name (none unless anvil held a nonce, as above).
      const replacements = outcomes.reduce((n, o) => n + o.attempts.length - 1, 0)
      const journal = yield* sql<{ kind: string; n: string }>`
        select kind, count(*)::text as n from journal where kind like 'tx.%' group by kind order by kind`
      expect(Object.fromEntries(journal.map((j) => [j.kind, Number(j.n)]))).toEqual({
        "tx.queued": N,
        "tx.pending": N,
        "tx.included": N,
        "tx.final": N,
        ...(replacements > 0 ? { "tx.bumped": replacements } : {}),
      })
    }),
  )

  it.effect("two venues on one chain: their relayers share the operator's nonces, every request lands once", () =>
    Effect.gen(function* () {
      const c = yield* TestChainTag
      const r = yield* Relayer
      const sql = yield* SqlClient.SqlClient
      const { deployment } = yield* AppConfig
      const relayers = yield* Effect.forEach(deployment.venues, (v) => makeTxRelayer(v))
      expect(deployment.venues.map((v) => [v.id, v.chain_id])).toEqual([
        ["hyperliquid", c.deployment.chainId],
        ["aster", c.deployment.chainId],
      ])
      const N = 12
      const start = yield* chainNonce(c)
      const requests = Array.from({ length: 2 * N }, (_, i) => ({
        key: `shared-${i}`,
        venue: i % 2 === 0 ? "hyperliquid" : "aster",
        to: recipient(1000 + i),
      }))
      yield* Effect.forEach(
        requests,
        (q, i) =>
          r.submit({ idempotencyKey: q.key, venue: q.venue, to: c.token, data: mintData(q.to, 7n + BigInt(i)) }),
        { concurrency: "unbounded" },
      )
      const fibers = yield* Effect.forEach(relayers, (x) => Effect.fork(x.run))
      const outcomes = yield* whileMining(
        c,
        Effect.forEach(requests, (q) => r.awaitOutcome(q.key, { timeout: "60 seconds" }), { concurrency: "unbounded" }),
      )
      yield* Effect.forEach(fibers, Fiber.interrupt)
      expect(outcomes.map((o) => o.status)).toEqual(requests.map(() => "final"))
      const nonces = outcomes.map((o) => Number(o.nonce)).sort((a, b) => a - b)
      expect(nonces).toEqual(Array.from({ length: 2 * N }, (_, i) => start + i))
      for (const [i, q] of requests.entries()) expect(yield* balanceOf(c, q.to)).toBe(7n + BigInt(i))
      const counters = yield* sql<{ venue: string; n: string }>`
        select venue, next_nonce::text as n from relayer_nonces where signer = ${operator.toLowerCase()} order by venue`
      expect(counters).toEqual([
        { venue: "aster", n: String(start + 2 * N) },
        { venue: "hyperliquid", n: String(start + 2 * N) },
      ])
    }),
  )

  it.effect("the same idempotency key is one transaction; a different call under it is a conflict", () =>
    Effect.gen(function* () {
      const c = yield* TestChainTag
      const r = yield* Relayer
      const { handle } = yield* relayer
      const request = {
        idempotencyKey: "same-key",
        venue: "hyperliquid",
        to: c.token,
        data: mintData(recipient(900), 7n),
      }
      const first = yield* Effect.forEach([1, 2, 3, 4, 5], () => r.submit(request), { concurrency: "unbounded" })
      expect(new Set(first.map((o) => o.status))).toEqual(new Set(["queued"]))
      const before = yield* chainNonce(c)
      const outcome = yield* whileMining(
        c,
        Effect.zipRight(
          Effect.forkScoped(Effect.forever(Effect.zipRight(handle.tick, Effect.sleep("50 millis")))),
          r.awaitOutcome("same-key", { timeout: "30 seconds" }),
        ),
      ).pipe(Effect.scoped)
      expect(outcome.status).toBe("final")
      expect((yield* r.submit(request)).txHash).toBe(outcome.txHash)
      expect(yield* chainNonce(c)).toBe(before + 1)
      expect(yield* balanceOf(c, recipient(900))).toBe(7n)
      const conflict = yield* Effect.either(r.submit({ ...request, data: mintData(recipient(900), 8n) }))
      expect(Either.isLeft(conflict) && conflict.left._tag).toBe("IdempotencyConflict")
      const rejected = yield* Effect.either(
        r.submit({
          idempotencyKey: "not-allowed",
          venue: "hyperliquid",
          to: c.token,
          data: encodeFunctionData({ abi: mockUSDCAbi, functionName: "approve", args: [operator, 1n] }),
        }),
      )
      expect(Either.isLeft(rejected) && rejected.left._tag).toBe("RelayerRejected")
      expect(Option.isNone(yield* r.status("not-allowed"))).toBe(true)
    }),
  )

  it.effect("a call that reverts in simulation fails with its decoded reason, no nonce, no gas", () =>
    Effect.gen(function* () {
      const c = yield* TestChainTag
      const r = yield* Relayer
      const { handle } = yield* relayer
      const before = yield* chainNonce(c)
      const gasBefore = yield* Effect.promise(() => c.pub.getBalance({ address: operator }))
      yield* r.submit({
        idempotencyKey: "claim-nothing",
        venue: "hyperliquid",
        to: c.escrow,
        data: encodeFunctionData({ abi: settlementEscrowAbi, functionName: "claim", args: [zeroHash, zeroHash] }),
      })
      yield* handle.tick
      const outcome = yield* r.awaitOutcome("claim-nothing", { timeout: "5 seconds" })
      expect(outcome.status).toBe("reverted")
      expect(outcome.simulated).toBe(true)
      expect(outcome.revertReason).toBe(`NotLocked(${zeroHash})`)
      expect(outcome.nonce).toBeNull()
      expect(outcome.attempts).toEqual([])
      expect(yield* chainNonce(c)).toBe(before)
      expect(yield* Effect.promise(() => c.pub.getBalance({ address: operator }))).toBe(gasBefore)
    }),
  )

  it.effect("a call that passes simulation but reverts on chain ends reverted (at finality) with its reason", () =>
    Effect.gen(function* () {
      const c = yield* TestChainTag
      const r = yield* Relayer
      const { handle } = yield* relayer
      // Both simulate before either is sent; the second then reverts in its own block.
      const data = encodeFunctionData({ abi: settlementEscrowAbi, functionName: "invalidateNonce", args: [77n] })
      yield* r.submit({ idempotencyKey: "burn-77-a", venue: "hyperliquid", to: c.escrow, data })
      yield* r.submit({ idempotencyKey: "burn-77-b", venue: "hyperliquid", to: c.escrow, data })
      const [a, b] = yield* whileMining(
        c,
        Effect.zipRight(
          Effect.forkScoped(Effect.forever(Effect.zipRight(handle.tick, Effect.sleep("50 millis")))),
          Effect.all([
            r.awaitOutcome("burn-77-a", { timeout: "30 seconds" }),
            r.awaitOutcome("burn-77-b", { timeout: "30 seconds" }),
          ]),
        ),
      ).pipe(Effect.scoped)
      expect(a.status).toBe("final")
      expect(b.status).toBe("reverted")
      expect(b.simulated).toBe(false)
      expect(b.nonce).toBe(a.nonce! + 1n)
      expect(b.revertReason).toBe(`NonceAlreadyUsed(${operator}, 77)`)
    }),
  )

  it.effect("a stuck transaction (base-fee spike) is replaced with bumped fees and the replacement is recognised", () =>
    Effect.flatMap(TestChainTag, (c) =>
      manualMining(
        c,
        Effect.gen(function* () {
          const r = yield* Relayer
          const sql = yield* SqlClient.SqlClient
          const { handle } = yield* relayer
          yield* r.submit({
            idempotencyKey: "stuck",
            venue: "hyperliquid",
            to: c.token,
            data: mintData(recipient(901), 9n),
          })
          yield* handle.tick
          const first = (yield* r.status("stuck")).pipe(Option.getOrThrow)
          expect(first.status).toBe("pending")
          // The next block's base fee jumps far above the attempt's max fee: it cannot be included.
          yield* rpc(c, "anvil_setNextBlockBaseFeePerGas", [`0x${(500n * 10n ** 9n).toString(16)}`])
          yield* Effect.promise(() => c.test.mine({ blocks: 1 }))
          yield* handle.tick
          expect((yield* r.status("stuck")).pipe(Option.getOrThrow).attempts.length).toBe(1)
          yield* Effect.promise(() => c.test.mine({ blocks: 2 }))
          yield* handle.tick
          const bumped = (yield* r.status("stuck")).pipe(Option.getOrThrow)
          expect(bumped.attempts.length).toBe(2)
          const fees = yield* sql<{ attempt: number; fee: string; tip: string }>`
        select a.attempt, a.max_fee_per_gas::text as fee, a.max_priority_fee_per_gas::text as tip
        from relayer_attempts a join relayer_requests q on q.id = a.request_id
        where q.idempotency_key = 'stuck' order by a.attempt`
          expect(BigInt(fees[1]!.fee) * 1000n).toBeGreaterThanOrEqual(BigInt(fees[0]!.fee) * 1125n)
          expect(BigInt(fees[1]!.tip) * 1000n).toBeGreaterThanOrEqual(BigInt(fees[0]!.tip) * 1125n)
          yield* Effect.promise(() => c.test.mine({ blocks: 1 }))
          yield* handle.tick
          const included = (yield* r.status("stuck")).pipe(Option.getOrThrow)
          expect(included.status).toBe("included")
          expect(included.txHash).toBe(bumped.attempts[1])
          expect(included.attempts).toEqual(bumped.attempts)
          yield* Effect.promise(() => c.test.mine({ blocks: 3 }))
          yield* handle.tick
          expect((yield* r.status("stuck")).pipe(Option.getOrThrow).status).toBe("final")
          expect(yield* balanceOf(c, recipient(901))).toBe(9n)
        }),
      ),
    ),
  )

  it.effect("a nonce queued behind a stuck one is replaced only after its own wait as the lowest open nonce", () =>
    Effect.flatMap(TestChainTag, (c) =>
      manualMining(
        c,
        Effect.gen(function* () {
          const r = yield* Relayer
          const { handle } = yield* relayer
          const attemptsOf = (k: string) => r.status(k).pipe(Effect.map((s) => Option.getOrThrow(s).attempts))
          for (const [k, i] of [
            ["line-a", 905],
            ["line-b", 906],
          ] as const) {
            yield* r.submit({ idempotencyKey: k, venue: "hyperliquid", to: c.token, data: mintData(recipient(i), 5n) })
          }
          yield* handle.tick
          // Neither can be included for three blocks; only the lower nonce (line-a) is replaced.
          yield* rpc(c, "anvil_setNextBlockBaseFeePerGas", [`0x${(500n * 10n ** 9n).toString(16)}`])
          yield* Effect.promise(() => c.test.mine({ blocks: 1 }))
          yield* handle.tick
          yield* Effect.promise(() => c.test.mine({ blocks: 2 }))
          yield* handle.tick
          expect((yield* attemptsOf("line-a")).length).toBe(2)
          expect((yield* attemptsOf("line-b")).length).toBe(1)
          // line-a's replacement is mined; line-b, still under the base fee, is now the lowest open nonce.
          // The four blocks since it was signed were spent waiting on line-a: it is not replaced yet.
          yield* Effect.promise(() => c.test.mine({ blocks: 1 }))
          yield* handle.tick
          expect((yield* r.status("line-a")).pipe(Option.getOrThrow).status).toBe("included")
          expect((yield* attemptsOf("line-b")).length).toBe(1)
          yield* Effect.promise(() => c.test.mine({ blocks: 1 }))
          yield* handle.tick
          expect((yield* attemptsOf("line-b")).length).toBe(1)
          // Two blocks as the lowest open nonce: now it is.
          yield* Effect.promise(() => c.test.mine({ blocks: 1 }))
          yield* handle.tick
          const b = yield* attemptsOf("line-b")
          expect(b.length).toBe(2)
          yield* Effect.promise(() => c.test.mine({ blocks: 4 }))
          yield* handle.tick
          yield* handle.tick
          const outcome = (yield* r.status("line-b")).pipe(Option.getOrThrow)
          expect(outcome.status).toBe("final")
          expect(outcome.txHash).toBe(b[1])
          expect(yield* balanceOf(c, recipient(906))).toBe(5n)
        }),
      ),
    ),
  )

  it.effect("a dropped transaction is rebroadcast from its stored bytes", () =>
    Effect.flatMap(TestChainTag, (c) =>
      manualMining(
        c,
        Effect.gen(function* () {
          const r = yield* Relayer
          const { handle } = yield* relayer
          yield* r.submit({
            idempotencyKey: "dropped",
            venue: "hyperliquid",
            to: c.token,
            data: mintData(recipient(902), 11n),
          })
          yield* handle.tick
          const sent = (yield* r.status("dropped")).pipe(Option.getOrThrow)
          const hash = sent.txHash as Hex
          yield* rpc(c, "anvil_dropTransaction", [hash])
          const gone = yield* Effect.tryPromise(() => c.pub.getTransaction({ hash })).pipe(Effect.either)
          expect(Either.isLeft(gone)).toBe(true)
          yield* handle.tick
          const back = yield* Effect.promise(() => c.pub.getTransaction({ hash }))
          expect(back.hash).toBe(hash)
          yield* Effect.promise(() => c.test.mine({ blocks: 4 }))
          yield* handle.tick
          yield* handle.tick
          const outcome = (yield* r.status("dropped")).pipe(Option.getOrThrow)
          expect(outcome.status).toBe("final")
          expect(outcome.attempts).toEqual([hash])
          expect(yield* balanceOf(c, recipient(902))).toBe(11n)
        }),
      ),
    ),
  )

  it.effect("an included transaction re-organised away goes back to pending and still ends final once", () =>
    Effect.gen(function* () {
      const c = yield* TestChainTag
      const r = yield* Relayer
      const { handle } = yield* relayer
      yield* r.submit({
        idempotencyKey: "reorged",
        venue: "hyperliquid",
        to: c.token,
        data: mintData(recipient(903), 13n),
      })
      yield* handle.tick // signed and sent; automine includes it
      yield* handle.tick
      const included = (yield* r.status("reorged")).pipe(Option.getOrThrow)
      expect(included.status).toBe("included")
      // The block (not final: finalized = head - 2) is replaced; anvil drops its transactions.
      yield* rpc(c, "anvil_reorg", [1, []])
      yield* handle.tick
      expect((yield* r.status("reorged")).pipe(Option.getOrThrow).status).toBe("pending")
      const outcome = yield* whileMining(
        c,
        Effect.zipRight(
          Effect.forkScoped(Effect.forever(Effect.zipRight(handle.tick, Effect.sleep("50 millis")))),
          r.awaitOutcome("reorged", { timeout: "30 seconds" }),
        ),
      ).pipe(Effect.scoped)
      expect(outcome.status).toBe("final")
      expect(yield* balanceOf(c, recipient(903))).toBe(13n)
    }),
  )

  it.effect("a nonce taken by a foreign transaction ends the request as replaced (dropped and replaced)", () =>
    Effect.flatMap(TestChainTag, (c) =>
      manualMining(
        c,
        Effect.gen(function* () {
          const r = yield* Relayer
          const { handle } = yield* relayer
          yield* r.submit({
            idempotencyKey: "foreign",
            venue: "hyperliquid",
            to: c.token,
            data: mintData(recipient(904), 17n),
          })
          yield* handle.tick
          const ours = (yield* r.status("foreign")).pipe(Option.getOrThrow)
          yield* rpc(c, "anvil_dropTransaction", [ours.txHash])
          // Someone else with the operator key uses the same nonce (a self-transfer).
          const raw = yield* Effect.promise(() =>
            account(OPERATOR).signTransaction({
              chainId: c.chain.id,
              type: "eip1559",
              to: operator,
              value: 0n,
              nonce: Number(ours.nonce),
              gas: 21_000n,
              maxFeePerGas: 100n * 10n ** 9n,
              maxPriorityFeePerGas: 2n * 10n ** 9n,
            }),
          )
          yield* rpc(c, "eth_sendRawTransaction", [raw])
          yield* Effect.promise(() => c.test.mine({ blocks: 4 }))
          yield* handle.tick
          const outcome = (yield* r.status("foreign")).pipe(Option.getOrThrow)
          expect(outcome.status).toBe("replaced")
          expect(yield* balanceOf(c, recipient(904))).toBe(0n)
        }),
      ),
    ),
  )
})
