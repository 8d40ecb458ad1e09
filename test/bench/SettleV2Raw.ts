import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { encodeFunctionData, type Hex } from "viem"
import { generatePrivateKey, type PrivateKeyAccount, privateKeyToAccount } from "viem/accounts"
import { mockUSDCAbi } from "../../src/Chain/artifacts/index.ts"
import {
  claimPaymentV2Call,
  claimV2Call,
  lockV2Call,
  payTakeCall,
  permitArg,
} from "../../src/Chain/SettlementCallsV2.ts"
import { payTakeTypedData } from "../../src/Domain/EscrowTypedDataV2.ts"
import { sendCalls, type TestChain } from "../support/ChainDevnet.ts"
import { M, T, type V2Stack } from "../support/SettleV2Stack.ts"
import { makerOrderV2, signedTakeV2 } from "../support/TakesV2.ts"
import type { Watcher } from "./SettleV2Watch.ts"

/**
 * The raw path of the settle bench: the v2 protocol in the service's safe order by funded keys with viem. Every take
 * has its own keys (order owner, operator, payer, payee: fresh, given gas by the devnet), so any number run at once
 * without sharing a nonce; each key sends its own transactions one after another.
 *
 *   rawOrder:  the order (funded on the maker escrow, operator = the take's own key) and the payer's tokens; its set
 *              is made inactive at once so the service never routes a take to it.
 *   rawSign:   the signed take (Fills, permit), just before the run: payBy is 120 s after the chain's clock.
 *   runRaw:    lock → final → PayTake signed, payTake → final → claimPayment (reveal) mined → claim (the secret is
 *              public once the reveal is mined; nothing waits for the reveal's finality).
 */
const ETH = 10n ** 18n
const fresh = () => privateKeyToAccount(generatePrivateKey())
const mint = (c: TestChain, who: PrivateKeyAccount, amount: bigint) =>
  sendCalls(c, who, [
    { to: c.token, data: encodeFunctionData({ abi: mockUSDCAbi, functionName: "mint", args: [who.address, amount] }) },
  ])

export const rawOrder = (s: V2Stack, amount: bigint) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const [owner, operator, payee, payer] = [fresh(), fresh(), fresh(), fresh()]
    const signerKey = generatePrivateKey()
    yield* Effect.promise(() =>
      Promise.all([
        s.hl.test.setBalance({ address: owner.address, value: ETH }),
        s.hl.test.setBalance({ address: operator.address, value: ETH }),
        s.aster.test.setBalance({ address: operator.address, value: ETH }),
        s.aster.test.setBalance({ address: payee.address, value: ETH }),
        s.aster.test.setBalance({ address: payer.address, value: ETH }),
      ]),
    )
    // MockUSDC mints to anyone: each key mints its own, so no shared minter nonce.
    yield* Effect.promise(() => Promise.all([mint(s.hl, owner, amount), mint(s.aster, payer, amount)]))
    const order = yield* makerOrderV2(s.hl, s.aster, {
      owner,
      signerKey,
      signer: privateKeyToAccount(signerKey),
      relayer: owner,
      operator: operator.address,
      payee: payee.address,
      amount,
      makerVenue: M,
      takerVenue: T,
    })
    const [q] = yield* sql<{ signature: Hex }>`select signature from quote_sets where order_id = ${order.orderId}`
    yield* sql`update quote_sets set active = false where order_id = ${order.orderId}`
    return { order, quoteSig: q!.signature, operator, payee, payer, amount }
  })
export type RawOrder = Effect.Effect.Success<ReturnType<typeof rawOrder>>

/**
 * The take's signed rows, extracted and removed from the database in one transaction: the service never sees them
 * (committed, a signed take woke its settlement, whose lock the escrow refused: NotOperator, the raw order's operator
 * being the take's own key).
 */
export const rawSign = (s: V2Stack, o: RawOrder) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) => sql.withTransaction(signAndExtract(s, o)))

const signAndExtract = (s: V2Stack, o: RawOrder) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const payKey = fresh()
    const take = yield* signedTakeV2(s.hl, s.aster, {
      payer: o.payer,
      payKey: payKey.address,
      recipient: fresh().address,
      parts: [{ order: o.order, amountIn: o.amount, amountOut: o.amount, index: 0 }],
      makerVenue: M,
      takerVenue: T,
    })
    const [t] = yield* sql<{ permit_signature: Hex }>`select permit_signature from takes where id = ${take.takeId}`
    const [f] = yield* sql<{ signature: Hex }>`select signature from fills where take_id = ${take.takeId}`
    yield* sql`delete from fills where take_id = ${take.takeId}`
    yield* sql`delete from takes where id = ${take.takeId}`
    const fill = take.fills[0]!
    return {
      fill: fill.fill,
      digest: fill.digest,
      fillSig: f!.signature,
      permit: permitArg(take.totalIn, take.takerExpiry, t!.permit_signature),
      quoteSet: o.order.set,
      quoteSig: o.quoteSig,
      proof: o.order.hashlocks.proof(0),
      secret: o.order.hashlocks.secrets[0]!,
      payKey,
      operator: o.operator,
      payee: o.payee,
    }
  })
export type RawTake = Effect.Effect.Success<ReturnType<typeof rawSign>>

/** Sends one transaction from `from` and answers its block; its receipt is asked once per new block seen. */
const send = async (w: Watcher, c: TestChain, from: PrivateKeyAccount, to: Hex, data: Hex) => {
  const raw = await from.signTransaction({
    chainId: c.chain.id,
    type: "eip1559",
    to,
    data,
    gas: 2_000_000n,
    nonce: await c.pub.getTransactionCount({ address: from.address, blockTag: "pending" }),
    maxFeePerGas: 100_000_000_000n,
    maxPriorityFeePerGas: 1_000_000_000n,
  })
  const hash = await c.pub.request({ method: "eth_sendRawTransaction", params: [raw] })
  for (const deadline = performance.now() + 120_000; performance.now() < deadline; ) {
    const next = w.nextHead(c)
    const receipt = await c.pub.getTransactionReceipt({ hash }).catch(() => null)
    if (receipt !== null) {
      if (receipt.status !== "success") throw new Error(`raw ${hash} reverted`)
      return receipt.blockNumber
    }
    await next
  }
  throw new Error(`raw ${hash} not mined in 120 s`)
}

/** One raw take; answers when its lock was sent (the raw "first signature") and its Claimed block. */
export const runRaw = async (s: V2Stack, w: Watcher, r: RawTake) => {
  const start = performance.now()
  const { hl, aster } = s
  await w.finalOn(
    hl,
    await send(w, hl, r.operator, hl.escrowV2!, lockV2Call(r.fill, r.fillSig, r.quoteSet, 0, r.quoteSig, r.proof)),
  )
  const auth = await r.payKey.signTypedData(payTakeTypedData(aster.chain.id, aster.escrowV2!, [r.digest]))
  await w.finalOn(
    aster,
    await send(w, aster, r.operator, aster.escrowV2!, payTakeCall([r.fill], [r.fillSig], auth, r.permit)),
  )
  await send(w, aster, r.payee, aster.escrowV2!, claimPaymentV2Call(r.digest, r.secret))
  await send(w, hl, r.operator, hl.escrowV2!, claimV2Call(r.digest, r.secret))
  return { digest: r.digest, start, end: performance.now() }
}
