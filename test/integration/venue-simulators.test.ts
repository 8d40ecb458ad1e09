/**
 * The venue adapters against the devnet simulators, each on a real anvil chain with the real contracts
 * (MockUSDC, MockCoreDepositWallet / MockAsterVault): every simulator rule enforced through the adapter, deposits
 * credited from the chain, withdrawals to the signer paid on chain, faults classified and reconciled by evidence,
 * Aster agent approvals.
 */
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { Effect, Redacted } from "effect"
import type { Address, Hex } from "viem"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { ANVIL_PRIVATE_KEYS } from "../../infra/devnet/Anvil.ts"
import type { VenueSimulator } from "../../infra/devnet/venues/VenueSimulator.ts"
import type { TypedDataObject } from "../../src/Domain/TypedData.ts"
import { asterSettings, makeAsterAdapter } from "../../src/Venues/AsterAdapter.ts"
import { agentsFromKeys } from "../../src/Venues/AsterAgent.ts"
import { hyperliquidSettings, makeHyperliquidAdapter } from "../../src/Venues/HyperliquidAdapter.ts"
import type { PreparedWithdrawal, SubmitOutcome, VenueAdapter } from "../../src/Venues/VenueAdapter.ts"
import {
  buildAdapter,
  depositThroughMarginMock,
  run,
  signTyped,
  startSimulatorOn,
  startVenueChain,
  tokenBalance,
  type VenueChain,
} from "../support/VenueDevnet.ts"

const USDC = 1_000_000n
const TIMEOUT_MS = 1_500
const HOLD_MS = 4_000

const key = (i: number) => ANVIL_PRIVATE_KEYS[i] as Hex
const addressOf = (k: Hex) => privateKeyToAccount(k).address.toLowerCase() as Address

/** A stranger: a key no venue has ever seen. */
const STRANGER_KEY = generatePrivateKey()

const withMessage = (td: TypedDataObject, patch: Record<string, string | number>): TypedDataObject => ({
  ...td,
  message: { ...td.message, ...patch },
})
const withChainId = (td: TypedDataObject, chainId: number): TypedDataObject => ({
  ...td,
  domain: { ...td.domain, chainId },
})

/** The JSON signature object of `/exchange`. */
const rsv = (signature: Hex) => ({
  r: signature.slice(0, 66),
  s: `0x${signature.slice(66, 130)}`,
  v: Number.parseInt(signature.slice(130), 16),
})

const runEither = <A, E>(effect: Effect.Effect<A, E>) => run(Effect.either(effect))

const expectRefused = (outcome: SubmitOutcome, text: string | RegExp, code?: string) => {
  expect(outcome._tag).toBe("Refused")
  if (outcome._tag !== "Refused") return
  expect(outcome.sent).toBe(true)
  expect(outcome.error).toMatch(text)
  if (code !== undefined) expect(outcome.code).toBe(code)
}

