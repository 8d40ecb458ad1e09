/**
 * The taker client's checks (src/Client/TakerChecks.ts, TakerLocks.ts, TakerCancel.ts) against a LYING API and a
 * lying chain endpoint: every lie must leave the client with nothing to sign. The chain is a fake EIP-1193 provider
 * (viem custom transport) whose answers depend on the block asked for, so a lock that exists only at `latest` is
 * told apart from a final one; test/unit/client-flow-v2.test.ts does the same against real anvil chains.
 */
import { readFileSync } from "node:fs"
import path from "node:path"
import fc from "fast-check"
import {
  type Address,
  createPublicClient,
  custom,
  decodeFunctionData,
  encodeFunctionResult,
  getAddress,
  type Hex,
  hashTypedData,
  keccak256,
  recoverAddress,
  recoverTypedDataAddress,
  toHex,
} from "viem"
import { privateKeyToAccount } from "viem/accounts"
import { describe, expect, it } from "vitest"
import { escrowV2ReadAbi, type LockState, type PaymentState } from "../../src/Client/EscrowReadsV2.ts"
import { decideCancelFill, signCancelFill } from "../../src/Client/TakerCancel.ts"
import {
  type CheckedTake,
  checkTakeProposal,
  type ProposedSignItem,
  type TakerConfig,
  type TakerIntent,
  type TakerProblem,
} from "../../src/Client/TakerChecks.ts"
import { checkLocksFinal, type FinalLocks, signPayTake } from "../../src/Client/TakerLocks.ts"
import {
  cancelFillDigest,
  type FillV2,
  fillDigest,
  PERPS_DEX,
  payTakeDigest,
} from "../../src/Domain/EscrowTypedDataV2.ts"
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
const payKey = privateKeyToAccount(keccak256(toHex("pay key")))
const NOW = 1_800_000_000n
const intentOf = (over: Partial<TakerIntent> = {}): TakerIntent => ({
  takerChainId: TAKER_CHAIN,
  makerChainId: MAKER_CHAIN,
  payer: addr(0xa1),
  recipient: addr(0xa2),
  amountIn: 10_000_000n,
  minOut: 9_900_000n,
  maxParts: 8,
  payKey: payKey.address,
  maxPayBy: NOW + 120n,
  dex: PERPS_DEX,
  toMargin: true,
  ...over,
})
const MAKER = { owner: addr(0xb1), payee: addr(0xb2) }

const honest = (parts: number, intent = intentOf()) => {
  const fills = honestFills(intent, config, { parts, ...MAKER })
  return { intent, fills, toSign: proposeTake(intent, config, fills, { nonce: 0n, deadline: intent.maxPayBy }) }
}

const clone = <T>(x: T): T => JSON.parse(JSON.stringify(x)) as T
/** The liar rewrites a Fill and claims its (new) digest consistently: only the semantic checks can catch it. */
const refill = (items: ReadonlyArray<ProposedSignItem>, i: number, change: (f: FillV2) => FillV2) =>
  items.map((item, j) =>
    j === i
      ? marginMove(change(parseWireFillV2((item.typed_data as { message: unknown }).message)), `${item.fill_id}`)
      : item,
  )
// biome-ignore lint/suspicious/noExplicitAny: the wire JSON a liar edits
type Wire = Record<string, any>
const retype = (items: ReadonlyArray<ProposedSignItem>, i: number, change: (t: Wire) => void) =>
  items.map((item, j) => {
    if (j !== i) return item
    const typed = clone(item.typed_data) as Wire
    change(typed)
    return { ...item, typed_data: typed }
  })

const has = (problems: ReadonlyArray<TakerProblem>, code: TakerProblem["code"], field?: string) =>
  problems.some((p) => p.code === code && (field === undefined || p.field === field))

// ------------------------------------------------------------------ the proposal check

interface Lie {
  readonly name: string
  readonly apply: (toSign: ReadonlyArray<ProposedSignItem>, fill: number) => ReadonlyArray<ProposedSignItem>
  readonly code: TakerProblem["code"]
  readonly field?: string
}

