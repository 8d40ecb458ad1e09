/**
 * The taker's flow (src/Client/TakerFlow.ts) against a LYING API: whatever the API proposes on POST /v1/takes, a
 * proposal that differs from the intent or the reviewed escrows makes the wallet sign nothing and the client send
 * nothing. The honest API gets exactly the checked signatures. (Lock finality and the pay key against real chains:
 * test/integration/takes-v2.test.ts; the building blocks: client-taker-v2, client-flow-v2.)
 */
import { type Address, getAddress, type Hex, recoverTypedDataAddress } from "viem"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { describe, expect, it } from "vitest"
import type { ChainReader } from "../../src/Client/EscrowReadsV2.ts"
import type { ProposedSignItem, TakerConfig, TakerIntent } from "../../src/Client/TakerChecks.ts"
import { authorizePayment, cancelFills, startTake, type TakeAnswer, type TakerApi } from "../../src/Client/TakerFlow.ts"
import { type FillV2, PERPS_DEX } from "../../src/Domain/EscrowTypedDataV2.ts"
import { parseWireFillV2 } from "../../src/Domain/WireFillV2.ts"
import { honestFills, lockFieldsOf, marginMove, proposeTake } from "../support/TakeProposalV2.ts"

const TAKER_CHAIN = 42161
const MAKER_CHAIN = 999
const addr = (n: number) => getAddress(`0x${n.toString(16).padStart(40, "0")}`)
const config: TakerConfig = {
  chains: {
    [TAKER_CHAIN]: { escrow: addr(0xe1), token: addr(0xc1), tokenName: "USD Coin", tokenVersion: "1" },
    [MAKER_CHAIN]: { escrow: addr(0xe2), token: addr(0xc2) },
  },
  minClaimWindowSeconds: 600n,
}
const NOW = 1_800_000_000n
const PAY_BY_MAX = 120n
const payer = privateKeyToAccount(generatePrivateKey())
const intentBase = {
  takerChainId: TAKER_CHAIN,
  makerChainId: MAKER_CHAIN,
  payer: payer.address,
  recipient: addr(0xa2),
  amountIn: 10_000_000n,
  minOut: 9_900_000n,
  maxParts: 8,
  dex: PERPS_DEX,
  toMargin: true,
}
const request = { clientTakeId: "t-1", from: "aster", to: "hyperliquid", intent: intentBase }

/** What an honest API would propose for the pay key the client sent. */
const honest = (payKey: Address) => {
  const intent: TakerIntent = { ...intentBase, payKey, maxPayBy: NOW + PAY_BY_MAX - 5n }
  const fills = honestFills(intent, config, { parts: 2, owner: addr(0xb1), payee: addr(0xb2) })
  return proposeTake(intent, config, fills, { nonce: 0n, deadline: intent.maxPayBy })
}

const refill = (items: ReadonlyArray<ProposedSignItem>, i: number, change: (f: FillV2) => FillV2) =>
  items.map((item, j) =>
    j === i
      ? marginMove(change(parseWireFillV2((item.typed_data as { message: unknown }).message)), `${item.fill_id}`)
      : item,
  )

/** An API whose answer to POST /v1/takes is `propose(the pay key the client named)`; records every call. */
const fakeApi = (propose: (payKey: Address) => ReadonlyArray<ProposedSignItem>) => {
  const posted: Array<Readonly<Record<string, unknown>>> = []
  const created: Array<Readonly<Record<string, unknown>>> = []
  const answer = (toSign: ReadonlyArray<ProposedSignItem>): TakeAnswer => ({
    take: { id: "00000000-0000-4000-8000-00000000000a", state: "reserved" },
    to_sign: toSign,
  })
  const api: TakerApi = {
    createTake: async (b) => {
      created.push(b)
      return answer(propose(b.pay_key as Address))
    },
    postSignatures: async (_id, b) => {
      posted.push(b)
      return answer([])
    },
  }
  return { api, posted, created }
}

/** The payer's wallet, counting its prompts. */
const countingWallet = () => {
  const signed: Array<unknown> = []
  return {
    signed,
    wallet: {
      signTypedData: ((td: Parameters<typeof payer.signTypedData>[0]) => {
        signed.push(td)
        return payer.signTypedData(td)
      }) as typeof payer.signTypedData,
    },
  }
}

const options = { now: () => NOW, payByMaxSeconds: PAY_BY_MAX }
const other = addr(0xdead)

