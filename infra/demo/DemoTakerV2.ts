// The demo's taker on settlement v2, through the client's own typed flow (src/Client/TakerFlow.ts): a fresh pay key
// given on the transfer's take route (PUT /v1/transfers/{id}/take/pay-key: the transfer body cannot carry it), every
// to_sign item checked against the taker's intent and the escrows it reviewed (read from the devnet's own config
// file, never from the API), the wallet signing only what passed, then — once each lock is final on the taker's OWN
// endpoint of the maker chain — the pay key's PayTake. The API is a proposer here, never a trust root.
import { createPublicClient, getAddress, http } from "viem"
import type { PrivateKeyAccount } from "viem/accounts"
import type { TakerConfig } from "../../src/Client/TakerChecks.ts"
import {
  authorizePayment,
  startTake,
  type TakeAnswer,
  type TakeHandle,
  type TakerApi,
  TakerApiError,
} from "../../src/Client/TakerFlow.ts"
import { PERPS_DEX } from "../../src/Domain/EscrowTypedDataV2.ts"
import { type Api, DemoStepFailed } from "./DemoApi.ts"
import type { DemoVenue } from "./DemoDevnet.ts"
import { step } from "./DemoLog.ts"

export interface TransferTakeV2 {
  readonly a: Api
  readonly token: string
  readonly taker: PrivateKeyAccount
  readonly transfer: { readonly id: string; readonly client_take_id: string }
  readonly from: DemoVenue
  readonly to: DemoVenue
  readonly amountIn: bigint
  readonly minOut: bigint
  readonly maxParts: number
  /** The reviewed escrows' CLAIM_WINDOW and PAY_BY_MAX (seconds). */
  readonly claimWindowSeconds: number
  readonly payByMaxSeconds: number
  /** Waits until the transfer shows its take (a withdrawal first when the wallet lacked amount_in). */
  readonly waitForTake: () => Promise<string>
}

const escrowV2Of = (v: DemoVenue) => {
  if (v.escrow_v2 === undefined) throw new DemoStepFailed(`venue ${v.id} has no v2 escrow in the devnet config`)
  return getAddress(v.escrow_v2.address)
}

/** The take routes for a transfer's take: "create" = give the pay key, then read the take once it exists. */
const transferTakerApi = (t: TransferTakeV2): TakerApi => ({
  createTake: async (body) => {
    await t.a.run("give the pay key", t.token, (c) =>
      c.transfers.payKey({ path: { id: t.transfer.id }, payload: { pay_key: body.pay_key } as never }),
    )
    step(`  pay key ${String(body.pay_key)} given (a fresh key; its private key stays in this client)`)
    const takeId = await t.waitForTake()
    return (await t.a.run("read take", t.token, (c) => c.takes.get({ path: { id: takeId } }))) as unknown as TakeAnswer
  },
  // The typed client's error, so TakerFlow sees the envelope's `retryable` (a 409 while the service's index is
  // behind the taker's own endpoint is "not yet").
  postSignatures: async (takeId, body) => {
    const r = await t.a.attempt(t.token, (c) => c.takes.sign({ path: { id: takeId }, payload: body as never }))
    if (r.ok) return r.value as unknown as TakeAnswer
    const e = r.error
    if (e._tag === "ApiUnreachable") throw new TakerApiError(0, "", `submit signatures: ${e.reason}`, true)
    throw new TakerApiError(e.status, e.code, `submit signatures: ${e.message}`, e.retryable)
  },
})

/** Starts the transfer's take: pay key given, the proposal checked, the wallet signs what passed, submitted. */
export const startTransferTakeV2 = async (t: TransferTakeV2) => {
  const api = transferTakerApi(t)
  const config: TakerConfig = {
    chains: {
      [t.from.chain_id]: { escrow: escrowV2Of(t.from), token: getAddress(t.from.token) },
      [t.to.chain_id]: { escrow: escrowV2Of(t.to), token: getAddress(t.to.token) },
    },
    minClaimWindowSeconds: BigInt(t.claimWindowSeconds),
  }
  const wallet = {
    signTypedData: (async (typed: { primaryType: string }) => {
      const signature = await t.taker.signTypedData(typed as never)
      step(`  signed ${typed.primaryType === "Permit" ? "permit" : "margin_move (a v2 Fill, checked first)"}`)
      return signature
    }) as PrivateKeyAccount["signTypedData"],
  }
  const started = await startTake(
    api,
    config,
    wallet,
    {
      clientTakeId: t.transfer.client_take_id,
      from: t.from.id,
      to: t.to.id,
      intent: {
        takerChainId: t.from.chain_id,
        makerChainId: t.to.chain_id,
        payer: getAddress(t.taker.address),
        recipient: getAddress(t.taker.address),
        amountIn: t.amountIn,
        minOut: t.minOut,
        maxParts: t.maxParts,
        dex: PERPS_DEX,
        toMargin: true,
      },
    },
    {
      now: () => BigInt(Math.floor(Date.now() / 1000)),
      payByMaxSeconds: BigInt(t.payByMaxSeconds),
      // The taker's own endpoint of its chain: the permit must use the payer's current nonce, read there.
      takerChain: createPublicClient({ transport: http(t.from.rpc_urls[0]) }),
    },
  )
  if (!started.ok) {
    const problems = started.problems.map((p) => `${p.code} ${p.field}: ${p.message}`).join("; ")
    throw new DemoStepFailed(`the take's proposal failed the client's checks (nothing signed): ${problems}`)
  }
  return { api, handle: started.handle }
}

/**
 * One authorisation attempt: reads every lock at `finalized` on the taker's own endpoint of the maker chain; true
 * once the pay key's PayTake is submitted, false while the locks are not all final yet.
 */
export const authorizeWhenFinal = (to: DemoVenue) => {
  const own = createPublicClient({ transport: http(to.rpc_urls[0]) })
  return async (api: TakerApi, handle: TakeHandle): Promise<boolean> => {
    const r = await authorizePayment(api, own, handle)
    if (r.ok) return true
    if (r.retry) return false
    const problems = r.problems.map((p) => `${p.code}: ${p.message}`).join("; ")
    throw new DemoStepFailed(`a lock read on the taker's own endpoint is wrong (no PayTake signed): ${problems}`)
  }
}