const other = addr(0xdead)
// Item 0 is the permit; `fill` is the to_sign index of a margin_move (≥ 1).
const lies: ReadonlyArray<Lie> = [
  {
    name: "another pay key",
    apply: (t, i) => refill(t, i, (f) => ({ ...f, payKey: other })),
    code: "mismatch",
    field: "payKey",
  },
  {
    name: "another recipient",
    apply: (t, i) => refill(t, i, (f) => ({ ...f, recipient: other })),
    code: "mismatch",
    field: "recipient",
  },
  {
    name: "another payer",
    apply: (t, i) => refill(t, i, (f) => ({ ...f, payer: other })),
    code: "mismatch",
    field: "payer",
  },
  {
    name: "more amountIn",
    apply: (t, i) => refill(t, i, (f) => ({ ...f, amountIn: f.amountIn + 1n })),
    code: "totals",
    field: "amountIn",
  },
  {
    name: "less amountOut",
    apply: (t, i) => refill(t, i, (f) => ({ ...f, amountOut: f.amountOut - 200_000n })),
    code: "totals",
    field: "amountOut",
  },
  {
    name: "payBy past the bound",
    apply: (t, i) => refill(t, i, (f) => ({ ...f, payBy: NOW + 121n })),
    code: "timing",
    field: "payBy",
  },
  {
    name: "payBy already passed",
    apply: (t, i) => refill(t, i, (f) => ({ ...f, payBy: NOW })),
    code: "timing",
    field: "payBy",
  },
  {
    name: "another taker escrow",
    apply: (t, i) => refill(t, i, (f) => ({ ...f, takerEscrow: other })),
    code: "mismatch",
    field: "takerEscrow",
  },
  {
    name: "another maker escrow",
    apply: (t, i) => refill(t, i, (f) => ({ ...f, makerEscrow: other })),
    code: "mismatch",
    field: "makerEscrow",
  },
  {
    name: "another maker chain",
    apply: (t, i) => refill(t, i, (f) => ({ ...f, makerChainId: 1n })),
    code: "mismatch",
    field: "makerChainId",
  },
  {
    name: "another taker chain",
    apply: (t, i) => refill(t, i, (f) => ({ ...f, takerChainId: 1n })),
    code: "mismatch",
    field: "takerChainId",
  },
  {
    name: "spot instead of perps",
    apply: (t, i) => refill(t, i, (f) => ({ ...f, dex: 4294967295 })),
    code: "mismatch",
    field: "dex",
  },
  {
    name: "to the wallet",
    apply: (t, i) => refill(t, i, (f) => ({ ...f, toMargin: false })),
    code: "mismatch",
    field: "toMargin",
  },
  {
    name: "no claim window",
    apply: (t, i) => refill(t, i, (f) => ({ ...f, makerExpiry: f.takerExpiry + 599n })),
    code: "timing",
    field: "makerExpiry",
  },
  {
    name: "taker expiry at payBy",
    apply: (t, i) => refill(t, i, (f) => ({ ...f, takerExpiry: f.payBy })),
    code: "timing",
    field: "takerExpiry",
  },
  {
    name: "zero hashlock",
    apply: (t, i) => refill(t, i, (f) => ({ ...f, hashlock: `0x${"00".repeat(32)}` })),
    code: "mismatch",
    field: "hashlock",
  },
  {
    name: "a digest that is not the Fill's",
    apply: (t, i) => t.map((x, j) => (j === i ? { ...x, digest: keccak256(toHex("other")) } : x)),
    code: "digest",
  },
  { name: "no digest", apply: (t, i) => t.map((x, j) => (j === i ? { ...x, digest: undefined } : x)), code: "digest" },
  {
    name: "v1 domain",
    apply: (t, i) =>
      retype(t, i, (d) => {
        d.domain.version = "1"
      }),
    code: "typed_data",
    field: "domain",
  },
  {
    name: "a salt in the domain",
    apply: (t, i) =>
      retype(t, i, (d) => {
        d.domain.salt = `0x${"11".repeat(32)}`
      }),
    code: "typed_data",
    field: "domain",
  },
  {
    name: "the domain of another contract",
    apply: (t, i) =>
      retype(t, i, (d) => {
        d.domain.verifyingContract = other
      }),
    code: "typed_data",
    field: "domain",
  },
  {
    name: "two Fill fields swapped in the types",
    apply: (t, i) =>
      retype(t, i, (d) => {
        const f = d.types.Fill
        ;[f[1], f[2]] = [f[2], f[1]]
      }),
    code: "typed_data",
    field: "types",
  },
  {
    name: "another primary type",
    apply: (t, i) =>
      retype(t, i, (d) => {
        d.primaryType = "Permit"
      }),
    code: "typed_data",
    field: "primaryType",
  },
  {
    name: "an extra message field",
    apply: (t, i) =>
      retype(t, i, (d) => {
        d.message.note = "x"
      }),
    code: "malformed",
  },
  {
    name: "a uint64 out of range",
    apply: (t, i) =>
      retype(t, i, (d) => {
        d.message.payBy = (2n ** 64n).toString()
      }),
    code: "malformed",
  },
  { name: "another signer", apply: (t, i) => t.map((x, j) => (j === i ? { ...x, signer: other } : x)), code: "signer" },
  { name: "a fill twice", apply: (t, i) => [...t, t[i]!], code: "duplicate" },
  {
    name: "another item kind to sign",
    apply: (t) => [...t, { kind: "pay_authorization", signer: payKey.address, typed_data: {} }],
    code: "unexpected_item",
  },
  {
    name: "permit to another spender",
    apply: (t) =>
      retype(t, 0, (d) => {
        d.message.spender = other
      }),
    code: "mismatch",
    field: "spender",
  },
  {
    name: "permit for more than Σ amountIn",
    apply: (t) =>
      retype(t, 0, (d) => {
        d.message.value = (BigInt(d.message.value) + 1n).toString()
      }),
    code: "mismatch",
    field: "value",
  },
  {
    name: "permit of another token",
    apply: (t) =>
      retype(t, 0, (d) => {
        d.domain.verifyingContract = other
      }),
    code: "mismatch",
    field: "domain.verifyingContract",
  },
  {
    name: "permit on another chain",
    apply: (t) =>
      retype(t, 0, (d) => {
        d.domain.chainId = 1
      }),
    code: "mismatch",
    field: "domain.chainId",
  },
  {
    name: "permit of another owner",
    apply: (t) =>
      retype(t, 0, (d) => {
        d.message.owner = other
      }),
    code: "mismatch",
    field: "owner",
  },
  {
    name: "permit ending before payBy",
    apply: (t) =>
      retype(t, 0, (d) => {
        d.message.deadline = (NOW + 1n).toString()
      }),
    code: "timing",
    field: "deadline",
  },
  {
    name: "permit outliving the client's payBy bound",
    apply: (t) =>
      retype(t, 0, (d) => {
        d.message.deadline = (NOW + 121n).toString()
      }),
    code: "timing",
    field: "deadline",
  },
  { name: "no permit", apply: (t) => t.slice(1), code: "count" },
  { name: "two permits", apply: (t) => [t[0]!, ...t], code: "count" },
]

