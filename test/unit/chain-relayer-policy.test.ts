import { Schema } from "effect"
import fc from "fast-check"
import {
  type Address,
  encodeErrorResult,
  encodeFunctionData,
  HttpRequestError,
  InternalRpcError,
  LimitExceededRpcError,
  MethodNotFoundRpcError,
  RpcRequestError,
  TimeoutError,
  zeroHash,
} from "viem"
import { describe, expect, it } from "vitest"
import { mockUSDCAbi, settlementEscrowAbi, settlementEscrowV2Abi } from "../../src/Chain/artifacts/index.ts"
import { finalizedByConfirmations } from "../../src/Chain/Finality.ts"
import {
  allowedFunction,
  compileAllowlist,
  decidePending,
  decodeRevertData,
  initialFees,
  type PendingFacts,
  replacementFees,
} from "../../src/Chain/RelayerPolicy.ts"
import { classifyRpcError } from "../../src/Chain/RpcError.ts"
import { VenueConfig } from "../../src/Config.ts"
import { DevelopmentConfig } from "../../src/DevelopmentConfig.ts"

const TOKEN = "0x00000000000000000000000000000000000070ce" as Address
const venue = Schema.decodeUnknownSync(VenueConfig)({
  ...DevelopmentConfig.venues[0],
  relayer: { allow: [{ contract: TOKEN, functions: ["mint(address,uint256)"] }] },
})
const escrow = venue.escrow as Address

