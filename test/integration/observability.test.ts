import { writeFileSync } from "node:fs"
import { SqlClient } from "@effect/sql"
import { expect, layer } from "@effect/vitest"
import { Context, Effect, Layer, LogLevel } from "effect"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { runSettlement } from "../../actors/Settlement.ts"
import { runTxRelayer } from "../../actors/TxRelayer.ts"
import { runVenueWatcher } from "../../actors/VenueWatcher.ts"
import { ChainClients } from "../../src/Chain/ChainClients.ts"
import { FaultPoint } from "../../src/Chain/FaultPoint.ts"
import { Relayer } from "../../src/Chain/Relayer.ts"
import { AppConfig } from "../../src/Config.ts"
import { loggingLayer } from "../../src/Observability/Log.ts"
import { openStoredFillSecret } from "../../src/Store/FillSecrets.ts"
import { account, key, startTestChain, type TestChain, venueEntry } from "../support/ChainDevnet.ts"
import { TestDatabaseLive } from "../support/Database.ts"
import { rawRequest } from "../support/Http.ts"
import { issueCredential, registerIdentity, renew } from "../support/Makers.ts"
import { pollUntil } from "../support/Poll.ts"
import { bearer, post } from "../support/SignIn.ts"
import { makerOrder, signedTake } from "../support/Takes.ts"
import { testAppConfig } from "../support/TestConfig.ts"
import { baseUrl, TestHttpLive } from "../support/TestServer.ts"

/**
 * Issue 17 items 1 and 2 on a real flow: the service's own log (src/Observability/Log.ts, JSON, every level)
 * captured whole while a maker signs in, registers a quote identity, gets an `mk_` credential and renews its
 * lease with it, and a take over its funded order settles on two devnet chains (watchers, relayers and the
 * settlement actor running). Then every token, private key, signature and fill secret the run used is searched
 * for in the log: none may appear. The log must also hold the lines an operator needs (access lines with
 * route templates and request ids, fill state changes, relayer submits and finals).
 */

const OPERATOR = 9
const operator = account(OPERATOR).address
const FUNDER = account(8)
const PAYER = account(3)
const OWNER = account(1)
const M = "hyperliquid"
const T = "aster"

class Env extends Context.Tag("test/ObsEnv")<
  Env,
  { readonly hl: TestChain; readonly aster: TestChain; readonly lines: Array<string> }
>() {}

const chainOf = (chainId: number, kind: "hyperliquid" | "aster") =>
  Effect.acquireRelease(
    Effect.promise(() => startTestChain({ chainId, kind })),
    (c) => Effect.promise(() => c.anvil.stop()),
  )

const fast = {
  watcher: { poll_ms: 100, confirmations: 2, integrity_interval_seconds: 3600 },
  relayer: { poll_ms: 100 },
}
const entry = (c: TestChain, id: string) => {
  const { legacy_escrow: _legacy, ...v } = venueEntry(c, id, fast)
  return v
}

const lines: Array<string> = []

const Live = Layer.unwrapScoped(
  Effect.gen(function* () {
    const [hl, aster] = yield* Effect.all([chainOf(999, "hyperliquid"), chainOf(42161, "aster")], { concurrency: 2 })
    const config = testAppConfig({
      venues: [entry(hl, M), entry(aster, T)],
      auth: { rpc_urls: [hl.anvil.rpcUrl] },
      operator_key: key(OPERATOR),
    })
    const base = Layer.mergeAll(TestHttpLive, ChainClients.Live, FaultPoint.Noop, Relayer.Live).pipe(
      Layer.provideMerge(TestDatabaseLive),
      Layer.provideMerge(config),
    )
    const actors = Effect.gen(function* () {
      const { deployment } = yield* AppConfig
      for (const v of deployment.venues) {
        yield* Effect.forkScoped(runVenueWatcher(v).pipe(Effect.annotateLogs("actor", `venue-watcher:${v.id}`)))
        yield* Effect.forkScoped(runTxRelayer(v).pipe(Effect.annotateLogs("actor", `tx-relayer:${v.id}`)))
      }
      yield* Effect.forkScoped(runSettlement(openStoredFillSecret).pipe(Effect.annotateLogs("actor", "settlement")))
      yield* Effect.forkScoped(
        Effect.promise(() => Promise.all([hl.test.mine({ blocks: 1 }), aster.test.mine({ blocks: 1 })])).pipe(
          Effect.zipRight(Effect.sleep("250 millis")),
          Effect.forever,
        ),
      )
      return { hl, aster, lines }
    })
    // The log is installed first, so the server's and the actors' fibers inherit it.
    return Layer.scoped(Env, actors).pipe(
      Layer.provideMerge(base),
      Layer.provideMerge(loggingLayer({ format: "json", level: LogLevel.All, sink: (l) => lines.push(l) })),
    )
  }),
)

/** Sign-in as the browser does, keeping the signature (to look for it in the log). */
const signInKeeping = (base: string, who: ReturnType<typeof account>) =>
  Effect.gen(function* () {
    const challenge = yield* post(`${base}/v1/auth/challenge`, { address: who.address })
    const { message, nonce } = challenge.json as { message: string; nonce: string }
    const signature = yield* Effect.promise(() => who.signMessage({ message }))
    const verified = yield* post(`${base}/v1/auth/verify`, { nonce, signature })
    expect(verified.status).toBe(200)
    return { token: (verified.json as { token: string }).token, signature }
  })

const parsed = () => lines.map((l) => JSON.parse(l) as Record<string, unknown>)