describe("checkTakeProposal: a lying API gets nothing signed", () => {
  it("an honest proposal passes; the client signs its own rebuild, whose digests are the claimed ones", () =>
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 8 }), (parts) => {
        const { intent, fills, toSign } = honest(parts)
        const result = checkTakeProposal(intent, config, toSign, NOW)
        expect(result.ok ? [] : result.problems).toEqual([])
        if (!result.ok) return
        expect(result.take.fills.map((f) => f.fill)).toEqual(fills)
        for (const [i, f] of result.take.fills.entries()) {
          expect(hashTypedData(f.typedData)).toBe(toSign[i + 1]!.digest)
          expect(f.digest).toBe(fillDigest(fills[i]!))
        }
        expect(result.take.permit.message.value).toBe(intent.amountIn)
      }),
    ))

  it.each(lies.map((l) => [l.name, l] as const))("%s", (_, lie) =>
    fc.assert(
      fc.property(fc.integer({ min: 2, max: 8 }), fc.nat(), (parts, pick) => {
        const { intent, toSign } = honest(parts)
        const lied = lie.apply(toSign, 1 + (pick % parts))
        const result = checkTakeProposal(intent, config, lied, NOW)
        expect(result.ok).toBe(false)
        if (!result.ok) expect(has(result.problems, lie.code, lie.field), JSON.stringify(result.problems)).toBe(true)
      }),
      { numRuns: 20 },
    ),
  )

  it("swapped digests between two fills", () => {
    const { intent, toSign } = honest(3)
    const lied = toSign.map((x, j) =>
      j === 1 ? { ...x, digest: toSign[2]!.digest } : j === 2 ? { ...x, digest: toSign[1]!.digest } : x,
    )
    const result = checkTakeProposal(intent, config, lied, NOW)
    expect(!result.ok && result.problems.filter((p) => p.code === "digest").map((p) => p.item)).toEqual([1, 2])
  })

  it("the permit's nonce: exactly the payer's, when the client read it; unchecked otherwise", () => {
    const { intent, toSign } = honest(2)
    const ahead = retype(toSign, 0, (d) => {
      d.message.nonce = "1"
    })
    expect(checkTakeProposal({ ...intent, permitNonce: 0n }, config, toSign, NOW).ok).toBe(true)
    const refused = checkTakeProposal({ ...intent, permitNonce: 0n }, config, ahead, NOW)
    expect(!refused.ok && has(refused.problems, "mismatch", "nonce"), JSON.stringify(refused)).toBe(true)
    // Without a read (no taker-chain endpoint given) a wrong nonce only makes the permit, so the take, fail.
    expect(checkTakeProposal(intent, config, ahead, NOW).ok).toBe(true)
  })

  it("more fills than max_parts, and a chain the configuration does not review", () => {
    const { toSign } = honest(4)
    const few = checkTakeProposal(intentOf({ maxParts: 3 }), config, toSign, NOW)
    expect(!few.ok && has(few.problems, "count")).toBe(true)
    const unknown = checkTakeProposal(intentOf({ makerChainId: 10 }), config, toSign, NOW)
    expect(!unknown.ok && has(unknown.problems, "config")).toBe(true)
  })
})

