import { SqlClient } from "@effect/sql"
import { Effect, Schedule } from "effect"
import { encodeFunctionData, type Hex } from "viem"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { mockUSDCAbi } from "../../src/Chain/artifacts/index.ts"
import { authorizePayment, httpTakerApi, type TakerApi, TakerApiError } from "../../src/Client/TakerFlow.ts"
import { DEVNET_TIMING_V2 } from "../../src/Domain/SettlementTimingV2.ts"
import { account, sendCalls } from "../support/ChainDevnet.ts"
import { rawRequest } from "../support/Http.ts"
import { pollUntil } from "../support/Poll.ts"
import {
  fillRows,
  killNow,
  runMakerClient,
  takeV2,
  type V2Stack,
  type V2Taker,
  v2Maker,
  v2Taker,
} from "../support/SettleV2Stack.ts"
import { bearer } from "../support/SignIn.ts"
import type { Watcher } from "./SettleV2Watch.ts"

/**
 * The service path of the settle bench: a maker order (its own client process) with a hashlock per fill, and takers
 * signed in and holding tokens beforehand, so the timed part is the takes themselves: the scripted taker through
 * src/Client/TakerFlow.ts (create, check, sign, authorise once its own finalized read of the lock passes).
 */
const MINTER = account(7)
/**
 * The maker bot's --poll-ms here (BENCH_MAKER_POLL_MS, default 50, the bot's floor): how often its reveal loop reads
 * the heads between passes. The raw run watches heads every 20 ms; at the stack's 250 ms (one block) the maker's
 * reveal came 0.17–0.34 s after the payment was final at 1 take, at 50 ms 0.06–0.09 s (2026-12-02, RESULTS.md).
 */
const MAKER_POLL_MS = Number(process.env.BENCH_MAKER_POLL_MS ?? 50)

/** The maker for `fills` takes: liquidity for all of them (and one spare) and a hashlock each in one set. */
export const startMaker = (s: V2Stack, fills: number, perFill: bigint) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const { maker, credential } = yield* v2Maker(s, account(1), perFill * BigInt(fills + 1))
    // 32 is the client's usual; the bot caps a set at 800 (64 KiB body), far above the sweep's 256. Sets valid the
    // longest the stack admits (quote_validity_seconds_max = MAX_QUOTE_LIFE, 300 s): usable for 240 s past the 60 s
    // lock cutoff and replaced every 120 s, so a size's takes rarely meet a replacement (each one a signed set of
    // up to 264 hashlocks the service checks and stores while the takes run).
    const client = runMakerClient(s, maker, credential, {
      hashlocks: Math.max(32, fills + 8),
      validity: DEVNET_TIMING_V2.quoteValidityMax,
      pollMs: MAKER_POLL_MS,
      quoteSize: maker.amount,
    })
    // The bench's failure report prints the maker's output only once startMaker returned: a set that never goes
    // live (a refusal stops the bot) is told here, with what the bot wrote.
    yield* pollUntil(
      sql`select 1 from quote_sets where order_id = ${maker.orderId} and active and hashlock_root is not null`,
      (rows) => rows.length === 1,
      { every: "250 millis", within: "60 seconds" },
    ).pipe(
      Effect.tapErrorCause(() =>
        Effect.sync(() => console.error(`--- maker client (no live set):\n${client.output().slice(-6000)}`)),
      ),
    )
    // The maker leaving (the next size's takes must not pick this order's spare liquidity under a set whose maker no
    // longer reveals: its lease would keep the set admissible for up to 60 s): the set cancelled with the maker's
    // credential, as `npm run maker -- close` does, then the process killed.
    const retire = Effect.gen(function* () {
      const res = yield* rawRequest(`${s.api}/v1/orders/${maker.orderId}/quotes`, {
        method: "DELETE",
        headers: bearer(credential),
      })
      if (res.status !== 200) return yield* Effect.dieMessage(`cancel quotes: ${res.status} ${res.text}`)
      yield* killNow(client)
    })
    return { client, retire }
  })

/**
 * `n` takers, signed in (the challenge budget is shared by the bench's one client address: retried each second)
 * and linked on aster, each minted `perFill` there in batches from one minter key.
 */