const lies: ReadonlyArray<{ name: string; propose: (payKey: Address) => ReadonlyArray<ProposedSignItem> }> = [
  { name: "Fills naming another pay key", propose: () => honest(other) },
  { name: "another recipient", propose: (k) => refill(honest(k), 1, (f) => ({ ...f, recipient: other })) },
  { name: "more amount in", propose: (k) => refill(honest(k), 2, (f) => ({ ...f, amountIn: f.amountIn + 1n })) },
  { name: "payBy past PAY_BY_MAX", propose: (k) => refill(honest(k), 1, (f) => ({ ...f, payBy: NOW + 121n })) },
  {
    name: "a permit outliving payBy's bound",
    propose: (k) => {
      const [permit, ...rest] = honest(k)
      const typed = JSON.parse(JSON.stringify(permit!.typed_data)) as { message: { deadline: string } }
      typed.message.deadline = (NOW + PAY_BY_MAX + 3_600n).toString()
      return [{ ...permit!, typed_data: typed }, ...rest]
    },
  },
  {
    name: "another taker escrow",
    propose: (k) => refill(honest(k), 1, (f) => ({ ...f, takerEscrow: other })),
  },
  {
    name: "two digests swapped",
    propose: (k) => {
      const t = honest(k)
      return [t[0]!, { ...t[1]!, digest: t[2]!.digest }, { ...t[2]!, digest: t[1]!.digest }]
    },
  },
  {
    name: "a permit to another spender",
    propose: (k) => {
      const [permit, ...rest] = honest(k)
      const typed = JSON.parse(JSON.stringify(permit!.typed_data)) as { message: { spender: string } }
      typed.message.spender = other
      return [{ ...permit!, typed_data: typed }, ...rest]
    },
  },
  {
    name: "an extra pay_authorization item at creation",
    propose: (k) => [...honest(k), { kind: "pay_authorization", signer: k, typed_data: {} }],
  },
  { name: "no fill ids", propose: (k) => honest(k).map(({ fill_id: _f, ...rest }) => rest) },
]