// ------------------------------------------------------------------ a fake chain endpoint, answering by block

type LockRecord = {
  owner: Address
  orderId: Hex
  sequence: bigint
  expiry: bigint
  state: LockState
  dex: number
  toMargin: boolean
  recipient: Address
  payKey: Address
  hashlock: Hex
  amountOut: bigint
}
type PaymentRecord = {
  payer: Address
  expiry: bigint
  state: PaymentState
  payee: Address
  hashlock: Hex
  amountIn: bigint
}

const LOCK_STATES: ReadonlyArray<LockState> = ["None", "Locked", "Claimed", "Refunded", "Cancelled"]
const PAYMENT_STATES: ReadonlyArray<PaymentState> = ["None", "Held", "Claimed", "Refunded"]

/**
 * A chain at block `latest` whose `finalized` block is `finalized`; each record appears at block `at` on escrow
 * `escrow`. Every RPC call is logged.
 */
const fakeChain = (p: {
  chainId: number
  latest: bigint
  finalized: bigint
  finalizedTime?: bigint
  locks?: ReadonlyArray<{ escrow: Address; digest: Hex; at: bigint; lock: LockRecord }>
  payments?: ReadonlyArray<{ escrow: Address; digest: Hex; at: bigint; payment: PaymentRecord }>
}) => {
  const calls: Array<{ method: string; params: ReadonlyArray<unknown> }> = []
  const blockAt = (tag: unknown) =>
    tag === "finalized" ? p.finalized : tag === "latest" ? p.latest : BigInt(tag as string)
  const request = async ({ method, params }: { method: string; params?: ReadonlyArray<unknown> }) => {
    calls.push({ method, params: params ?? [] })
    if (method === "eth_chainId") return toHex(p.chainId)
    if (method === "eth_getBlockByNumber") {
      const n = blockAt(params![0])
      return {
        number: toHex(n),
        hash: keccak256(toHex(n)),
        parentHash: keccak256(toHex(n - 1n)),
        timestamp: toHex(n === p.finalized && p.finalizedTime !== undefined ? p.finalizedTime : NOW),
        transactions: [],
        logsBloom: `0x${"00".repeat(256)}`,
        gasLimit: "0x0",
        gasUsed: "0x0",
        baseFeePerGas: "0x0",
        difficulty: "0x0",
        miner: addr(0),
        nonce: "0x0000000000000000",
        size: "0x0",
        uncles: [],
      }
    }
    if (method === "eth_call") {
      const [call, tag] = params as [{ to: Address; data: Hex }, string]
      const n = blockAt(tag)
      const { functionName, args } = decodeFunctionData({ abi: escrowV2ReadAbi, data: call.data })
      const digest = (args as [Hex])[0]
      if (functionName === "getLock") {
        const hit = p.locks?.find((l) => l.escrow === getAddress(call.to) && l.digest === digest && l.at <= n)
        const l = hit?.lock ?? emptyLock
        return encodeFunctionResult({
          abi: escrowV2ReadAbi,
          functionName,
          result: { ...l, state: LOCK_STATES.indexOf(l.state) },
        })
      }
      const hit = p.payments?.find((x) => x.escrow === getAddress(call.to) && x.digest === digest && x.at <= n)
      const x = hit?.payment ?? emptyPayment
      return encodeFunctionResult({
        abi: escrowV2ReadAbi,
        functionName: "getPayment",
        result: { ...x, state: PAYMENT_STATES.indexOf(x.state) },
      })
    }
    throw new Error(`unexpected ${method}`)
  }
  return { client: createPublicClient({ transport: custom({ request }) }), calls }
}