describe("Hyperliquid simulator through the adapter (anvil 999)", () => {
  let chain: VenueChain
  let sim: VenueSimulator
  let hl: VenueAdapter
  const alice = key(3)
  const bob = key(4)
  const ALICE = addressOf(alice)
  const BOB = addressOf(bob)

  beforeAll(async () => {
    chain = await startVenueChain("hyperliquid", 999)
    sim = await startSimulatorOn(chain, "hyperliquid")
    hl = await buildAdapter(
      makeHyperliquidAdapter(
        hyperliquidSettings({ venueId: "hyperliquid", apiUrl: sim.url, decimals: 6, requestTimeoutMs: TIMEOUT_MS }),
      ),
    )
    await depositThroughMarginMock(chain, "hyperliquid", alice, 1_000n * USDC)
    await sim.control.syncDeposits()
  })
  afterAll(async () => {
    await sim?.stop()
    await chain?.anvil.stop()
  })

  /** Builds, signs with `signer` (default: the account), and submits. */
  const withdraw = async (
    o: { amount?: bigint; to?: "wallet" | "signer"; destination?: Address; nowMs?: number; address?: Address } = {},
  ) => {
    const address = o.address ?? ALICE
    const prepared = await run(
      hl.buildWithdrawal({
        address,
        amountBaseUnits: o.amount ?? USDC,
        to: o.to ?? "wallet",
        destination: o.destination ?? address,
        nowMs: o.nowMs ?? Date.now(),
      }),
    )
    return prepared
  }
  const submit = (prepared: PreparedWithdrawal | { typedData: TypedDataObject }, signature: Hex, address = ALICE) =>
    run(hl.submitWithdrawal({ address, typedData: prepared.typedData, signature }))

  it("credits a deposit made through the CoreDepositWallet mock (perp dex 0 and spot dex uint32 max)", async () => {
    const balance = await run(hl.withdrawable(ALICE))
    expect(balance.amountBaseUnits).toBe(1_000n * USDC)
    expect(Math.abs(balance.readAtMs - Date.now())).toBeLessThan(5_000)
    await depositThroughMarginMock(chain, "hyperliquid", bob, 7n * USDC, 4294967295)
    await sim.control.syncDeposits()
    expect(sim.control.balance(BOB, "spot")).toBe(7n * USDC)
    expect((await run(hl.withdrawable(BOB))).amountBaseUnits).toBe(0n)
  })

  it("pays a to: signer withdrawal (sendAsset to the system address) to the signer on chain", async () => {
    const before = await tokenBalance(chain, ALICE)
    const venueBefore = sim.control.balance(ALICE)
    const prepared = await withdraw({ amount: 12_500_000n, to: "signer" })
    expect(prepared.amount).toBe("12.5")
    const outcome = await submit(prepared, await signTyped(alice, prepared.typedData))
    expect(outcome).toMatchObject({ _tag: "Acknowledged", venueRef: `${ALICE}:${prepared.nonce}` })
    await sim.control.payoutsSettled()
    expect((await tokenBalance(chain, ALICE)) - before).toBe(12_500_000n)
    expect(sim.control.balance(ALICE)).toBe(venueBefore - 12_500_000n)
    expect(await run(hl.findEvidence({ address: ALICE, ...prepared, amountBaseUnits: 12_500_000n }))).toMatchObject({
      _tag: "Found",
    })
  })

  it("pays a to: wallet withdrawal (withdraw3) to its destination", async () => {
    const dest = addressOf(key(6))
    const before = await tokenBalance(chain, dest)
    const prepared = await withdraw({ amount: 2n * USDC, destination: dest })
    expect((await submit(prepared, await signTyped(alice, prepared.typedData)))._tag).toBe("Acknowledged")
    await sim.control.payoutsSettled()
    expect((await tokenBalance(chain, dest)) - before).toBe(2n * USDC)
  })

  it("refuses a stale nonce and one too far in the future", async () => {
    for (const nowMs of [Date.now() - 3 * 86_400_000, Date.now() + 2 * 86_400_000]) {
      const prepared = await withdraw({ nowMs })
      expectRefused(await submit(prepared, await signTyped(alice, prepared.typedData)), /Invalid nonce/)
    }
  })

  it("refuses a duplicate nonce (the same signed transfer twice)", async () => {
    const prepared = await withdraw()
    const signature = await signTyped(alice, prepared.typedData)
    expect((await submit(prepared, signature))._tag).toBe("Acknowledged")
    expectRefused(await submit(prepared, signature), `Invalid nonce: duplicate nonce ${prepared.nonce}`)
  })

  it("refuses a wrong signer: the recovered address is a stranger", async () => {
    const prepared = await withdraw()
    const stranger = addressOf(STRANGER_KEY)
    expectRefused(
      await submit(prepared, await signTyped(STRANGER_KEY, prepared.typedData)),
      `L1 error: User or API Wallet ${stranger} does not exist.`,
    )
  })

  it("refuses a signature made under another domain chain id than the action's signatureChainId", async () => {
    const prepared = await withdraw()
    const signature = await signTyped(alice, withChainId(prepared.typedData, 1))
    expectRefused(await submit(prepared, signature), /User or API Wallet 0x[0-9a-f]{40} does not exist/)
  })

  it("hashes the amount as sent: signed 12.5 but sent 12.50 is refused; 12.50 signed and sent is the same value", async () => {
    const before = sim.control.balance(ALICE)
    const prepared = await withdraw({ amount: 12_500_000n })
    const signed = await signTyped(alice, prepared.typedData)
    const trailing = withMessage(prepared.typedData, { amount: "12.50" })
    expectRefused(await submit({ typedData: trailing }, signed), /does not exist/)
    expect(sim.control.balance(ALICE)).toBe(before)
    // A non-canonical spelling signed as sent is accepted (the Python SDK sends "1.0"); we never build one.
    const second = await withdraw({ amount: 12_500_000n })
    const spelled = withMessage(second.typedData, { amount: "12.50" })
    expect((await submit({ typedData: spelled }, await signTyped(alice, spelled)))._tag).toBe("Acknowledged")
    expect(sim.control.balance(ALICE)).toBe(before - 12_500_000n)
  })

  it("refuses a mixed-case destination signed as such (the venue hashes the lowercase address)", async () => {
    const prepared = await withdraw({ destination: addressOf(key(6)) })
    const mixed = withMessage(prepared.typedData, { destination: privateKeyToAccount(key(6)).address })
    const signature = await signTyped(alice, mixed)
    // Our adapter never relays it: a destination that is not lowercase is rejected before sending.
    const rejected = await runEither(hl.submitWithdrawal({ address: ALICE, typedData: mixed, signature }))
    expect(rejected).toMatchObject({ _tag: "Left", left: { _tag: "TypedDataRejected" } })
    // Sent raw, the venue recovers a stranger from the lowercased field.
    const res = await fetch(`${sim.url}/exchange`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        action: { type: "withdraw3", signatureChainId: "0xa4b1", ...mixed.message },
        nonce: prepared.nonce,
        signature: rsv(signature),
      }),
    })
    expect(await res.json()).toMatchObject({ status: "err", response: expect.stringMatching(/does not exist/) })
  })

  it("keeps the 100-highest-nonce rule (set size 3 here): a nonce below the smallest kept is too low", async () => {
    const small = await startSimulatorOn(chain, "hyperliquid", { nonceSetSize: 3 })
    try {
      const adapter = await buildAdapter(
        makeHyperliquidAdapter(hyperliquidSettings({ venueId: "hl3", apiUrl: small.url, decimals: 6 })),
      )
      small.control.credit(BOB, 100n * USDC)
      const base = Date.now()
      const send = async (nowMs: number) => {
        const p = await run(
          adapter.buildWithdrawal({ address: BOB, amountBaseUnits: USDC, to: "wallet", destination: BOB, nowMs }),
        )
        return run(
          adapter.submitWithdrawal({
            address: BOB,
            typedData: p.typedData,
            signature: await signTyped(bob, p.typedData),
          }),
        )
      }
      for (const offset of [10, 30, 20]) expect((await send(base + offset))._tag).toBe("Acknowledged")
      // Not yet used but below the smallest of the three highest (base+10):
      expectRefused(await send(base + 5), `Invalid nonce: nonce too low ${base + 5} < ${base + 10}`)
      expect((await send(base + 15))._tag).toBe("Acknowledged")
      // base+10 was evicted by base+15; reusing base+20 is a duplicate.
      expectRefused(await send(base + 20), /duplicate nonce/)
      expectRefused(await send(base + 12), /nonce too low/)
      await small.control.payoutsSettled()
    } finally {
      await small.stop()
    }
  })

  it("refuses an action whose time differs from the request nonce (raw request)", async () => {
    const prepared = await withdraw()
    const signature = await signTyped(alice, prepared.typedData)
    const res = await fetch(`${sim.url}/exchange`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        action: { type: "withdraw3", signatureChainId: "0xa4b1", ...prepared.typedData.message },
        nonce: prepared.nonce + 1,
        signature: rsv(signature),
      }),
    })
    expect(await res.json()).toMatchObject({ status: "err", response: expect.stringMatching(/Invalid nonce/) })
  })

  it("classifies a refusal fault as Refused and applies nothing", async () => {
    const before = sim.control.balance(ALICE)
    sim.control.refuseNext(1, { message: "Insufficient balance for withdrawal." })
    const prepared = await withdraw()
    expectRefused(
      await submit(prepared, await signTyped(alice, prepared.typedData)),
      "Insufficient balance for withdrawal.",
    )
    expect(sim.control.balance(ALICE)).toBe(before)
  })

  it("timeout after applying → Unknown, then the evidence is Found", async () => {
    const before = sim.control.balance(ALICE)
    sim.control.timeoutNext(1, { holdMs: HOLD_MS, apply: true })
    const prepared = await withdraw({ amount: 3n * USDC })
    const outcome = await submit(prepared, await signTyped(alice, prepared.typedData))
    expect(outcome._tag).toBe("Unknown")
    expect(sim.control.balance(ALICE)).toBe(before - 3n * USDC)
    const evidence = await run(
      hl.findEvidence({ address: ALICE, nonce: prepared.nonce, amountBaseUnits: 3n * USDC, destination: ALICE }),
    )
    expect(evidence._tag).toBe("Found")
  })

  it("timeout without applying → Unknown, then NotFound with the replay horizon", async () => {
    const before = sim.control.balance(ALICE)
    sim.control.timeoutNext(1, { holdMs: HOLD_MS, apply: false })
    const prepared = await withdraw({ amount: 4n * USDC })
    expect((await submit(prepared, await signTyped(alice, prepared.typedData)))._tag).toBe("Unknown")
    expect(sim.control.balance(ALICE)).toBe(before)
    const evidence = await run(
      hl.findEvidence({ address: ALICE, nonce: prepared.nonce, amountBaseUnits: 4n * USDC, destination: ALICE }),
    )
    expect(evidence).toMatchObject({ _tag: "NotFound", replayableUntilMs: prepared.nonce + 2 * 86_400_000 })
  })

  it("accept then answer an error (HTTP 500) → Unknown, then Found", async () => {
    sim.control.acceptThenErrorNext(1)
    const prepared = await withdraw({ amount: 5n * USDC, to: "signer" })
    expect((await submit(prepared, await signTyped(alice, prepared.typedData)))._tag).toBe("Unknown")
    expect(
      await run(
        hl.findEvidence({ address: ALICE, nonce: prepared.nonce, amountBaseUnits: 5n * USDC, destination: ALICE }),
      ),
    ).toMatchObject({ _tag: "Found" })
  })

  it("a read fault makes the balance unavailable and the evidence Unavailable", async () => {
    sim.control.refuseNext(1, { scope: "read" })
    expect(await runEither(hl.withdrawable(ALICE))).toMatchObject({ _tag: "Left", left: { _tag: "VenueUnavailable" } })
    sim.control.timeoutNext(1, { holdMs: HOLD_MS, apply: false, scope: "read" })
    expect(
      (await run(hl.findEvidence({ address: ALICE, nonce: 1, amountBaseUnits: 1n, destination: ALICE })))._tag,
    ).toBe("Unavailable")
  })

  it("the control endpoint drives the same faults over HTTP", async () => {
    const res = await fetch(`${sim.url}/_control`, {
      method: "POST",
      body: JSON.stringify({ op: "credit", user: BOB, amount: "1000000" }),
    })
    expect(res.status).toBe(200)
    expect(sim.control.balance(BOB)).toBeGreaterThanOrEqual(USDC)
    await fetch(`${sim.url}/_control`, { method: "POST", body: JSON.stringify({ op: "refuse", count: 1 }) })
    const prepared = await withdraw()
    expectRefused(await submit(prepared, await signTyped(alice, prepared.typedData)), "Simulated refusal")
  })
})