describe("relayer policy", () => {
  it("allowlist: the escrow's state-changing functions and the configured extras, nothing else", () => {
    const allow = compileAllowlist(venue)
    const claim = encodeFunctionData({ abi: settlementEscrowAbi, functionName: "claim", args: [zeroHash, zeroHash] })
    expect(allowedFunction(allow, escrow, claim)).toBe("claim(bytes32,bytes32)")
    expect(allowedFunction(allow, escrow.toUpperCase().replace("0X", "0x") as Address, claim)).toBe(
      "claim(bytes32,bytes32)",
    )
    const view = encodeFunctionData({ abi: settlementEscrowAbi, functionName: "totalLiabilities" })
    expect(allowedFunction(allow, escrow, view)).toBeUndefined()
    const mint = encodeFunctionData({ abi: mockUSDCAbi, functionName: "mint", args: [TOKEN, 1n] })
    expect(allowedFunction(allow, TOKEN, mint)).toBe("mint(address,uint256)")
    expect(allowedFunction(allow, escrow, mint)).toBeUndefined()
    const approve = encodeFunctionData({ abi: mockUSDCAbi, functionName: "approve", args: [TOKEN, 1n] })
    expect(allowedFunction(allow, TOKEN, approve)).toBeUndefined()
    expect(allowedFunction(allow, TOKEN, "0x")).toBeUndefined()
    const fns = [...(allow.get(escrow.toLowerCase())?.values() ?? [])].map((s) => s.slice(0, s.indexOf("(")))
    expect(fns.sort()).toEqual(
      [
        "cancelLock",
        "claim",
        "claimPayment",
        "closeWithSig",
        "fund",
        "invalidateNonce",
        "lock",
        "operatorClose",
        "pay",
        "refund",
        "refundPayment",
      ].sort(),
    )
  })

  it("allowlist: a configured v2 escrow's state-changing functions, at its own address only", () => {
    const V2 = "0x00000000000000000000000000000000000000e2" as Address
    const allow = compileAllowlist(
      Schema.decodeUnknownSync(VenueConfig)({
        ...DevelopmentConfig.venues[0],
        escrow_v2: { address: V2, deployment_block: 0 },
      }),
    )
    const operatorClose = encodeFunctionData({
      abi: settlementEscrowV2Abi,
      functionName: "operatorClose",
      args: [TOKEN, zeroHash, 0, false],
    })
    expect(allowedFunction(allow, V2, operatorClose)).toBe("operatorClose(address,bytes32,uint32,bool)")
    expect(allowedFunction(allow, escrow, operatorClose)).toBeUndefined()
    const view = encodeFunctionData({ abi: settlementEscrowV2Abi, functionName: "balanceOf", args: [TOKEN] })
    expect(allowedFunction(allow, V2, view)).toBeUndefined()
    expect(allowedFunction(compileAllowlist(venue), V2, operatorClose)).toBeUndefined()
  })

  it("first fees: twice the base fee plus the tip, capped", () => {
    expect(initialFees(10n, 2n, undefined)).toEqual({ maxFeePerGas: 22n, maxPriorityFeePerGas: 2n })
    expect(initialFees(10n, 2n, 15n)).toEqual({ maxFeePerGas: 15n, maxPriorityFeePerGas: 2n })
    expect(initialFees(10n, 20n, 15n)).toEqual({ maxFeePerGas: 15n, maxPriorityFeePerGas: 15n })
  })

  it("property: a replacement raises both fee caps by at least 12.5% + 1 wei, follows a higher market, respects the cap", () => {
    const wei = fc.bigInt({ min: 1n, max: 10n ** 15n })
    fc.assert(
      fc.property(wei, wei, wei, wei, fc.option(wei, { nil: undefined }), (fee, tip, marketFee, marketTip, cap) => {
        const previous = { maxFeePerGas: fee + tip, maxPriorityFeePerGas: tip }
        const market = { maxFeePerGas: marketFee + marketTip, maxPriorityFeePerGas: marketTip }
        const next = replacementFees(previous, market, 12.5, cap)
        const minFee = (previous.maxFeePerGas * 1125n) / 1000n + 1n
        if (cap !== undefined && minFee > cap) {
          expect(next).toBeUndefined()
          return
        }
        expect(next).toBeDefined()
        expect(next!.maxFeePerGas).toBeGreaterThanOrEqual(minFee)
        expect(next!.maxFeePerGas * 1000n).toBeGreaterThanOrEqual(previous.maxFeePerGas * 1125n)
        expect(next!.maxPriorityFeePerGas).toBeLessThanOrEqual(next!.maxFeePerGas)
        if (next!.maxPriorityFeePerGas < next!.maxFeePerGas) {
          expect(next!.maxPriorityFeePerGas * 1000n).toBeGreaterThanOrEqual(previous.maxPriorityFeePerGas * 1125n)
        }
        if (cap === undefined) expect(next!.maxFeePerGas).toBeGreaterThanOrEqual(market.maxFeePerGas)
        else expect(next!.maxFeePerGas).toBeLessThanOrEqual(cap)
      }),
      { numRuns: 500, seed: 7 },
    )
    expect(
      replacementFees(
        { maxFeePerGas: 1000n, maxPriorityFeePerGas: 100n },
        { maxFeePerGas: 1n, maxPriorityFeePerGas: 1n },
        20,
        undefined,
      ),
    ).toEqual({
      maxFeePerGas: 1201n,
      maxPriorityFeePerGas: 121n,
    })
  })

  it("in-flight classification by query results", () => {
    const base: PendingFacts = {
      nonce: 5n,
      latestCount: 5n,
      finalizedCount: 5n,
      receiptFound: false,
      lastAttemptKnown: true,
      broadcasts: 1,
      head: 100n,
      sentBlock: 100n,
      headOfLineSince: 100n,
      bumpAfterBlocks: 3,
    }
    expect(decidePending(base)).toBe("idle")
    expect(decidePending({ ...base, receiptFound: true, latestCount: 6n })).toBe("included")
    // Consumed, none of our hashes has a receipt: only at finality is it someone else's.
    expect(decidePending({ ...base, latestCount: 6n })).toBe("wait")
    expect(decidePending({ ...base, latestCount: 6n, finalizedCount: 6n })).toBe("replaced")
    expect(decidePending({ ...base, lastAttemptKnown: false })).toBe("rebroadcast")
    expect(decidePending({ ...base, broadcasts: 0 })).toBe("rebroadcast")
    expect(decidePending({ ...base, head: 103n })).toBe("bump")
    expect(decidePending({ ...base, head: 103n, lastAttemptKnown: false })).toBe("bump")
    // Signed long ago but the lowest open nonce only since block 102: the blocks it spent behind a lower
    // nonce do not count (a batch's own blocks on an automining chain, or a stuck predecessor just mined).
    expect(decidePending({ ...base, head: 104n, headOfLineSince: 102n })).toBe("idle")
    expect(decidePending({ ...base, head: 105n, headOfLineSince: 102n })).toBe("bump")
    // A replacement signed later restarts the count.
    expect(decidePending({ ...base, head: 104n, headOfLineSince: 90n, sentBlock: 102n })).toBe("idle")
    // Not the lowest open nonce: it waits on its predecessor, not on its fees.
    expect(decidePending({ ...base, nonce: 6n, head: 110n })).toBe("idle")
    expect(decidePending({ ...base, nonce: 6n, head: 110n, broadcasts: 0 })).toBe("rebroadcast")
  })

  it("revert data decodes to the contract's error, Error(string) or Panic", () => {
    const custom = encodeErrorResult({ abi: settlementEscrowAbi, errorName: "NotLocked", args: [zeroHash] })
    expect(decodeRevertData(custom)).toBe(`NotLocked(${zeroHash})`)
    const insufficient = encodeErrorResult({
      abi: settlementEscrowAbi,
      errorName: "InsufficientAvailable",
      args: [1n, 2n],
    })
    expect(decodeRevertData(insufficient)).toBe("InsufficientAvailable(1, 2)")
    const text = encodeErrorResult({
      abi: [{ type: "error", name: "Error", inputs: [{ type: "string", name: "message" }] }],
      errorName: "Error",
      args: ["nope"],
    })
    expect(decodeRevertData(text)).toBe("nope")
    expect(decodeRevertData("0x")).toBe("reverted without reason")
    expect(decodeRevertData(undefined)).toBe("reverted without reason")
    expect(decodeRevertData("0xdeadbeef")).toContain("0xdeadbeef")
  })
})