const zero = addr(0)
const emptyLock: LockRecord = {
  owner: zero,
  orderId: `0x${"00".repeat(32)}`,
  sequence: 0n,
  expiry: 0n,
  state: "None",
  dex: 0,
  toMargin: false,
  recipient: zero,
  payKey: zero,
  hashlock: `0x${"00".repeat(32)}`,
  amountOut: 0n,
}
const emptyPayment: PaymentRecord = {
  payer: zero,
  expiry: 0n,
  state: "None",
  payee: zero,
  hashlock: `0x${"00".repeat(32)}`,
  amountIn: 0n,
}
const lockOf = (f: FillV2): LockRecord => ({ ...lockFieldsOf(f), state: "Locked" })

const checked = (parts: number): CheckedTake => {
  const { intent, toSign } = honest(parts)
  const r = checkTakeProposal(intent, config, toSign, NOW)
  if (!r.ok) throw new Error(JSON.stringify(r.problems))
  return r.take
}
const makerEscrow = config.chains[MAKER_CHAIN]!.escrow
const takerEscrow = config.chains[TAKER_CHAIN]!.escrow

describe("checkLocksFinal and signPayTake: the pay key signs only over final, matching locks", () => {
  const finalLocks = (take: CheckedTake, at = 8n, change: (f: FillV2, l: LockRecord) => LockRecord = (_, l) => l) =>
    take.fills.map((f) => ({ escrow: makerEscrow, digest: f.digest, at, lock: change(f.fill, lockOf(f.fill)) }))

  it("every lock final and right: one PayTake over the digests in order, by the pay key, in the taker domain", async () => {
    const take = checked(3)
    const chain = fakeChain({ chainId: MAKER_CHAIN, latest: 10n, finalized: 8n, locks: finalLocks(take) })
    const result = await checkLocksFinal(chain.client, take)
    expect(result.ok ? [] : result.problems).toEqual([])
    if (!result.ok) return
    // Its reads: the finalized block once, then every getLock at that block's number, on the reviewed escrow.
    expect(chain.calls.filter((c) => c.method === "eth_getBlockByNumber").map((c) => c.params[0])).toEqual([
      "finalized",
    ])
    const reads = chain.calls.filter((c) => c.method === "eth_call")
    expect(reads.length).toBe(3)
    for (const r of reads) {
      expect(r.params[1]).toBe("0x8")
      expect(getAddress((r.params[0] as { to: Address }).to)).toBe(makerEscrow)
    }
    const auth = await signPayTake(payKey, result.locks)
    const digests = take.fills.map((f) => f.digest)
    expect(auth.typedData.message.fills).toEqual(digests)
    expect(hashTypedData(auth.typedData)).toBe(payTakeDigest(TAKER_CHAIN, takerEscrow, digests))
    expect(await recoverTypedDataAddress({ ...auth.typedData, signature: auth.signature })).toBe(payKey.address)
  })

  it("a lock that exists only at latest is missing: nothing to sign", async () => {
    const take = checked(2)
    const locks = [...finalLocks(take).slice(0, 1), ...finalLocks(take, 9n).slice(1)]
    const result = await checkLocksFinal(
      fakeChain({ chainId: MAKER_CHAIN, latest: 10n, finalized: 8n, locks }).client,
      take,
    )
    expect(result.ok).toBe(false)
    expect(!result.ok && result.problems).toEqual([expect.objectContaining({ code: "missing", fill: 1 })])
  })

  it("a lock on another escrow (same digest) does not count", async () => {
    const take = checked(1)
    const locks = finalLocks(take).map((l) => ({ ...l, escrow: other }))
    const result = await checkLocksFinal(
      fakeChain({ chainId: MAKER_CHAIN, latest: 10n, finalized: 8n, locks }).client,
      take,
    )
    expect(!result.ok && result.problems.map((p) => p.code)).toEqual(["missing"])
  })

  const wrongLocks: ReadonlyArray<readonly [string, (f: FillV2, l: LockRecord) => LockRecord, string]> = [
    ["another owner's order with the same id", (_, l) => ({ ...l, owner: other }), "owner"],
    ["another order of the same owner", (_, l) => ({ ...l, orderId: keccak256(toHex("x")) }), "orderId"],
    ["another sequence", (_, l) => ({ ...l, sequence: l.sequence + 1n }), "sequence"],
    ["less locked", (_, l) => ({ ...l, amountOut: l.amountOut - 1n }), "amountOut"],
    ["another recipient", (_, l) => ({ ...l, recipient: other }), "recipient"],
    ["another pay key", (_, l) => ({ ...l, payKey: other }), "payKey"],
    ["another hashlock", (_, l) => ({ ...l, hashlock: keccak256(toHex("h")) }), "hashlock"],
    ["an earlier expiry", (_, l) => ({ ...l, expiry: l.expiry - 1n }), "expiry"],
    ["another dex", (_, l) => ({ ...l, dex: 7 }), "dex"],
    ["already claimed", (_, l) => ({ ...l, state: "Claimed" }), "state"],
    ["cancelled", (_, l) => ({ ...l, state: "Cancelled" }), "state"],
  ]
  it.each(wrongLocks)("a final lock with %s is refused", async (_, change, field) => {
    const take = checked(2)
    const locks = finalLocks(take).map((l, i) => (i === 1 ? { ...l, lock: change(take.fills[1]!.fill, l.lock) } : l))
    const result = await checkLocksFinal(
      fakeChain({ chainId: MAKER_CHAIN, latest: 10n, finalized: 8n, locks }).client,
      take,
    )
    expect(!result.ok && result.problems.map((p) => [p.fill, p.field])).toEqual([[1, field]])
  })

  it("an endpoint of another chain is refused before any lock is read", async () => {
    const take = checked(1)
    const chain = fakeChain({ chainId: 1, latest: 10n, finalized: 8n, locks: finalLocks(take) })
    const result = await checkLocksFinal(chain.client, take)
    expect(!result.ok && result.problems.map((p) => p.code)).toEqual(["chain"])
    expect(chain.calls.some((c) => c.method === "eth_call")).toBe(false)
  })

  it("no shortcut: a hand-made take or FinalLocks is refused, and so is another pay key", async () => {
    const take = checked(1)
    const chain = fakeChain({ chainId: MAKER_CHAIN, latest: 10n, finalized: 8n, locks: finalLocks(take) })
    await expect(checkLocksFinal(chain.client, { ...take })).rejects.toThrow(TypeError)
    const result = await checkLocksFinal(chain.client, take)
    if (!result.ok) throw new Error("expected final locks")
    const forged: FinalLocks = { ...result.locks }
    await expect(signPayTake(payKey, forged)).rejects.toThrow(TypeError)
    await expect(signPayTake(privateKeyToAccount(keccak256(toHex("other key"))), result.locks)).rejects.toThrow(
      TypeError,
    )
  })
})

