/**
 * Settlement v2 across crashes, every party real (test/support/SettleV2Stack.ts: the service and the maker client as
 * child processes, the taker through src/Client/TakerFlow.ts, two anvil chains with both escrows, a block every
 * 250 ms). A fill settles exactly once, nothing is lost, and no secret is in any table before it is on chain (every
 * table's text is scanned for every secret the maker's key derives, at every step):
 *
 * SIGKILL of the service and of the maker client together at each observed step (the lock mined, the lock final, the
 * payTake mined, the payment final, the maker's reveal final), both restarted each time. (The gap between committing a
 * call's key and submitting it is covered in process by settlement-v2.test.ts.)
 */
import { SqlClient } from "@effect/sql"
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import type { Hex } from "viem"
import { account } from "../support/ChainDevnet.ts"
import { expectJournalGapless } from "../support/JournalInvariant.ts"
import { pollUntil } from "../support/Poll.ts"
import { settleRequestsAtRest } from "../support/Rows.ts"
import { V2Harness, v2HarnessLive } from "../support/SettleV2Harness.ts"
import {
  authorizeWhenFinal,
  balanceOf,
  fillRows,
  fillsIn,
  killNow,
  makerSecrets,
  onChain,
  runMakerClient,
  secretsInDatabase,
  startV2Service,
  takeV2,
  v2Taker,
} from "../support/SettleV2Stack.ts"

const Live = v2HarnessLive(20_000_000n)

const t0 = Date.now()
const progress = (what: string) =>
  Effect.sync(() => process.stderr.write(`[settlement-v2-crash +${Date.now() - t0} ms] ${what}\n`))

/** On a failure, the last output of the service and the maker client (the failure alone rarely says why). */
const withOutputs = <A, E, R>(e: Effect.Effect<A, E, R>) =>
  Effect.tapErrorCause(e, () =>
    Effect.flatMap(V2Harness, ({ procs }) =>
      Effect.sync(() =>
        process.stderr.write(
          `--- service:\n${procs.service?.output().slice(-8000)}\n--- maker client:\n${procs.maker?.output().slice(-3000)}\n`,
        ),
      ),
    ),
  )

const makerReady = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const { maker } = yield* V2Harness
  yield* pollUntil(
    sql`select 1 from quote_sets where order_id = ${maker.orderId} and active and hashlock_root is not null`,
    (rows) => rows.length === 1,
    { every: "250 millis", within: "60 seconds" },
  )
  yield* pollUntil(
    sql`select 1 from escrow_v2_orders where order_id = ${maker.orderId} and available > 0`,
    (rows) => rows.length === 1,
    { every: "250 millis", within: "60 seconds" },
  )
})

/** What a settled take must show: one request per call, all final; one payout each side; escrows conserved. */
const settledOnce = (p: {
  readonly takeId: string
  readonly fillId: string
  readonly digest: Hex
  readonly amountIn: bigint
  readonly amountOut: bigint
  readonly before: {
    readonly payer: bigint
    readonly payee: bigint
    readonly escrowT: bigint
    readonly escrowM: bigint
  }
  readonly payer: `0x${string}`
}) =>
  Effect.gen(function* () {
    const { stack, maker } = yield* V2Harness
    const { hl, aster } = stack
    const sql = yield* SqlClient.SqlClient
    expect(yield* onChain(stack, p.digest)).toEqual({ lock: "Claimed", payment: "Claimed" })
    const rows = yield* settleRequestsAtRest(p.fillId, p.takeId)
    expect(rows.map((r) => [r.idempotency_key, r.status])).toEqual([
      [`settle:${p.fillId}:lock`, "final"],
      [`settle:take:${p.takeId}:payTake`, "final"],
      [`settle:${p.fillId}:claim`, "final"],
    ])
    expect(yield* balanceOf(aster, p.payer)).toBe(p.before.payer - p.amountIn)
    expect(yield* balanceOf(aster, maker.payee.address)).toBe(p.before.payee + p.amountIn)
    expect(yield* balanceOf(aster, aster.escrowV2!)).toBe(p.before.escrowT)
    expect(yield* balanceOf(hl, hl.escrowV2!)).toBe(p.before.escrowM - p.amountOut)
    const settled = yield* sql`select 1 from journal where kind = 'trade.settled' and payload->>'id' = ${p.fillId}`
    expect(settled.length).toBe(1)
  })

