/**
 * The taker's whole settlement-v2 flow (DESIGN §10.1–2), on top of the checks in TakerChecks, TakerLocks and
 * TakerCancel. The API is a PROPOSER, never a trust root:
 *
 * 1. `startTake`: a fresh pay key (its private key never leaves this client) → POST /v1/takes naming its address →
 *    every `to_sign` item checked against the intent and the reviewed escrows (checkTakeProposal) → the payer's
 *    wallet signs the typed data REBUILT from the checked values (one Fill per fill, the permit), nothing else →
 *    POST the signatures. Any problem: nothing is signed and nothing is sent.
 * 2. `authorizePayment`: the locks are read at `finalized` on the client's OWN maker-chain endpoint
 *    (checkLocksFinal); only then does the pay key sign PayTake over the checked digests (signPayTake, not the API's
 *    item) and the client POSTs it. A lock missing at finalized (e.g. only at `latest`) or different: no signature.
 * 3. `cancelFills`: the pay key's CancelFill, only where decideCancelFill allows (before any PayTake was signed, or
 *    after payBy passed at a finalized taker-chain block with no payment).
 *
 * The caller keeps the TakeHandle (its pay key and whether a PayTake was signed) durably: a client that lost it
 * must assume it signed. Browser-safe: src/Domain, src/Client, viem only; the HTTP transport is injected.
 */
import type { Hex, LocalAccount } from "viem"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { type ChainReader, readPermitNonce } from "./EscrowReadsV2.ts"
import { decideCancelFill, signCancelFill } from "./TakerCancel.ts"
import {
  type CheckedTake,
  checkTakeProposal,
  type ProposedSignItem,
  type TakerConfig,
  type TakerIntent,
  type TakerProblem,
} from "./TakerChecks.ts"
import { checkLocksFinal, type LockProblem, signPayTake } from "./TakerLocks.ts"

/** What the API answers on the take routes (only what the flow reads). */
export interface TakeAnswer {
  readonly take: { readonly id: string; readonly state: string }
  readonly to_sign: ReadonlyArray<ProposedSignItem>
}

/** The take routes, as the client reaches them (HTTP in production: `httpTakerApi`). Errors throw. */
export interface TakerApi {
  readonly createTake: (body: Readonly<Record<string, unknown>>) => Promise<TakeAnswer>
  readonly postSignatures: (takeId: string, body: Readonly<Record<string, unknown>>) => Promise<TakeAnswer>
}

/** The payer's wallet: it is asked to sign typed data only (eth_signTypedData_v4). */
export interface PayerWallet {
  readonly signTypedData: LocalAccount["signTypedData"]
}

export interface TakeRequest {
  readonly clientTakeId: string
  /** Venue ids, as the API names them; their chains are `intent.takerChainId` / `intent.makerChainId`. */
  readonly from: string
  readonly to: string
  readonly intent: Omit<TakerIntent, "payKey" | "maxPayBy">
}

export interface FlowOptions {
  /** The client's clock, Unix seconds. */
  readonly now: () => bigint
  /** The reviewed PAY_BY_MAX of the escrows: a Fill's payBy may be at most this far from now. */
  readonly payByMaxSeconds: bigint
  /** A pay key to use instead of a fresh one (tests; a restarted client's kept key). */
  readonly payKey?: LocalAccount
  /**
   * The client's own taker-chain endpoint: when given, the permit must use the payer's current nonce read there
   * (TakerIntent.permitNonce); without it the nonce is not checked (a wrong one only makes the take fail).
   */
  readonly takerChain?: ChainReader
}

/** A started take: keep it (durably) until the take ends. */
export interface TakeHandle {
  readonly takeId: string
  readonly take: CheckedTake
  readonly payKey: LocalAccount
  /** Set before a PayTake signature leaves this client; once true, cancels follow TakerCancel's stricter rule. */
  payTakeSigned: boolean
  /**
   * Set before a CancelFill given without a PayTake leaves this client: from then on it never signs PayTake (one
   * payTake pays every fill of the take, the cancelled one too, while its lock is released).
   */
  cancelSigned: boolean
}

export type StartResult =
  | { readonly ok: true; readonly handle: TakeHandle }
  | { readonly ok: false; readonly takeId: string; readonly problems: ReadonlyArray<TakerProblem> }

/** Create → check → wallet signs the checked Fills and permit → submit. */
export const startTake = async (
  api: TakerApi,
  config: TakerConfig,
  wallet: PayerWallet,
  request: TakeRequest,
  options: FlowOptions,
): Promise<StartResult> => {
  const payKey = options.payKey ?? privateKeyToAccount(generatePrivateKey())
  const i = request.intent
  const created = await api.createTake({
    client_take_id: request.clientTakeId,
    from: request.from,
    to: request.to,
    amount_in: i.amountIn.toString(),
    min_out: i.minOut.toString(),
    payer: i.payer,
    recipient: i.recipient,
    max_parts: i.maxParts,
    pay_key: payKey.address,
  })
  const now = options.now()
  const token = config.chains[i.takerChainId]?.token
  const permitNonce =
    options.takerChain === undefined || token === undefined
      ? undefined
      : await readPermitNonce(options.takerChain, i.takerChainId, token, i.payer)
  const intent: TakerIntent = {
    ...i,
    payKey: payKey.address,
    maxPayBy: now + options.payByMaxSeconds,
    ...(permitNonce === undefined ? {} : { permitNonce }),
  }
  const checked = checkTakeProposal(intent, config, created.to_sign, now)
  const takeId = created.take.id
  if (!checked.ok) return { ok: false, takeId, problems: checked.problems }
  // The signatures are submitted by fill id: each checked Fill needs its own.
  const ids = checked.take.fills.map((f) => f.fillId)
  if (ids.some((id) => id === null) || new Set(ids).size !== ids.length) {
    const problem: TakerProblem = {
      code: "malformed",
      item: null,
      field: "fill_id",
      message: "fill ids missing or shared",
    }
    return { ok: false, takeId, problems: [problem] }
  }
  const fills: Array<{ fill_id: string; signature: Hex }> = []
  for (const f of checked.take.fills) {
    fills.push({ fill_id: f.fillId!, signature: await wallet.signTypedData(f.typedData) })
  }
  const permit = await wallet.signTypedData(checked.take.permit)
  await api.postSignatures(takeId, { permit, fills })
  return { ok: true, handle: { takeId, take: checked.take, payKey, payTakeSigned: false, cancelSigned: false } }
}