describe("decideCancelFill and signCancelFill: only before authorising, or after payBy with no payment, at finalized", () => {
  const take = checked(1)
  const { fill, digest } = take.fills[0]!
  const payment = (state: PaymentState): PaymentRecord => ({
    payer: fill.payer,
    expiry: fill.takerExpiry,
    state,
    payee: fill.payee,
    hashlock: fill.hashlock,
    amountIn: fill.amountIn,
  })

  it("before authorising: allowed without reading the chain; the signature is the pay key's CancelFill (maker domain)", async () => {
    const chain = fakeChain({ chainId: TAKER_CHAIN, latest: 10n, finalized: 8n })
    const decision = await decideCancelFill(chain.client, take, 0, false)
    expect(decision).toMatchObject({ allowed: true, reason: "not_authorised" })
    expect(chain.calls).toEqual([])
    if (!decision.allowed) return
    const signature = await signCancelFill(payKey, decision)
    const hash = cancelFillDigest(MAKER_CHAIN, makerEscrow, digest)
    expect(await recoverAddress({ hash, signature })).toBe(payKey.address)
  })

  it("after authorising: refused while the finalized block is not past payBy", async () => {
    const chain = fakeChain({ chainId: TAKER_CHAIN, latest: 10n, finalized: 8n, finalizedTime: fill.payBy })
    expect(await decideCancelFill(chain.client, take, 0, true)).toMatchObject({
      allowed: false,
      reason: "pay_by_not_final",
    })
  })

  it("after payBy at finalized: allowed with no payment; refused with one (even one final only later)", async () => {
    const late = { chainId: TAKER_CHAIN, latest: 10n, finalized: 8n, finalizedTime: fill.payBy + 1n }
    expect(await decideCancelFill(fakeChain(late).client, take, 0, true)).toMatchObject({
      allowed: true,
      reason: "unpaid_after_pay_by",
    })
    for (const state of ["Held", "Claimed", "Refunded"] as const) {
      const paid = fakeChain({ ...late, payments: [{ escrow: takerEscrow, digest, at: 7n, payment: payment(state) }] })
      expect(await decideCancelFill(paid.client, take, 0, true)).toMatchObject({
        allowed: false,
        reason: "payment_exists",
      })
    }
    const wrongChain = fakeChain({ ...late, chainId: MAKER_CHAIN })
    expect(await decideCancelFill(wrongChain.client, take, 0, true)).toMatchObject({ allowed: false, reason: "chain" })
  })

  it("a hand-made allowed decision is refused", async () => {
    await expect(signCancelFill(payKey, { allowed: true, reason: "not_authorised", fill, digest })).rejects.toThrow(
      TypeError,
    )
  })
})