describe("RPC error classification", () => {
  const http = (status: number) =>
    new HttpRequestError({ url: "http://node", status, body: { method: "eth_blockNumber" }, details: "x" })
  it("retries what may succeed later and stops on what cannot", () => {
    expect(classifyRpcError("eth_blockNumber", http(503)).retryable).toBe(true)
    expect(classifyRpcError("eth_blockNumber", http(429)).retryable).toBe(true)
    expect(classifyRpcError("eth_blockNumber", http(404)).retryable).toBe(false)
    expect(classifyRpcError("eth_blockNumber", new TimeoutError({ body: {}, url: "http://node" })).retryable).toBe(true)
    const rpcError = (code: number) =>
      new RpcRequestError({ body: {}, url: "http://node", error: { code, message: "m" } })
    expect(classifyRpcError("eth_call", new MethodNotFoundRpcError(rpcError(-32601))).retryable).toBe(false)
    expect(classifyRpcError("eth_call", rpcError(3)).retryable).toBe(false)
    expect(classifyRpcError("eth_call", new InternalRpcError(rpcError(-32603))).retryable).toBe(true)
    expect(classifyRpcError("eth_call", new Error("socket hang up")).retryable).toBe(true)
    const limit = classifyRpcError("eth_getLogs", new LimitExceededRpcError(rpcError(-32005)))
    expect([limit.retryable, limit.rangeTooLarge]).toEqual([true, true])
    const wording = classifyRpcError(
      "eth_getLogs",
      new RpcRequestError({
        body: {},
        url: "u",
        error: { code: -32000, message: "query returned more than 10000 results" },
      }),
    )
    expect(wording.rangeTooLarge).toBe(true)
    expect(classifyRpcError("eth_call", new InternalRpcError(rpcError(-32005))).rangeTooLarge).toBe(false)
  })
})

describe("finalized head by confirmations (no finalized tag)", () => {
  it("is `confirmations` below the latest, never below genesis on a young chain", () => {
    expect(finalizedByConfirmations(100n, 2)).toBe(98n)
    expect(finalizedByConfirmations(2n, 2)).toBe(0n)
    // A chain younger than its confirmations: a negative block would fail the relayer's nonce read at it.
    expect(finalizedByConfirmations(1n, 12)).toBe(0n)
    expect(finalizedByConfirmations(0n, 0)).toBe(0n)
    fc.assert(
      fc.property(fc.bigInt({ min: 0n, max: 10n ** 12n }), fc.integer({ min: 0, max: 1_000 }), (latest, c) => {
        const f = finalizedByConfirmations(latest, c)
        expect(f >= 0n && f <= latest && (latest < BigInt(c) || f === latest - BigInt(c))).toBe(true)
      }),
    )
  })
})