layer(Live, { timeout: "300 seconds", excludeTestServices: true })("operators' log and metrics on devnet", (it) => {
  it.effect("a full flow logs every step with ids and no token, key, signature or secret", () =>
    Effect.gen(function* () {
      const { hl, aster } = yield* Env
      const base = yield* baseUrl
      const sql = yield* SqlClient.SqlClient
      const secrets: Array<string> = []

      // Sign-in, identity, credential, a lease renewal with the credential (the fast path), reads.
      const owner = yield* signInKeeping(base, OWNER)
      const payer = yield* signInKeeping(base, PAYER)
      secrets.push(owner.token, owner.signature, payer.token, payer.signature)
      const signerKey = generatePrivateKey()
      const signer = privateKeyToAccount(signerKey)
      const identity = yield* registerIdentity(base, owner.token, signer)
      const credential = yield* issueCredential(base, owner.token, identity.id, ["quote", "read"])
      secrets.push(credential.token)
      expect((yield* renew(base, credential.token, identity.id, 60)).status).toBe(200)
      expect((yield* rawRequest(`${base}/v1/me`, { headers: bearer(owner.token) })).status).toBe(200)
      expect((yield* rawRequest(`${base}/v1/credentials`, { headers: bearer(credential.token) })).status).not.toBe(500)
      // A refused bearer: the token it carried must not be logged either.
      const bogus = `st_${"x".repeat(43)}`
      secrets.push(bogus)
      expect((yield* rawRequest(`${base}/v1/me`, { headers: bearer(bogus) })).status).toBe(401)

      // A take over a funded maker order, settled by the actors.
      const makerSignerKey = generatePrivateKey()
      const makerSigner = privateKeyToAccount(makerSignerKey)
      const order = yield* makerOrder(hl, aster, {
        owner: account(2),
        signer: makerSigner,
        relayer: FUNDER,
        operator,
        payee: privateKeyToAccount(generatePrivateKey()).address,
        amount: 3_000_000n,
        makerVenue: M,
        takerVenue: T,
      })
      const take = yield* signedTake(hl, aster, {
        payer: PAYER,
        recipient: privateKeyToAccount(generatePrivateKey()).address,
        parts: [{ order, amountIn: 1_000_000n, amountOut: 1_000_000n }],
        makerVenue: M,
        takerVenue: T,
      })
      yield* pollUntil(
        Effect.map(sql<{ state: string }>`select state from takes where id = ${take.takeId}`, (r) => r[0]?.state),
        (state) => state === "settled",
        { every: "250 millis", within: "150 seconds" },
      )

      // Every secret the run used: tokens and sign-in signatures above; private keys; stored signatures; fill secrets.
      for (const i of [1, 2, 3, 8, OPERATOR]) secrets.push(key(i))
      secrets.push(signerKey, makerSignerKey)
      for (const f of take.fills) secrets.push(f.secret)
      const stored = yield* sql<{ s: string | null }>`
        select signature as s from fills where take_id = ${take.takeId}
        union all select permit_signature from takes where id = ${take.takeId}
        union all select signature from quote_sets where order_id = ${order.orderId}
        union all select signature from closes
        union all select signature from withdrawals`
      for (const r of stored) if (r.s !== null) secrets.push(r.s)

      const log = lines.join("\n")
      // OBS_LOG_OUT=<file> keeps the run's whole log for reading.
      if (process.env.OBS_LOG_OUT) writeFileSync(process.env.OBS_LOG_OUT, log)
      const needles = [...new Set(secrets.filter((s) => typeof s === "string" && s.length >= 20))]
      expect(needles.length).toBeGreaterThanOrEqual(14)
      for (const s of needles) {
        // Hex values in any case, and without their 0x (a value embedded in calldata or text).
        const bare = s.startsWith("0x") ? s.slice(2).toLowerCase() : s
        expect(log.toLowerCase().includes(bare.toLowerCase()), `the log holds a secret (${s.slice(0, 8)}…)`).toBe(false)
      }

      // What the operator needs is there: JSON lines with level and time, access lines with templates and ids.
      const records = parsed()
      for (const r of records) {
        expect(typeof r.level).toBe("string")
        expect(Number.isNaN(Date.parse(String(r.time)))).toBe(false)
      }
      const access = records.filter((r) => r.message === "request")
      expect(access.map((r) => r.route)).toEqual(
        expect.arrayContaining(["/v1/auth/challenge", "/v1/auth/verify", "/v1/me", "/v1/quote-identities/{id}/lease"]),
      )
      for (const r of access) {
        expect(r.request_id).toMatch(/^[0-9a-f-]{36}$/)
        expect(typeof r.duration_ms).toBe("number")
        expect(String(r.route)).not.toMatch(/[0-9a-f]{8}-[0-9a-f]{4}/)
      }
      expect(access.some((r) => r.route === "/v1/me" && r.status === 401)).toBe(true)
      const fillLines = records.filter((r) => r.fill_id === take.fills[0]!.id && String(r.message).startsWith("fill "))
      expect(fillLines.map((r) => r.state)).toEqual(expect.arrayContaining(["locking", "locked", "settled"]))
      for (const r of fillLines) expect(r.take_id).toBe(take.takeId)
      const relayer = records.filter((r) => String(r.message).startsWith("relayer "))
      expect(relayer.map((r) => r.message)).toEqual(expect.arrayContaining(["relayer pending", "relayer final"]))
      for (const r of relayer) {
        expect(r.tx_key).toBeTypeOf("string")
        expect(r.venue).toBeTypeOf("string")
      }
      expect(log).not.toContain("[object Object]")
    }),
  )
})
