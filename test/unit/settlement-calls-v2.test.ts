import { decodeFunctionData, getAddress, type Hex, keccak256, toHex } from "viem"
import { describe, expect, it } from "vitest"
import { settlementEscrowV2Abi } from "../../src/Chain/artifacts/index.ts"
import {
  cancelLockV2Call,
  claimPaymentV2Call,
  claimV2Call,
  fillV2FromWire,
  lockV2Call,
  payTakeCall,
  permitArg,
  quoteSetV2FromRow,
  refundPaymentV2Call,
  refundV2Call,
} from "../../src/Chain/SettlementCallsV2.ts"
import { type FillV2, fillV2TypedData } from "../../src/Domain/EscrowTypedDataV2.ts"
import { toWireTypedData } from "../../src/Domain/WireTypedData.ts"

const a = (n: number) => getAddress(`0x${n.toString(16).padStart(40, "0")}`)
const h = (label: string) => keccak256(toHex(label))
const fill: FillV2 = {
  fillId: h("fill"),
  owner: a(1),
  orderId: h("order"),
  sequence: 3n,
  makerChainId: 999n,
  makerEscrow: a(2),
  takerChainId: 42161n,
  takerEscrow: a(3),
  payer: a(4),
  payee: a(5),
  amountIn: 1_000_000n,
  recipient: a(6),
  amountOut: 999_000n,
  dex: 0,
  toMargin: true,
  hashlock: h("hashlock"),
  hashlockIndex: 7,
  payKey: a(8),
  payBy: 1_800_000_120n,
  makerExpiry: 1_800_001_620n,
  takerExpiry: 1_800_001_020n,
}
const sig = `0x${"11".repeat(65)}` as Hex
const decode = (data: Hex) => decodeFunctionData({ abi: settlementEscrowV2Abi, data })

describe("settlement v2 calls: calldata from stored records", () => {
  it("a stored wire Fill reads back exactly; a Fill with a field too many is refused", () => {
    const wire = (toWireTypedData(fillV2TypedData(fill)) as { message: Record<string, unknown> }).message
    expect(fillV2FromWire(wire)).toEqual(fill)
    expect(() => fillV2FromWire({ ...wire, extra: "1" })).toThrow(/unknown Fill fields/)
  })

  it("lock: the Fill, the quote set rebuilt from its row (escrow per quote, hashlock root and count), the proof", () => {
    const set = quoteSetV2FromRow({
      owner: fill.owner.toLowerCase(),
      order_id: fill.orderId,
      sequence: "3",
      identity_generation: "2",
      quote_size: "5000000",
      issued_at: "1800000000",
      valid_until: new Date(1_800_000_300_000),
      hashlock_root: h("root"),
      hashlock_count: 8,
      quotes: [
        {
          chain_id: 42161,
          token: a(9).toLowerCase(),
          escrow: a(3).toLowerCase(),
          recipient: a(5).toLowerCase(),
          supply: "1",
          receive: "1",
          min_fill: "1",
        },
      ],
    })
    const proof = [h("p0"), h("p1"), h("p2")]
    const { functionName, args } = decode(lockV2Call(fill, sig, set, 0, sig, proof))
    expect(functionName).toBe("lock")
    expect(args[0]).toEqual(fill)
    expect(args[2]).toMatchObject({
      owner: fill.owner,
      sequence: 3n,
      generation: 2n,
      issuedAt: 1_800_000_000n,
      validUntil: 1_800_000_300n,
      hashlockRoot: h("root"),
      hashlockCount: 8,
      quotes: [{ chainId: 42161n, escrow: a(3), recipient: a(5), receive_: 1n }],
    })
    expect(args[5]).toEqual(proof)
  })

  it("payTake: every fill of the take, in order, with their signatures, the pay key's signature and the permit", () => {
    const second = { ...fill, fillId: h("fill 2"), amountIn: 5n }
    const permit = permitArg(1_000_005n, 1_800_001_020n, `0x${"22".repeat(64)}01` as Hex)
    const { functionName, args } = decode(payTakeCall([fill, second], [sig, sig], sig, permit))
    expect(functionName).toBe("payTake")
    expect(args[0]).toEqual([fill, second])
    expect(args[2]).toBe(sig)
    expect(args[3]).toMatchObject({ value: 1_000_005n, v: 28 })
  })

  it("claim, claimPayment, cancelLock, refund, refundPayment take the Fill digest", () => {
    const d = h("digest")
    const s = h("secret")
    expect(decode(claimV2Call(d, s))).toMatchObject({ functionName: "claim", args: [d, s] })
    expect(decode(claimPaymentV2Call(d, s))).toMatchObject({ functionName: "claimPayment", args: [d, s] })
    expect(decode(cancelLockV2Call(d, sig))).toMatchObject({ functionName: "cancelLock", args: [d, sig] })
    expect(decode(refundV2Call(d))).toMatchObject({ functionName: "refund", args: [d] })
    expect(decode(refundPaymentV2Call(d))).toMatchObject({ functionName: "refundPayment", args: [d] })
  })
})
