/**
 * Classification of venue answers (Acknowledged / Refused / Unknown, Found / NotFound / Unavailable) and the exact
 * requests the adapters send, against a scripted HttpClient. Time is the TestClock.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Either, Fiber, Redacted, TestClock } from "effect"
import { type Address, type Hex, recoverTypedDataAddress } from "viem"
import { privateKeyToAccount } from "viem/accounts"
import { messageTypedData } from "../../src/Domain/AsterTypedData.ts"
import type { TypedDataObject } from "../../src/Domain/TypedData.ts"
import { type AsterSettings, asterSettings, makeAsterAdapter } from "../../src/Venues/AsterAdapter.ts"
import { agentsFromKeys } from "../../src/Venues/AsterAgent.ts"
import { classifyAsterAnswer, successAcknowledged, withdrawAcknowledged } from "../../src/Venues/AsterAnswers.ts"
import { hyperliquidSettings, makeHyperliquidAdapter } from "../../src/Venues/HyperliquidAdapter.ts"
import { classifyExchangeAnswer } from "../../src/Venues/HyperliquidExchangeWire.ts"
import { HttpAnswer } from "../../src/Venues/VenueHttp.ts"
import { type FakeAnswer, fakeVenueHttp, json, type RecordedRequest } from "../support/FakeVenueHttp.ts"

const USER_KEY: Hex = "0x0123456789012345678901234567890123456789012345678901234567890123"
const AGENT_KEY: Hex = "0x0000000000000000000000000000000000000000000000000000000000000001"
const user = privateKeyToAccount(USER_KEY)
const USER = user.address.toLowerCase() as Address
const AGENT = privateKeyToAccount(AGENT_KEY).address.toLowerCase() as Address
const OTHER: Address = "0x5e9ee1089755c3435139848e47e6635505d5a13a"
const NOW = 1_700_000_000_000

const sign = (td: TypedDataObject) =>
  Effect.promise(() => user.signTypedData(td as unknown as Parameters<typeof user.signTypedData>[0]))

const answered = (status: number, body: unknown) =>
  HttpAnswer.Answered({ status, body: typeof body === "string" ? body : JSON.stringify(body) })

describe("Hyperliquid /exchange answers", () => {
  const classify = (a: HttpAnswer) => classifyExchangeAnswer(a, "ref")
  it("ok is Acknowledged; err and nested statuses errors are Refused", () => {
    expect(classify(answered(200, { status: "ok", response: { type: "default" } }))).toMatchObject({
      _tag: "Acknowledged",
      venueRef: "ref",
    })
    expect(classify(answered(200, { status: "err", response: "Insufficient balance for withdrawal." }))).toMatchObject({
      _tag: "Refused",
      error: "Insufficient balance for withdrawal.",
      sent: true,
    })
    expect(
      classify(answered(200, { status: "ok", response: { type: "order", data: { statuses: [{ error: "bad" }] } } })),
    ).toMatchObject({ _tag: "Refused", error: "bad" })
    expect(classify(answered(200, { status: "ok", response: { data: { status: { error: "no" } } } }))).toMatchObject({
      _tag: "Refused",
      error: "no",
    })
  })
  it("pre-execution 4xx are Refused; 5xx, other statuses and unreadable 200s are Unknown", () => {
    expect(classify(answered(422, "Failed to deserialize the JSON body into the target type"))._tag).toBe("Refused")
    expect(classify(answered(429, "rate limited"))).toMatchObject({ _tag: "Refused", code: "http_429" })
    for (const status of [500, 502, 503, 504, 408, 409, 302]) {
      expect(classify(answered(status, { status: "err", response: "x" }))._tag).toBe("Unknown")
    }
    expect(classify(answered(200, "<html>"))._tag).toBe("Unknown")
    expect(classify(answered(200, { status: "maybe" }))._tag).toBe("Unknown")
    expect(classify(answered(200, { status: "err", response: { not: "a string" } }))._tag).toBe("Unknown")
  })
  it("never sent is Refused (sent: false); no answer is Unknown", () => {
    expect(classify(HttpAnswer.NotSent({ reason: "transport: ECONNREFUSED" }))).toMatchObject({
      _tag: "Refused",
      sent: false,
    })
    expect(classify(HttpAnswer.NoAnswer({ reason: "timeout" }))._tag).toBe("Unknown")
  })
})

describe("Aster answers", () => {
  const withdraw = (a: HttpAnswer) => classifyAsterAnswer(a, withdrawAcknowledged)
  it("withdrawId is Acknowledged; {code:200} acknowledges a registration", () => {
    expect(withdraw(answered(200, { withdrawId: "1234567", hash: "0xab" }))).toMatchObject({
      _tag: "Acknowledged",
      venueRef: "1234567",
    })
    expect(classifyAsterAnswer(answered(200, { code: 200, msg: "success" }), successAcknowledged(AGENT))).toMatchObject(
      { _tag: "Acknowledged", venueRef: AGENT },
    )
  })
  it("{code,msg} errors are Refused, except the unknown-outcome codes", () => {
    expect(withdraw(answered(400, { code: -1022, msg: "Signature for this request is not valid." }))).toMatchObject({
      _tag: "Refused",
      code: "-1022",
      error: "Signature for this request is not valid.",
    })
    expect(withdraw(answered(400, { code: -4225, msg: "Nonce Expired" }))).toMatchObject({ _tag: "Refused" })
    expect(withdraw(answered(200, { code: -2019, msg: "Margin is insufficient." }))._tag).toBe("Refused")
    for (const code of [-1000, -1006, -1007]) {
      expect(withdraw(answered(400, { code, msg: "unknown" }))._tag).toBe("Unknown")
      expect(withdraw(answered(200, { code, msg: "unknown" }))._tag).toBe("Unknown")
    }
  })
  it("429/418 are Refused; 503 and other 5xx are Unknown; odd 200s are Unknown", () => {
    expect(withdraw(answered(429, { code: -1003, msg: "Too many requests" }))._tag).toBe("Refused")
    expect(withdraw(answered(418, "banned"))._tag).toBe("Refused")
    expect(withdraw(answered(503, { code: -1007, msg: "Timeout" }))._tag).toBe("Unknown")
    expect(withdraw(answered(503, ""))._tag).toBe("Unknown")
    expect(withdraw(answered(500, { code: -1022, msg: "x" }))._tag).toBe("Unknown")
    expect(withdraw(answered(200, {}))._tag).toBe("Unknown")
    expect(withdraw(answered(200, "not json"))._tag).toBe("Unknown")
    expect(withdraw(HttpAnswer.NotSent({ reason: "x" }))).toMatchObject({ _tag: "Refused", sent: false })
    expect(withdraw(HttpAnswer.NoAnswer({ reason: "x" }))._tag).toBe("Unknown")
  })
})

const hyperliquid = (handler: (r: RecordedRequest) => FakeAnswer) => {
  const fake = fakeVenueHttp(handler)
  const adapter = makeHyperliquidAdapter(
    hyperliquidSettings({ venueId: "hl", apiUrl: "http://venue.test/", decimals: 6, requestTimeoutMs: 10_000 }),
  ).pipe(Effect.provide(fake.layer))
  return { requests: fake.requests, adapter }
}

describe("Hyperliquid adapter", () => {
  it.effect("to: signer is sendAsset perp → spot at the USDC system address; to: wallet is withdraw3", () =>
    Effect.gen(function* () {
      const { adapter } = hyperliquid(() => json(200, {}))
      const hl = yield* adapter
      const signer = yield* hl.buildWithdrawal({
        address: USER,
        amountBaseUnits: 12_500_000n,
        to: "signer",
        destination: USER,
        nowMs: NOW,
      })
      expect(signer.action).toBe("hyperliquid.sendAsset")
      expect(signer.amount).toBe("12.5")
      expect(signer.nonce).toBe(NOW)
      expect(signer.replayableUntilMs).toBe(NOW + 2 * 86_400_000)
      expect(signer.typedData.primaryType).toBe("HyperliquidTransaction:SendAsset")
      expect(signer.typedData.message).toEqual({
        hyperliquidChain: "Mainnet",
        destination: "0x2000000000000000000000000000000000000000",
        sourceDex: "",
        destinationDex: "spot",
        token: "USDC:0x6d1e7cde53ba9467b783cb7c530ce054",
        amount: "12.5",
        fromSubAccount: "",
        nonce: NOW,
      })
      expect(signer.typedData.domain).toEqual({
        name: "HyperliquidSignTransaction",
        version: "1",
        chainId: 42161,
        verifyingContract: "0x0000000000000000000000000000000000000000",
      })
      const wallet = yield* hl.buildWithdrawal({
        address: USER,
        amountBaseUnits: 1_000_000n,
        to: "wallet",
        destination: "0x5E9EE1089755C3435139848E47E6635505D5A13A",
        nowMs: NOW,
      })
      expect(wallet.typedData.primaryType).toBe("HyperliquidTransaction:Withdraw")
      expect(wallet.typedData.message).toEqual({
        hyperliquidChain: "Mainnet",
        destination: OTHER,
        amount: "1",
        time: NOW,
      })
    }),
  )

  it.effect("refuses what cannot be built: zero, sub-precision amounts, signer route to someone else", () =>
    Effect.gen(function* () {
      const hl = yield* hyperliquid(() => json(200, {})).adapter
      const base = { address: USER, to: "wallet" as const, destination: OTHER, nowMs: NOW }
      for (const request of [
        { ...base, amountBaseUnits: 0n },
        { ...base, amountBaseUnits: -1n },
        { ...base, amountBaseUnits: 1n, nowMs: 0 },
        { ...base, amountBaseUnits: 1n, to: "signer" as const },
      ]) {
        const r = yield* Effect.either(hl.buildWithdrawal(request))
        expect(Either.isLeft(r) && r.left._tag).toBe("WithdrawalRequestInvalid")
      }
    }),
  )

  it.effect("submit sends exactly the signed fields, nonce = time, signature as {r,s,v} with v 27/28", () =>
    Effect.gen(function* () {
      const { adapter, requests } = hyperliquid(() => json(200, { status: "ok", response: { type: "default" } }))
      const hl = yield* adapter
      const prepared = yield* hl.buildWithdrawal({
        address: USER,
        amountBaseUnits: 12_500_000n,
        to: "wallet",
        destination: OTHER,
        nowMs: NOW,
      })
      const signature = yield* sign(prepared.typedData)
      // A wallet that emits yParity (0/1) instead of 27/28 is normalised.
      const yParity = `${signature.slice(0, 130)}${signature.endsWith("1c") ? "01" : "00"}` as Hex
      const outcome = yield* hl.submitWithdrawal({ address: USER, typedData: prepared.typedData, signature: yParity })
      expect(outcome).toMatchObject({ _tag: "Acknowledged", venueRef: `${USER}:${NOW}` })
      expect(requests).toHaveLength(1)
      expect(requests[0]?.url).toBe("http://venue.test/exchange")
      expect(requests[0]?.contentType).toBe("application/json")
      expect(JSON.parse(requests[0]?.body ?? "")).toEqual({
        action: {
          type: "withdraw3",
          signatureChainId: "0xa4b1",
          hyperliquidChain: "Mainnet",
          destination: OTHER,
          amount: "12.5",
          time: NOW,
        },
        nonce: NOW,
        signature: {
          r: signature.slice(0, 66),
          s: `0x${signature.slice(66, 130)}`,
          v: Number.parseInt(signature.slice(130), 16),
        },
      })
      // JSON integers may come back as decimal strings (spec: typed data object).
      const asStrings = {
        ...prepared.typedData,
        domain: { ...prepared.typedData.domain, chainId: "42161" },
        message: { ...prepared.typedData.message, time: String(NOW) },
      }
      expect((yield* hl.submitWithdrawal({ address: USER, typedData: asStrings, signature }))._tag).toBe("Acknowledged")
      expect(JSON.parse(requests[1]?.body ?? "").action.time).toBe(NOW)
    }),
  )

  it.effect("submit refuses typed data it does not build, without sending anything", () =>
    Effect.gen(function* () {
      const { adapter, requests } = hyperliquid(() => json(200, { status: "ok", response: { type: "default" } }))
      const hl = yield* adapter
      const td = (yield* hl.buildWithdrawal({
        address: USER,
        amountBaseUnits: 1n,
        to: "wallet",
        destination: OTHER,
        nowMs: NOW,
      })).typedData
      const signature = yield* sign(td)
      const bad: ReadonlyArray<unknown> = [
        { ...td, primaryType: "HyperliquidTransaction:ApproveAgent" },
        { ...td, domain: { ...td.domain, name: "Other" } },
        { ...td, message: { ...td.message, hyperliquidChain: "Testnet" } },
        { ...td, message: { ...td.message, destination: OTHER.toUpperCase().replace("0X", "0x") } },
        { ...td, message: { ...td.message, amount: "1e6" } },
        { ...td, message: { ...td.message, extra: 1 } },
        { ...td, types: { ...td.types, Extra: [] } },
        { ...td, message: { ...td.message, time: -1 } },
        "not an object",
      ]
      for (const typedData of bad) {
        const r = yield* Effect.either(hl.submitWithdrawal({ address: USER, typedData, signature }))
        expect(Either.isLeft(r) && r.left._tag).toBe("TypedDataRejected")
      }
      const short = yield* Effect.either(hl.submitWithdrawal({ address: USER, typedData: td, signature: "0x12" }))
      expect(Either.isLeft(short)).toBe(true)
      expect(requests).toHaveLength(0)
    }),
  )

  it.effect("a hanging venue is Unknown after the timeout; a refused connection is Refused (not sent)", () =>
    Effect.gen(function* () {
      const hang = yield* hyperliquid(() => "hang").adapter
      const prepared = yield* hang.buildWithdrawal({
        address: USER,
        amountBaseUnits: 1n,
        to: "wallet",
        destination: OTHER,
        nowMs: NOW,
      })
      const signature = yield* sign(prepared.typedData)
      const fiber = yield* Effect.fork(
        hang.submitWithdrawal({ address: USER, typedData: prepared.typedData, signature }),
      )
      yield* TestClock.adjust("9 seconds")
      expect(fiber.unsafePoll()).toBeNull()
      yield* TestClock.adjust("2 seconds")
      expect((yield* Fiber.join(fiber))._tag).toBe("Unknown")

      const refused = yield* hyperliquid(() => ({ transport: "ECONNREFUSED" })).adapter
      const r = yield* refused.submitWithdrawal({ address: USER, typedData: prepared.typedData, signature })
      expect(r).toMatchObject({ _tag: "Refused", code: "not_sent", sent: false })
      const reset = yield* hyperliquid(() => ({ transport: "ECONNRESET" })).adapter
      expect((yield* reset.submitWithdrawal({ address: USER, typedData: prepared.typedData, signature }))._tag).toBe(
        "Unknown",
      )
    }),
  )

  it.effect("withdrawable: rounded-down base units, read time taken before the request", () =>
    Effect.gen(function* () {
      yield* TestClock.setTime(NOW)
      const { adapter, requests } = hyperliquid(() => json(200, { withdrawable: "13104.5145029", time: 1 }))
      const hl = yield* adapter
      expect(yield* hl.withdrawable(USER)).toEqual({ amountBaseUnits: 13_104_514_502n, readAtMs: NOW })
      expect(JSON.parse(requests[0]?.body ?? "")).toEqual({ type: "clearinghouseState", user: USER })
      for (const answer of [json(500, {}), json(200, { nope: 1 }), "hang" as const, { transport: "ECONNREFUSED" }]) {
        const bad = yield* hyperliquid(() => answer).adapter
        const fiber = yield* Effect.fork(Effect.either(bad.withdrawable(USER)))
        yield* TestClock.adjust("11 seconds")
        const r = yield* Fiber.join(fiber)
        expect(Either.isLeft(r) && r.left._tag).toBe("VenueUnavailable")
      }
    }),
  )

  it.effect("evidence: withdraw and send entries by nonce and amount; NotFound carries the replay horizon", () =>
    Effect.gen(function* () {
      yield* TestClock.setTime(NOW + 60_000)
      const ledger = [
        { time: NOW + 5, hash: "0xaaa", delta: { type: "withdraw", usdc: "12.5", nonce: NOW - 1, fee: "1.0" } },
        { time: NOW + 6, hash: "0xbbb", delta: { type: "withdraw", usdc: "11.5", nonce: NOW, fee: "1.0" } },
        {
          time: NOW + 7,
          hash: "0xccc",
          delta: {
            type: "send",
            user: USER,
            destination: "0x2000000000000000000000000000000000000000",
            sourceDex: "",
            destinationDex: "spot",
            token: "USDC",
            amount: "3.0",
            usdcValue: "3.0",
            fee: "0.0",
            nativeTokenFee: "0.0",
            nonce: NOW + 1,
            feeToken: "",
          },
        },
      ]
      const { adapter, requests } = hyperliquid(() => json(200, ledger))
      const hl = yield* adapter
      const query = { address: USER, destination: OTHER }
      // withdraw3 of 12.5 with a $1 fee reported net: usdc 11.5 + fee 1.0.
      expect(yield* hl.findEvidence({ ...query, nonce: NOW, amountBaseUnits: 12_500_000n })).toMatchObject({
        _tag: "Found",
        venueRef: "0xbbb",
      })
      expect(JSON.parse(requests[0]?.body ?? "")).toEqual({
        type: "userNonFundingLedgerUpdates",
        user: USER,
        startTime: NOW - 86_400_000,
      })
      expect(
        yield* hl.findEvidence({ address: USER, destination: USER, nonce: NOW + 1, amountBaseUnits: 3_000_000n }),
      ).toMatchObject({ _tag: "Found", venueRef: "0xccc" })
      expect(yield* hl.findEvidence({ ...query, nonce: NOW + 2, amountBaseUnits: 1n })).toMatchObject({
        _tag: "NotFound",
        checkedAtMs: NOW + 60_000,
        replayableUntilMs: NOW + 2 + 2 * 86_400_000,
      })
      // Same nonce, different amount: not this transfer.
      expect((yield* hl.findEvidence({ ...query, nonce: NOW - 1, amountBaseUnits: 1n }))._tag).toBe("NotFound")
      const down = yield* hyperliquid(() => json(502, "bad gateway")).adapter
      expect((yield* down.findEvidence({ ...query, nonce: NOW, amountBaseUnits: 1n }))._tag).toBe("Unavailable")
      const garbage = yield* hyperliquid(() => json(200, { not: "a list" })).adapter
      expect((yield* garbage.findEvidence({ ...query, nonce: NOW, amountBaseUnits: 1n }))._tag).toBe("Unavailable")
    }),
  )
})

describe("Hyperliquid ledger paging (500 entries per answer)", () => {
  const filler = (from: number, n: number) =>
    Array.from({ length: n }, (_, i) => ({
      time: from + i,
      hash: `0x${i.toString(16)}`,
      delta: { type: "deposit", usdc: "1.0" },
    }))
  const match = { time: NOW + 600, hash: "0xfound", delta: { type: "withdraw", usdc: "2.0", nonce: NOW, fee: "0.0" } }
  const q = { address: USER, destination: OTHER, nonce: NOW, amountBaseUnits: 2_000_000n }

  it.effect("follows full pages from the last returned time until the transfer or a short page", () =>
    Effect.gen(function* () {
      const { adapter, requests } = hyperliquid((r) => {
        const start = JSON.parse(r.body).startTime as number
        return start < NOW ? json(200, filler(NOW, 500)) : json(200, [...filler(NOW + 499, 1), match])
      })
      const hl = yield* adapter
      expect(yield* hl.findEvidence(q)).toMatchObject({ _tag: "Found", venueRef: "0xfound" })
      expect(requests.map((r) => JSON.parse(r.body).startTime)).toEqual([NOW - 86_400_000, NOW + 499])
      const { adapter: short } = hyperliquid((r) =>
        JSON.parse(r.body).startTime < NOW ? json(200, filler(NOW, 500)) : json(200, filler(NOW + 499, 3)),
      )
      expect((yield* (yield* short).findEvidence(q))._tag).toBe("NotFound")
    }),
  )

  it.effect("a page that does not advance, or an endless ledger, is Unavailable rather than NotFound", () =>
    Effect.gen(function* () {
      const stuck = yield* hyperliquid(() =>
        json(
          200,
          filler(NOW - 86_400_000, 500).map((e) => ({ ...e, time: NOW - 86_400_000 })),
        ),
      ).adapter
      expect((yield* stuck.findEvidence(q))._tag).toBe("Unavailable")
      let next = NOW
      const endless = yield* hyperliquid(() => {
        next += 1000
        return json(200, filler(next, 500))
      }).adapter
      expect(yield* endless.findEvidence(q)).toMatchObject({
        _tag: "Unavailable",
        reason: expect.stringMatching(/pages/),
      })
    }),
  )
})

const withdrawInfo = (perp: string, fee: string) => ({
  userDailyLimit: "10000",
  balances: {
    USDC: {
      currency: "USDC",
      perpTotalWithdrawAmount: perp,
      chainBalances: { "42161": { chainId: 42161, perpMaxWithdrawAmount: perp, withdrawFee: fee } },
    },
  },
})

const aster = (handler: (r: RecordedRequest) => FakeAnswer, extra: Partial<AsterSettings> = {}) => {
  const fake = fakeVenueHttp(handler)
  const adapter = makeAsterAdapter(
    asterSettings({
      venueId: "aster",
      apiUrl: "http://aster.test",
      decimals: 6,
      asset: "USDC",
      withdrawChainId: 42161,
      agents: agentsFromKeys(new Map([[USER, Redacted.make(AGENT_KEY)]])),
      ...extra,
    }),
  ).pipe(Effect.provide(fake.layer))
  return { requests: fake.requests, adapter }
}

/** Splits a form body into ordered pairs (values are plain tokens in these tests). */
const pairs = (body: string) => body.split("&").map((p) => p.split("=") as [string, string])