describe("Aster simulator through the adapter (anvil 42161)", () => {
  let chain: VenueChain
  let sim: VenueSimulator
  let aster: VenueAdapter
  const carol = key(5)
  const dave = key(7)
  const CAROL = addressOf(carol)
  const DAVE = addressOf(dave)
  const carolAgentKey = generatePrivateKey()
  const CAROL_AGENT = addressOf(carolAgentKey)
  const FEE = 500_000n

  const register = async (user: Hex, agent: Address, nowMicros = Date.now() * 1000, signer = user) => {
    const approval = aster.agentApproval
    if (approval === undefined) throw new Error("Aster adapters approve agents")
    const prepared = await run(approval.agentApprovalTypedData({ user: addressOf(user), agent, nowMicros }))
    const signature = await signTyped(signer, prepared.typedData)
    return {
      prepared,
      outcome: await run(
        approval.registerAgent({ address: addressOf(user), typedData: prepared.typedData, signature }),
      ),
    }
  }

  beforeAll(async () => {
    chain = await startVenueChain("aster", 42161)
    sim = await startSimulatorOn(chain, "aster", { withdrawFee: FEE })
    aster = await buildAdapter(
      makeAsterAdapter(
        asterSettings({
          venueId: "aster",
          apiUrl: sim.url,
          decimals: 6,
          asset: "USDC",
          withdrawChainId: 42161,
          requestTimeoutMs: TIMEOUT_MS,
          agents: agentsFromKeys(new Map([[CAROL, Redacted.make(carolAgentKey)]])),
        }),
      ),
    )
    expect((await register(carol, CAROL_AGENT)).outcome._tag).toBe("Acknowledged")
    await depositThroughMarginMock(chain, "aster", carol, 500n * USDC)
    await sim.control.syncDeposits()
  })
  afterAll(async () => {
    await sim?.stop()
    await chain?.anvil.stop()
  })

  const withdraw = (o: { amount?: bigint; nowMs?: number; destination?: Address; to?: "wallet" | "signer" } = {}) =>
    run(
      aster.buildWithdrawal({
        address: CAROL,
        amountBaseUnits: o.amount ?? 2n * USDC,
        to: o.to ?? "signer",
        destination: o.destination ?? CAROL,
        nowMs: o.nowMs ?? Date.now(),
      }),
    )
  const submit = (typedData: TypedDataObject, signature: Hex) =>
    run(aster.submitWithdrawal({ address: CAROL, typedData, signature }))

  it("registers the agent: Message{msg}, signatureChainId 42161, every permission false, 365 days", async () => {
    const [agent] = sim.control.agents(CAROL)
    expect(agent).toMatchObject({
      agent: CAROL_AGENT,
      name: "settler",
      canSpotTrade: false,
      canPerpTrade: false,
      canWithdraw: false,
      ipWhitelist: "",
    })
    const days = ((agent?.expiresAtMs ?? 0) - Date.now()) / 86_400_000
    expect(days).toBeGreaterThan(364.9)
    expect(days).toBeLessThanOrEqual(365)
  })

  it("refuses an agent approval whose nonce is more than 10 s old (and one 10 s ahead)", async () => {
    const agent = addressOf(generatePrivateKey())
    const old = await register(dave, agent, (Date.now() - 11_000) * 1000)
    expectRefused(old.outcome, "Nonce Expired", "-4225")
    const ahead = await register(dave, agent, (Date.now() + 11_000) * 1000)
    expectRefused(ahead.outcome, "Nonce Expired", "-4225")
    expect(sim.control.agents(DAVE)).toEqual([])
    // Fresh, it goes through.
    expect((await register(dave, agent)).outcome._tag).toBe("Acknowledged")
  })

  it("refuses an agent approval signed by someone else or under another domain chain id", async () => {
    const agent = addressOf(generatePrivateKey())
    expectRefused((await register(dave, agent, Date.now() * 1000, STRANGER_KEY)).outcome, /Signature/, "-1022")
    const approval = aster.agentApproval
    if (approval === undefined) throw new Error("unreachable")
    const prepared = await run(approval.agentApprovalTypedData({ user: DAVE, agent, nowMicros: Date.now() * 1000 }))
    const signature = await signTyped(dave, withChainId(prepared.typedData, 56))
    expectRefused(
      await run(approval.registerAgent({ address: DAVE, typedData: prepared.typedData, signature })),
      /Signature/,
      "-1022",
    )
  })

  it("credits a deposit made through the vault mock; withdrawable via the agent-signed user-withdraw-info", async () => {
    expect((await run(aster.withdrawable(CAROL))).amountBaseUnits).toBe(500n * USDC)
    // Without an agent for the account the adapter cannot even ask.
    expect(await runEither(aster.withdrawable(DAVE))).toMatchObject({
      _tag: "Left",
      left: { _tag: "AgentUnavailable" },
    })
  })

  it("pays a to: signer withdrawal on chain (amount less the quoted fee) with the fee signed", async () => {
    const before = await tokenBalance(chain, CAROL)
    const prepared = await withdraw({ amount: 12_500_000n })
    expect(prepared.typedData.message).toMatchObject({ amount: "12.5", fee: "0.5", "destination Chain": "Arbitrum" })
    const outcome = await submit(prepared.typedData, await signTyped(carol, prepared.typedData))
    expect(outcome._tag).toBe("Acknowledged")
    await sim.control.payoutsSettled()
    expect((await tokenBalance(chain, CAROL)) - before).toBe(12_500_000n - FEE)
    const evidence = await run(
      aster.findEvidence({ address: CAROL, nonce: prepared.nonce, amountBaseUnits: 12_500_000n, destination: CAROL }),
    )
    expect(evidence).toMatchObject({ _tag: "Found", venueRef: outcome._tag === "Acknowledged" ? outcome.venueRef : "" })
  })

  it("refuses a stale withdrawal nonce (more than an hour from the request nonce)", async () => {
    const prepared = await withdraw({ nowMs: Date.now() - 2 * 3_600_000 })
    expectRefused(
      await submit(prepared.typedData, await signTyped(carol, prepared.typedData)),
      "Nonce Expired",
      "-4225",
    )
  })

  it("refuses a duplicate withdrawal nonce", async () => {
    const prepared = await withdraw()
    const signature = await signTyped(carol, prepared.typedData)
    expect((await submit(prepared.typedData, signature))._tag).toBe("Acknowledged")
    expectRefused(await submit(prepared.typedData, signature), "Nonce Duplicated", "-4225")
  })

  it("refuses a wrong signer, a wrong domain chain id and an amount sent other than signed", async () => {
    const before = sim.control.balance(CAROL)
    const prepared = await withdraw({ amount: 12_500_000n })
    expectRefused(
      await submit(prepared.typedData, await signTyped(STRANGER_KEY, prepared.typedData)),
      /Signature/,
      "-1022",
    )
    expectRefused(
      await submit(prepared.typedData, await signTyped(carol, withChainId(prepared.typedData, 56))),
      /Signature/,
      "-1022",
    )
    const signed = await signTyped(carol, prepared.typedData)
    expectRefused(await submit(withMessage(prepared.typedData, { amount: "12.50" }), signed), /Signature/, "-1022")
    expect(sim.control.balance(CAROL)).toBe(before)
  })

  it("classifies refusal, timeout (applied or not) and accept-then-error, and reconciles by evidence", async () => {
    sim.control.refuseNext(1)
    const refused = await withdraw({ amount: 3n * USDC })
    expectRefused(
      await submit(refused.typedData, await signTyped(carol, refused.typedData)),
      "Simulated refusal",
      "-1020",
    )

    sim.control.timeoutNext(1, { holdMs: HOLD_MS, apply: true })
    const applied = await withdraw({ amount: 4n * USDC })
    expect((await submit(applied.typedData, await signTyped(carol, applied.typedData)))._tag).toBe("Unknown")
    const found = await run(
      aster.findEvidence({ address: CAROL, nonce: applied.nonce, amountBaseUnits: 4n * USDC, destination: CAROL }),
    )
    expect(found._tag).toBe("Found")

    sim.control.timeoutNext(1, { holdMs: HOLD_MS, apply: false })
    const lost = await withdraw({ amount: 6n * USDC })
    expect((await submit(lost.typedData, await signTyped(carol, lost.typedData)))._tag).toBe("Unknown")
    expect(
      await run(
        aster.findEvidence({ address: CAROL, nonce: lost.nonce, amountBaseUnits: 6n * USDC, destination: CAROL }),
      ),
    ).toMatchObject({ _tag: "NotFound", replayableUntilMs: Math.floor(lost.nonce / 1000) + 3_610_000 })

    sim.control.acceptThenErrorNext(1)
    const unknown = await withdraw({ amount: 7n * USDC })
    expect((await submit(unknown.typedData, await signTyped(carol, unknown.typedData)))._tag).toBe("Unknown")
    expect(
      (
        await run(
          aster.findEvidence({ address: CAROL, nonce: unknown.nonce, amountBaseUnits: 7n * USDC, destination: CAROL }),
        )
      )._tag,
    ).toBe("Found")
  })
})