describe("the taker's flow: create → check → sign → submit", () => {
  it("an honest proposal: a fresh pay key named, the wallet signs each checked Fill and the permit, all submitted", async () => {
    const { api, posted, created } = fakeApi(honest)
    const { wallet, signed } = countingWallet()
    const result = await startTake(api, config, wallet, request, options)
    expect(result.ok).toBe(true)
    if (!result.ok) return
    expect(created[0]).toMatchObject({
      amount_in: "10000000",
      min_out: "9900000",
      pay_key: result.handle.payKey.address,
    })
    expect(signed).toHaveLength(3)
    expect(posted).toHaveLength(1)
    const { permit, fills } = posted[0] as { permit: Hex; fills: Array<{ fill_id: string; signature: Hex }> }
    expect(fills.map((f) => f.fill_id)).toEqual(result.handle.take.fills.map((f) => f.fillId))
    for (const [i, f] of fills.entries()) {
      const typed = result.handle.take.fills[i]!.typedData
      expect(await recoverTypedDataAddress({ ...typed, signature: f.signature })).toBe(payer.address)
    }
    expect(await recoverTypedDataAddress({ ...result.handle.take.permit, signature: permit })).toBe(payer.address)
    expect(result.handle.payTakeSigned).toBe(false)
    // Each take gets its own pay key.
    const again = await startTake(fakeApi(honest).api, config, countingWallet().wallet, request, options)
    expect(again.ok && again.handle.payKey.address).not.toBe(result.handle.payKey.address)
  })

  it("a fill cancelled before any authorisation: the pay key never signs PayTake for the take", async () => {
    const { api, posted } = fakeApi(honest)
    const started = await startTake(api, config, countingWallet().wallet, request, options)
    if (!started.ok) throw new Error("the honest proposal was refused")
    const { handle } = started
    expect(handle.cancelSigned).toBe(false)
    // Before any PayTake a cancel needs no chain read; the chains here answer nothing.
    const noChain = {} as ChainReader
    const cancelled = await cancelFills(api, noChain, handle, [0])
    expect(cancelled.cancelled).toEqual([handle.take.fills[0]!.fillId])
    expect(handle.cancelSigned).toBe(true)
    const sent = posted.length
    const authorised = await authorizePayment(api, noChain, handle)
    expect(authorised).toMatchObject({ ok: false, retry: false, problems: [{ code: "cancelled" }] })
    expect(handle.payTakeSigned).toBe(false)
    expect(posted).toHaveLength(sent)
  })

  it("a cancel given while the authorisation reads the locks: no PayTake is signed or sent", async () => {
    const { api, posted } = fakeApi(honest)
    const started = await startTake(api, config, countingWallet().wallet, request, options)
    if (!started.ok) throw new Error("the honest proposal was refused")
    const { handle } = started
    const byDigest = new Map(handle.take.fills.map((f) => [f.digest, f.fill]))
    let cancel: Promise<unknown> | undefined
    // The maker chain's reads finish only after a cancel of fill 0 went out (a cancel button pressed meanwhile).
    const makerChain = {
      getChainId: async () => MAKER_CHAIN,
      getBlock: async () => ({ number: 100n, timestamp: NOW }),
      readContract: async ({ args }: { args: [Hex] }) => {
        cancel ??= cancelFills(api, {} as ChainReader, handle, [0])
        await cancel
        return { ...lockFieldsOf(byDigest.get(args[0])!), state: 1 }
      },
    } as unknown as ChainReader
    const authorised = await authorizePayment(api, makerChain, handle)
    expect(authorised).toMatchObject({ ok: false, retry: false, problems: [{ code: "cancelled" }] })
    expect(handle.cancelSigned).toBe(true)
    expect(handle.payTakeSigned).toBe(false)
    expect(posted.filter((p) => "pay_authorization" in p)).toEqual([])
    expect(posted.filter((p) => "cancels" in p)).toHaveLength(1)
  })

  it("an authorisation marked while a cancel is being decided: the early cancel is refused, nothing sent", async () => {
    const { api, posted } = fakeApi(honest)
    const started = await startTake(api, config, countingWallet().wallet, request, options)
    if (!started.ok) throw new Error("the honest proposal was refused")
    const { handle } = started
    const sent = posted.length
    const pending = cancelFills(api, {} as ChainReader, handle, [0])
    handle.payTakeSigned = true // what authorizePayment does before it signs
    const result = await pending
    expect(result).toEqual({
      cancelled: [],
      refused: [{ fillId: handle.take.fills[0]!.fillId, reason: "payment_authorised" }],
    })
    expect(handle.cancelSigned).toBe(false)
    expect(posted).toHaveLength(sent)
  })

  it("with its own taker-chain endpoint, the client holds the permit to the payer's current nonce", async () => {
    const reads: Array<unknown> = []
    const takerChain = (chainId: number) =>
      ({
        getChainId: async () => chainId,
        getBlock: async () => ({ number: 7n, timestamp: NOW }),
        readContract: async (call: unknown) => {
          reads.push(call)
          return 0n
        },
      }) as unknown as ChainReader
    const withChain = { ...options, takerChain: takerChain(TAKER_CHAIN) }
    const ok = await startTake(fakeApi(honest).api, config, countingWallet().wallet, request, withChain)
    expect(ok.ok).toBe(true)
    expect(reads[0]).toMatchObject({ address: config.chains[TAKER_CHAIN]!.token, functionName: "nonces" })
    expect(reads[0]).toMatchObject({ args: [payer.address], blockNumber: 7n })
    // A permit with a later nonce would turn valid only after others are spent: nothing signed, nothing sent.
    const ahead = (k: Address) => {
      const [permit, ...rest] = honest(k)
      const typed = JSON.parse(JSON.stringify(permit!.typed_data)) as { message: { nonce: string } }
      typed.message.nonce = "1"
      return [{ ...permit!, typed_data: typed }, ...rest]
    }
    const { api, posted } = fakeApi(ahead)
    const { wallet, signed } = countingWallet()
    const refused = await startTake(api, config, wallet, request, withChain)
    expect(!refused.ok && refused.problems.map((p) => p.field)).toEqual(["nonce"])
    expect([signed, posted]).toEqual([[], []])
    // An endpoint of another chain is not read for the nonce: the take stops before anything is signed.
    const wrong = fakeApi(honest)
    await expect(
      startTake(wrong.api, config, wallet, request, { ...options, takerChain: takerChain(MAKER_CHAIN) }),
    ).rejects.toThrow(/chain 999, not 42161/)
    expect([signed, wrong.posted]).toEqual([[], []])
  })

  for (const lie of lies) {
    it(`a lying API (${lie.name}): the wallet signs nothing, nothing is sent`, async () => {
      const { api, posted } = fakeApi(lie.propose)
      const { wallet, signed } = countingWallet()
      const result = await startTake(api, config, wallet, request, options)
      expect(result.ok).toBe(false)
      expect(result.ok ? [] : result.problems.length).toBeGreaterThan(0)
      expect(signed).toEqual([])
      expect(posted).toEqual([])
    })
  }
})