/** Checks the V3 envelope: `signature` last, signed by the agent over exactly the bytes before it. */
const checkEnvelope = (body: string, apiChainId = 1666) =>
  Effect.gen(function* () {
    const i = body.lastIndexOf("&signature=")
    expect(i).toBeGreaterThan(0)
    const signed = body.slice(0, i)
    const signature = body.slice(i + "&signature=".length) as Hex
    const recovered = yield* Effect.promise(() =>
      recoverTypedDataAddress({
        ...(messageTypedData(apiChainId, signed) as unknown as Parameters<typeof recoverTypedDataAddress>[0]),
        signature,
      }),
    )
    expect(recovered.toLowerCase()).toBe(AGENT)
    const p = pairs(signed)
    expect(p.slice(-3).map(([k]) => k)).toEqual(["nonce", "user", "signer"])
    expect(Object.fromEntries(p).user).toBe(USER)
    expect(Object.fromEntries(p).signer).toBe(AGENT)
    return p
  })

describe("Aster adapter", () => {
  it.effect("withdrawable and fee come from user-withdraw-info, signed by the user's agent", () =>
    Effect.gen(function* () {
      yield* TestClock.setTime(NOW)
      const { adapter, requests } = aster(() => json(200, withdrawInfo("300.12345678", "0.50")))
      const a = yield* adapter
      expect(yield* a.withdrawable(USER)).toEqual({ amountBaseUnits: 300_123_456n, readAtMs: NOW })
      expect(requests[0]?.url).toBe("http://aster.test/fapi/v3/aster/user-withdraw-info")
      expect(requests[0]?.contentType).toBe("application/x-www-form-urlencoded")
      const p = yield* checkEnvelope(requests[0]?.body ?? "")
      expect(Number(Object.fromEntries(p).nonce)).toBe(NOW * 1000)
      // A later request in the same microsecond still gets a fresh nonce.
      yield* a.withdrawable(USER)
      const p2 = yield* checkEnvelope(requests[1]?.body ?? "")
      expect(Number(Object.fromEntries(p2).nonce)).toBe(NOW * 1000 + 1)
      // The venue lists only non-zero balances.
      const empty = yield* aster(() => json(200, { balances: {} })).adapter
      expect((yield* empty.withdrawable(USER)).amountBaseUnits).toBe(0n)
      const noAgent = yield* Effect.either(a.withdrawable(OTHER))
      expect(Either.isLeft(noAgent) && noAgent.left._tag).toBe("AgentUnavailable")
    }),
  )

  it.effect("builds the Action with the venue's fee, normalised, and relays it as user-withdraw", () =>
    Effect.gen(function* () {
      yield* TestClock.setTime(NOW)
      const { adapter, requests } = aster((r) =>
        r.url.endsWith("user-withdraw-info")
          ? json(200, withdrawInfo("300", "0.50"))
          : json(200, { withdrawId: "77", hash: "0x01" }),
      )
      const a = yield* adapter
      const prepared = yield* a.buildWithdrawal({
        address: USER,
        amountBaseUnits: 12_500_000n,
        to: "signer",
        destination: USER,
        nowMs: NOW,
      })
      expect(prepared.typedData.message).toEqual({
        type: "Withdraw",
        destination: USER,
        "destination Chain": "Arbitrum",
        token: "USDC",
        amount: "12.5",
        fee: "0.5",
        nonce: NOW * 1000,
        "aster chain": "Mainnet",
      })
      expect(prepared.typedData.domain).toMatchObject({ name: "Aster", version: "1", chainId: 42161 })
      expect(prepared.replayableUntilMs).toBe(NOW + 3_600_000 + 10_000)
      const signature = yield* sign(prepared.typedData)
      const outcome = yield* a.submitWithdrawal({ address: USER, typedData: prepared.typedData, signature })
      expect(outcome).toMatchObject({ _tag: "Acknowledged", venueRef: "77" })
      const sent = requests[1]
      expect(sent?.url).toBe("http://aster.test/fapi/v3/aster/user-withdraw")
      const p = yield* checkEnvelope(sent?.body ?? "")
      expect(p.slice(0, 7)).toEqual([
        ["chainId", "42161"],
        ["asset", "USDC"],
        ["amount", "12.5"],
        ["fee", "0.5"],
        ["receiver", USER],
        ["userNonce", String(NOW * 1000)],
        ["userSignature", signature],
      ])
    }),
  )

  it.effect("refuses withdrawals it cannot build", () =>
    Effect.gen(function* () {
      const a = yield* aster(() => json(200, withdrawInfo("300", "0.5"))).adapter
      const base = { address: USER, to: "signer" as const, destination: USER, nowMs: NOW }
      for (const request of [
        { ...base, amountBaseUnits: 0n },
        { ...base, amountBaseUnits: 500_000n },
        { ...base, amountBaseUnits: 1_000_000n, destination: OTHER },
      ]) {
        const r = yield* Effect.either(a.buildWithdrawal(request))
        expect(Either.isLeft(r) && r.left._tag).toBe("WithdrawalRequestInvalid")
      }
      const noBalance = yield* aster(() => json(200, { balances: {} })).adapter
      const r = yield* Effect.either(noBalance.buildWithdrawal({ ...base, amountBaseUnits: 1_000_000n }))
      expect(Either.isLeft(r) && r.left._tag).toBe("WithdrawalRequestInvalid")
    }),
  )

  it.effect("feeOnTop: the fee goes on top of what must arrive, rounded up to the venue's precision", () =>
    Effect.gen(function* () {
      const base = { address: USER, to: "signer" as const, destination: USER, nowMs: NOW }
      const a = yield* aster(() => json(200, withdrawInfo("300", "0.5"))).adapter
      const plain = yield* a.buildWithdrawal({ ...base, amountBaseUnits: 20_000_000n })
      expect([plain.amount, plain.amountBaseUnits, plain.feeBaseUnits]).toEqual(["20", 20_000_000n, 500_000n])
      expect(plain.typedData.message).toMatchObject({ amount: "20", fee: "0.5" })
      const gross = yield* a.buildWithdrawal({ ...base, amountBaseUnits: 20_000_000n, feeOnTop: true })
      expect([gross.amount, gross.amountBaseUnits, gross.feeBaseUnits]).toEqual(["20.5", 20_500_000n, 500_000n])
      expect(gross.typedData.message).toMatchObject({ amount: "20.5", fee: "0.5" })
      // 18 decimals, 8 signable: 1 wei to arrive + 0.5 fee is signed as 0.50000001 (never less than needed).
      const fine = yield* aster(() => json(200, withdrawInfo("300", "0.5")), { decimals: 18 }).adapter
      const rounded = yield* fine.buildWithdrawal({ ...base, amountBaseUnits: 1n, feeOnTop: true })
      expect([rounded.amount, rounded.amountBaseUnits]).toEqual(["0.50000001", 500_000_010_000_000_000n])
    }),
  )

  it.effect("agent approval: the venue's message, every permission false, 365 days; relayed as the form", () =>
    Effect.gen(function* () {
      const { adapter, requests } = aster(() => json(200, { code: 200, msg: "success" }))
      const a = yield* adapter
      const approval = a.agentApproval
      if (approval === undefined) throw new Error("Aster has agent approvals")
      const prepared = yield* approval.agentApprovalTypedData({ user: USER, agent: AGENT, nowMicros: 1700000000000000 })
      expect(prepared.message).toBe(
        `user=${USER}&nonce=1700000000000000&agentName=settler&agentAddress=${AGENT}&expired=1731536000000&signatureChainId=42161&canSpotTrade=false&canPerpTrade=false&canWithdraw=false&ipWhitelist=`,
      )
      expect(prepared.expiresAtMs).toBe(1731536000000)
      expect(prepared.typedData.domain.chainId).toBe(42161)
      const signature = yield* sign(prepared.typedData)
      expect(signature).toBe(
        "0xc7f39451414236295bd9646300146c11034ecd1febaf2c78d9272abdbec6cc9f615735964b9dd8c9f7a4d73f37a34fe6ec5d92c0e906c6f933dadf4d52fb541e1c",
      )
      const outcome = yield* approval.registerAgent({ address: USER, typedData: prepared.typedData, signature })
      expect(outcome).toMatchObject({ _tag: "Acknowledged", venueRef: AGENT })
      expect(requests[0]?.url).toBe("http://aster.test/fapi/v3/registerAndApproveAgent")
      expect(requests[0]?.body).toBe(`${prepared.message}&signature=${signature}`)

      // Never relayed: an approval that grants anything, for someone else, or in another domain.
      const grant = {
        ...prepared.typedData,
        message: { msg: prepared.message.replace("canWithdraw=false", "canWithdraw=true") },
      }
      const otherUser = { ...prepared.typedData, message: { msg: prepared.message.replace(USER, OTHER) } }
      const otherDomain = { ...prepared.typedData, domain: { ...prepared.typedData.domain, chainId: 56 } }
      const reordered = {
        ...prepared.typedData,
        message: {
          msg: prepared.message
            .replace("agentName=settler&", "")
            .replace("&ipWhitelist=", "&agentName=settler&ipWhitelist="),
        },
      }
      for (const typedData of [grant, otherUser, otherDomain, reordered]) {
        const r = yield* Effect.either(approval.registerAgent({ address: USER, typedData, signature }))
        expect(Either.isLeft(r) && r.left._tag).toBe("TypedDataRejected")
      }
      expect(requests).toHaveLength(1)
    }),
  )

  it.effect("evidence: matched in deposit-withdraw-history by asset, chain, amount and time", () =>
    Effect.gen(function* () {
      yield* TestClock.setTime(NOW + 60_000)
      const history = [
        { id: "1", type: "DEPOSIT", asset: "USDC", amount: "12.5", state: "SUCCESS", time: NOW, chainId: 42161 },
        { id: "2", type: "WITHDRAW", asset: "USDC", amount: "12.5", state: "FAILED", time: NOW, chainId: 42161 },
        {
          id: "3",
          type: "WITHDRAW",
          asset: "USDC",
          amount: "12.50",
          state: "PROCESSING",
          time: NOW + 1,
          chainId: 42161,
        },
        { id: "4", type: "WITHDRAW", asset: "USDC", amount: "12.5", state: "SUCCESS", time: NOW + 2, chainId: 42161 },
      ]
      const { adapter, requests } = aster(() => json(200, history))
      const a = yield* adapter
      const q = { address: USER, destination: USER, nonce: NOW * 1000, amountBaseUnits: 12_500_000n }
      expect(yield* a.findEvidence(q)).toMatchObject({ _tag: "Found", venueRef: "3", atMs: NOW + 1 })
      expect(requests[0]?.url).toBe("http://aster.test/fapi/v3/aster/deposit-withdraw-history")
      yield* checkEnvelope(requests[0]?.body ?? "")
      expect(yield* a.findEvidence({ ...q, amountBaseUnits: 1n })).toMatchObject({
        _tag: "NotFound",
        replayableUntilMs: NOW + 3_610_000,
      })
      expect((yield* a.findEvidence({ ...q, nonce: (NOW + 7_200_000) * 1000 }))._tag).toBe("NotFound")
      // The history names no nonce: a record another withdrawal of the account already holds is skipped, so a
      // second withdrawal of the same amount finds its own record, or none (then it fails once its window passed).
      expect(yield* a.findEvidence({ ...q, claimedRefs: ["3"] })).toMatchObject({ _tag: "Found", venueRef: "4" })
      expect(yield* a.findEvidence({ ...q, claimedRefs: ["3", "4"] })).toMatchObject({
        _tag: "NotFound",
        replayableUntilMs: NOW + 3_610_000,
      })
      const down = yield* aster(() => json(503, { code: -1007, msg: "timeout" })).adapter
      expect((yield* down.findEvidence(q))._tag).toBe("Unavailable")
    }),
  )
})