// ------------------------------------------------------------------ browser-safe imports

describe("src/Client imports only src/Domain and viem (no Node, no server services)", () => {
  it("transitively", () => {
    const root = path.resolve(new URL("../..", import.meta.url).pathname)
    const seen = new Set<string>()
    const bad: Array<string> = []
    const visit = (file: string) => {
      if (seen.has(file)) return
      seen.add(file)
      const text = readFileSync(file, "utf8")
      for (const m of text.matchAll(/^(?:import|export)[^;]*?from\s+"([^"]+)"/gms)) {
        const spec = m[1]!
        if (spec.startsWith(".")) {
          const target = path.resolve(path.dirname(file), spec)
          const rel = path.relative(root, target)
          if (!rel.startsWith("src/Client/") && !rel.startsWith("src/Domain/"))
            bad.push(`${path.relative(root, file)} → ${spec}`)
          else visit(target)
        } else if (spec !== "viem" && !spec.startsWith("viem/")) bad.push(`${path.relative(root, file)} → ${spec}`)
      }
    }
    for (const f of ["TakerChecks.ts", "TakerLocks.ts", "TakerCancel.ts", "MakerReveal.ts", "EscrowReadsV2.ts"]) {
      visit(path.join(root, "src/Client", f))
    }
    expect(seen.size).toBeGreaterThan(5)
    expect(bad).toEqual([])
  })
})