export type AuthorizeResult =
  | { readonly ok: true }
  | { readonly ok: false; readonly retry: boolean; readonly problems: ReadonlyArray<LockProblem> }

/**
 * Reads every lock at `finalized` on `makerChain` (the client's own endpoint); when all are final and right, the pay
 * key signs PayTake and the client submits it. `retry`: nothing is wrong yet, the locks are just not all final.
 * Never after this client cancelled a fill of the take without a PayTake (`cancelled`, not retryable).
 */
export const authorizePayment = async (
  api: TakerApi,
  makerChain: ChainReader,
  handle: TakeHandle,
): Promise<AuthorizeResult> => {
  const cancelled: AuthorizeResult = {
    ok: false,
    retry: false,
    problems: [
      {
        code: "cancelled",
        fill: null,
        field: null,
        message: "the pay key cancelled a fill of this take: it is never paid",
      },
    ],
  }
  if (handle.cancelSigned) return cancelled
  const locks = await checkLocksFinal(makerChain, handle.take)
  if (!locks.ok) {
    return { ok: false, retry: locks.problems.every((p) => p.code === "missing"), problems: locks.problems }
  }
  // Checked again after the reads, and the flag set in the same synchronous step: a cancelFills running meanwhile
  // either cancelled first (then no PayTake) or sees payTakeSigned (then gives no early cancel).
  if (handle.cancelSigned) return cancelled
  handle.payTakeSigned = true
  const auth = await signPayTake(handle.payKey, locks.locks)
  try {
    await api.postSignatures(handle.takeId, { pay_authorization: auth.signature })
  } catch (e) {
    // The service's own index can be behind the client's endpoint: it holds the request up to 2 s for the index,
    // then answers 409, retryable: "not yet", not a refusal.
    if (e instanceof TakerApiError && e.retryable) return { ok: false, retry: true, problems: [] }
    throw e
  }
  return { ok: true }
}

export interface CancelResult {
  readonly cancelled: ReadonlyArray<string>
  readonly refused: ReadonlyArray<{ readonly fillId: string; readonly reason: string }>
}

/**
 * The pay key's cancels of the take's fills (all, or `indexes`), each only where decideCancelFill allows on the
 * client's own taker-chain endpoint; the allowed ones are submitted together.
 */
export const cancelFills = async (
  api: TakerApi,
  takerChain: ChainReader,
  handle: TakeHandle,
  indexes: ReadonlyArray<number> = handle.take.fills.map((_, i) => i),
): Promise<CancelResult> => {
  const cancels: Array<{ fill_id: string; signature: Hex }> = []
  const refused: Array<{ fillId: string; reason: string }> = []
  for (const i of indexes) {
    const fillId = handle.take.fills[i]!.fillId!
    const decision = await decideCancelFill(takerChain, handle.take, i, handle.payTakeSigned)
    if (!decision.allowed) {
      refused.push({ fillId, reason: decision.reason })
      continue
    }
    if (decision.reason === "not_authorised") {
      // An authorizePayment that ran meanwhile signed PayTake: no early cancel any more (checked and marked in one
      // synchronous step, as authorizePayment does).
      if (handle.payTakeSigned) {
        refused.push({ fillId, reason: "payment_authorised" })
        continue
      }
      handle.cancelSigned = true
    }
    cancels.push({ fill_id: fillId, signature: await signCancelFill(handle.payKey, decision) })
  }
  if (cancels.length > 0) await api.postSignatures(handle.takeId, { cancels })
  return { cancelled: cancels.map((c) => c.fill_id), refused }
}

/** JSON with bigints as decimal strings (the API's wire form). */
const body = (v: unknown) => JSON.stringify(v, (_, x) => (typeof x === "bigint" ? x.toString() : x))

/** The take routes over HTTP with a session token; a non-2xx answer throws with the envelope's code. */
export const httpTakerApi = (baseUrl: string, token: string, fetchImpl: typeof fetch = fetch): TakerApi => {
  const call = async (path: string, payload: unknown): Promise<TakeAnswer> => {
    const res = await fetchImpl(`${baseUrl}${path}`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
      body: body(payload),
    })
    const json = (await res.json()) as TakeAnswer & { error?: { code: string; message: string; retryable?: boolean } }
    if (!res.ok) {
      throw new TakerApiError(res.status, json.error?.code ?? "", json.error?.message ?? "", json.error?.retryable)
    }
    return json
  }
  return {
    createTake: (b) => call("/v1/takes", b),
    postSignatures: (id, b) => call(`/v1/takes/${encodeURIComponent(id)}/signatures`, b),
  }
}

export class TakerApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    /** The envelope's `retryable`: the same request may succeed later. */
    readonly retryable = false,
  ) {
    super(`${status} ${code}: ${message}`)
  }
}