export const prepareTakers = (s: V2Stack, n: number, perFill: bigint) =>
  Effect.gen(function* () {
    const who = Array.from({ length: n }, () => privateKeyToAccount(generatePrivateKey()))
    for (let i = 0; i < n; i += 32) {
      const calls = who.slice(i, i + 32).map((w) => ({
        to: s.aster.token,
        data: encodeFunctionData({ abi: mockUSDCAbi, functionName: "mint", args: [w.address, perFill] }),
      }))
      yield* Effect.promise(() => sendCalls(s.aster, MINTER, calls))
    }
    const retried = Schedule.spaced("1 second").pipe(Schedule.intersect(Schedule.recurs(20)))
    return yield* Effect.forEach(
      who,
      (w) => Effect.sandbox(v2Taker(s, w)).pipe(Effect.retry(retried), Effect.unsandbox),
      { concurrency: 4 },
    )
  })

/**
 * fetch with a 60 s limit. Not the stack's 5 s timedFetch: under load a PayTake answer can take longer, and a
 * PayTake the service stored but whose answer was cut is retried after the lock was claimed (seen at 64 at once).
 */
const patientFetch: typeof fetch = (input, init) =>
  fetch(input, { ...init, signal: init?.signal ?? AbortSignal.timeout(60_000) })

/** The taker API, noting when the service answered the take and accepted the PayTake (performance.now ms). */
const timedApi = (api: TakerApi, marks: { reserved?: number; authorized?: number }): TakerApi => ({
  createTake: async (body) => {
    const answer = await api.createTake(body)
    marks.reserved = performance.now()
    return answer
  },
  postSignatures: async (takeId, body) => {
    const answer = await api.postSignatures(takeId, body)
    if ("pay_authorization" in body) marks.authorized = performance.now()
    return answer
  },
})

export interface Timed {
  readonly digest: Hex
  /** The take's answer came (reserved, its to_sign in hand). */
  readonly reserved: number
  /** Signatures posted (takeV2 returned): the service has the Fills and permit. */
  readonly signed: number
  readonly authorized: number
}

/**
 * One take of one fill. The pay key tries once per new maker-chain block (a lock turns final only with a block), or
 * 50 ms after a 409 (the service's index behind the taker's endpoint); the take ends when its Claimed is seen.
 */
export const serviceTake = (s: V2Stack, w: Watcher, taker: V2Taker, amount: bigint) =>
  Effect.gen(function* () {
    const marks: { reserved?: number; authorized?: number } = {}
    const api = timedApi(httpTakerApi(s.api, taker.token, patientFetch), marks)
    const handle = yield* takeV2(s, taker, amount, api)
    const signed = performance.now()
    const digest = handle.take.fills[0]!.digest
    const attempt = Effect.tryPromise(() => authorizePayment(api, s.hl.pub, handle)).pipe(
      Effect.catchAll((e) =>
        e.error instanceof TakerApiError && e.error.status !== 409
          ? Effect.die(e.error)
          : Effect.succeed({ ok: false as const, retry: true, problems: [] }),
      ),
    )
    const deadline = performance.now() + 180_000
    for (;;) {
      const next = w.nextHead(s.hl)
      const r = yield* attempt
      if (r.ok) break
      if (!r.retry) return yield* Effect.dieMessage(`take ${handle.takeId}: refused ${JSON.stringify(r.problems)}`)
      if (performance.now() > deadline) return yield* Effect.dieMessage(`take ${handle.takeId}: no lock in 180 s`)
      if (r.problems.length === 0) yield* Effect.sleep("50 millis")
      else yield* Effect.promise(() => next)
    }
    yield* Effect.promise(() => w.claimed(digest)).pipe(
      Effect.timeout("300 seconds"),
      Effect.catchAll(() =>
        Effect.flatMap(fillRows(handle.takeId), (rows) =>
          Effect.dieMessage(`take ${handle.takeId}: no Claimed in 300 s: ${JSON.stringify(rows)}`),
        ),
      ),
    )
    return { digest, reserved: marks.reserved!, signed, authorized: marks.authorized! } satisfies Timed
  })