/**
 * Every table scanned for every secret; then the chain read: a secret found must already be public (the payment
 * claimed at latest, which only the maker's reveal does). Scan first, read after: a stored secret was on chain first.
 */
const noSecretBeforePublic = (step: string, secrets: ReadonlyArray<Hex>, used: Hex, digest: Hex) =>
  Effect.gen(function* () {
    const { stack } = yield* V2Harness
    const found = yield* secretsInDatabase(secrets)
    const revealed = (yield* onChain(stack, digest, "latest")).payment === "Claimed"
    expect(
      found.filter((s) => !(revealed && s === used)),
      step,
    ).toEqual([])
    return found
  })

const balances = (payer: `0x${string}`) =>
  Effect.gen(function* () {
    const { stack, maker } = yield* V2Harness
    return {
      payer: yield* balanceOf(stack.aster, payer),
      payee: yield* balanceOf(stack.aster, maker.payee.address),
      escrowT: yield* balanceOf(stack.aster, stack.aster.escrowV2!),
      escrowM: yield* balanceOf(stack.hl, stack.hl.escrowV2!),
    }
  })

layer(Live, { timeout: "600 seconds", excludeTestServices: true })("settlement v2 across crashes", (it) => {
  it.effect(
    "SIGKILL of the service and the maker client at each step: settles exactly once, no secret stored before public",
    () =>
      withOutputs(
        Effect.gen(function* () {
          const { stack, procs, maker, credential } = yield* V2Harness
          yield* makerReady
          const taker = yield* v2Taker(stack, account(3))
          const before = yield* balances(taker.account.address)
          const handle = yield* takeV2(stack, taker, 1_000_000n)
          const [row] = yield* fillRows(handle.takeId)
          const digest = row!.fill_digest
          const secrets = makerSecrets(stack, maker, BigInt(row!.sequence))
          const used = secrets[row!.hashlock_index]!

          /** SIGKILL both at `step` (once `reached` holds), scan the tables, restart both. */
          const crashAt = (step: string, reached: Effect.Effect<boolean, unknown, SqlClient.SqlClient>) =>
            Effect.gen(function* () {
              yield* pollUntil(reached, (ok) => ok, { every: "100 millis", within: "120 seconds" }).pipe(
                Effect.mapError((e) => new Error(`${step}: ${String(e)}\n${procs.service!.output().slice(-2000)}`)),
              )
              yield* Effect.all([killNow(procs.service!), killNow(procs.maker!)])
              const [f] = yield* fillRows(handle.takeId)
              yield* progress(`killed at ${step} (fill ${f!.state})`)
              yield* noSecretBeforePublic(step, secrets, used, digest)
              procs.service = yield* startV2Service(stack)
              procs.maker = runMakerClient(stack, maker, credential)
            })
          const chain = (tag: "finalized" | "latest", ok: (c: { lock: string; payment: string }) => boolean) =>
            onChain(stack, digest, tag).pipe(Effect.map(ok))

          yield* crashAt(
            "lock mined",
            chain("latest", (c) => c.lock !== "None"),
          )
          yield* crashAt(
            "lock final",
            chain("finalized", (c) => c.lock === "Locked"),
          )
          yield* authorizeWhenFinal(stack, taker, handle)
          yield* crashAt(
            "payTake mined",
            chain("latest", (c) => c.payment !== "None"),
          )
          // Final payment: killed as soon as it is final, before the (restarted) maker client can have revealed.
          yield* crashAt(
            "payment final",
            chain("finalized", (c) => c.payment === "Held"),
          )
          yield* crashAt(
            "the reveal final",
            chain("finalized", (c) => c.payment === "Claimed"),
          )
          const [fill] = yield* fillsIn(handle.takeId, ["settled"])
          yield* settledOnce({
            takeId: handle.takeId,
            fillId: fill!.id,
            digest,
            amountIn: 1_000_000n,
            amountOut: BigInt(fill!.amount_out),
            before,
            payer: taker.account.address,
          })
          expect(yield* secretsInDatabase(secrets)).toEqual([used])
          yield* expectJournalGapless
        }),
      ),
    420_000,
  )
})
